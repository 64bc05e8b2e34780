"""How ``clnn`` commands fail: one line on stderr, ``clnn <command>: <what is wrong>``, exit
status 2 for a usage error and 1 for a failure; the traceback only with ``CLNN_DEBUG=1``.

Commands raise :class:`CliError` (or let the project's own errors through); ``main()`` in
clnn/cli/main.py turns every exception into that line with :func:`report`. The argparse types
here check numbers and paths while the command line is parsed, before any work starts.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import traceback


class CliError(Exception):
    """A failure a command reports in one line; ``exit_status`` 1 (a usage error: 2)."""

    exit_status = 1


class UsageError(CliError):
    exit_status = 2


def debug() -> bool:
    return os.environ.get("CLNN_DEBUG", "") not in ("", "0")


def one_line(text: str) -> str:
    """A multi-line message (an OpenCL build log, a nested error) joined into one line."""
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def describe(e: BaseException) -> tuple[str, int]:
    """(message, exit status) for an exception that ends a command."""
    from hal.errors import BuilderError, HalError

    if isinstance(e, CliError):
        return str(e), e.exit_status
    if isinstance(e, HalError):
        return e.reason, 1
    if isinstance(e, OSError) and e.strerror:
        names = [n for n in (e.filename, e.filename2) if n is not None]
        return f"{e.strerror}: {' -> '.join(map(str, names))}" if names else e.strerror, 1
    if isinstance(e, MemoryError):
        return "out of memory", 1
    if isinstance(e, BuilderError):
        return str(e), 1
    module = type(e).__module__ or ""
    if module.startswith("pyopencl"):
        return f"OpenCL error: {e}", 1
    if module.startswith("clnn.tflite"):  # TfliteImportError and its kin name the tensor / op
        return str(e), 1
    from clnn.importing import ModelImportError

    if isinstance(e, ModelImportError):  # any importer's error (ONNX too) names node and op
        return str(e), 1
    # anything else is a bug of clnn, not of the input: say so, and how to see where
    hint = "" if debug() else " (an internal error; CLNN_DEBUG=1 shows the traceback)"
    return f"{type(e).__name__}: {e}{hint}", 1


def report(prog: str, e: BaseException) -> int:
    """Print ``e`` as one line for the command ``prog`` (with the traceback first when
    CLNN_DEBUG is set) and return the exit status."""
    if debug():
        traceback.print_exception(type(e), e, e.__traceback__)
    message, status = describe(e)
    print(f"{prog}: {one_line(message) or type(e).__name__}", file=sys.stderr)
    return status


class OneLineParser(argparse.ArgumentParser):
    """argparse with usage errors as ``clnn <command>: <what is wrong>`` in one line."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")


# ----------------------------------------------------------------------------- argparse types

def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def existing_dir(text: str) -> str:
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"directory {text} does not exist")
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is not a directory")
    return text


def existing_file(text: str) -> str:
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"file {text} does not exist")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    return text


def nearest_existing(path: str) -> str:
    path = os.path.abspath(path)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path


def output_file(text: str) -> str:
    """A file the command will write: checked before the work so that a long run does not end
    in a crash on a path it could not write."""
    if not text:
        raise argparse.ArgumentTypeError("the output path is empty")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    parent = os.path.dirname(os.path.abspath(text))
    if not os.path.exists(parent):
        raise argparse.ArgumentTypeError(f"cannot write {text}: directory {parent} does not "
                                         "exist")
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError(f"cannot write {text}: {nearest_existing(parent)} is "
                                         "not a directory")
    if not os.access(parent, os.W_OK) or (os.path.exists(text) and not os.access(text, os.W_OK)):
        raise argparse.ArgumentTypeError(f"cannot write {text}: permission denied")
    return text


def unwritable_dir(path: str) -> str | None:
    """Why the directory ``path`` cannot be created (if missing) and written into; None when
    it can."""
    if os.path.exists(path):
        if not os.path.isdir(path):
            return f"{path} is not a directory"
        if not os.access(path, os.W_OK):
            return f"cannot write into {path}: permission denied"
        return None
    base = nearest_existing(path)
    if not os.path.isdir(base):
        return f"cannot create {path}: {base} is not a directory"
    if not os.access(base, os.W_OK):
        return f"cannot create {path}: {base} is not writable"
    return None


def output_dir(text: str) -> str:
    """A directory the command will create (if missing) and write into."""
    reason = unwritable_dir(text)
    if reason:
        raise argparse.ArgumentTypeError(reason)
    return text


def require_writable_dir(path, what: str) -> None:
    """Before the work: a CliError when ``what`` (a cache the command fills) cannot be
    written."""
    reason = unwritable_dir(str(path))
    if reason:
        raise CliError(f"{what}: {reason} (set CLNN_CACHE_DIR to a writable directory)")


# ----------------------------------------------------------------------------- inputs

def import_tflite(path: str):
    """``clnn.tflite.load(path)``, with every way a file can be bad reported as a CliError
    that names it."""
    from clnn.tflite import TfliteImportError, load

    if not os.path.exists(path):  # a usage error, as argparse's existing_file says it
        raise UsageError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory, not a .tflite file")
    try:
        return load(path)
    except (OSError, TfliteImportError) as e:
        raise CliError(f"cannot import {path}: {describe(e)[0]}") from e
    except (struct.error, ValueError, IndexError, KeyError, TypeError, OverflowError,
            MemoryError) as e:
        # the flatbuffer reader follows the offsets of a damaged file wherever they point
        raise CliError(f"cannot import {path}: the file is damaged or not a TFLite model "
                       f"({_kind(e)}: {one_line(e)})") from e


def _kind(e: BaseException) -> str:
    return "struct.error" if isinstance(e, struct.error) else type(e).__name__
