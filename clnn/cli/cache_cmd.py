"""``clnn cache info|clear``: what clnn keeps on disk, with counts and sizes, and emptying it.

Kinds, each a folder of clnn's cache directory (clnn/paths.py): ``programs`` (pyopencl's
binary cache of built OpenCL programs), ``imports`` (.tflite files imported before,
clnn.tflite.import_cache), ``compilation`` (the HAL compilation caches of
`clnn run`, `clnn bench models` and ``clnn.load``), ``capabilities`` (measured device
capabilities), ``tuning`` (tuning entries, where a tuner keeps any), ``models`` and
``downloads`` (the MediaPipe models and the wheel they come from). ``pocl``: PoCL's own kernel
cache ($POCL_CACHE_DIR, else ~/.cache/pocl), where PoCL keeps the programs it builds and the
kernels it compiles at their first launch; it is shared with every PoCL user of the account,
so ``clear`` empties it only when named, like the models.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from clnn import paths
from clnn.cli.errors import CliError, UsageError
from clnn.options import cache_root_from_environ

KINDS = ("programs", "imports", "compilation", "capabilities", "tuning", "models", "downloads",
         "pocl")
#: kinds ``clear`` without a KIND empties
DEFAULT_CLEAR = ("programs", "imports", "compilation", "capabilities", "tuning")


def kind_dir(kind: str) -> Path:
    if kind == "pocl":
        return Path(os.environ.get("POCL_CACHE_DIR")
                    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "pocl"))
    return paths.cache_dir(kind, root=cache_root_from_environ())


def usage(directory: Path) -> tuple[int, int]:
    """(files, bytes) under ``directory`` (0, 0 when it does not exist)."""
    files = size = 0
    for root, _, names in os.walk(directory):
        for name in names:
            try:
                size += os.lstat(os.path.join(root, name)).st_size
            except OSError:  # removed while we walk: not there
                continue
            files += 1
    return files, size


def info() -> list[dict]:
    rows = []
    for kind in KINDS:
        d = kind_dir(kind)
        files, size = usage(d)
        rows.append({"kind": kind, "path": str(d), "files": files, "bytes": size})
    return rows


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def clear(kinds) -> list[dict]:
    """Empty the folders of ``kinds`` (the folders stay); what each held."""
    done = []
    for kind in kinds:
        d = kind_dir(kind)
        files, size = usage(d)
        if d.is_dir():
            for entry in d.iterdir():
                try:
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry)
                    else:
                        entry.unlink()
                except OSError as e:
                    raise CliError(f"cannot remove {entry}: {e.strerror or e}") from e
        done.append({"kind": kind, "path": str(d), "files": files, "bytes": size})
    return done


def run_cache_cli(action: str, kinds=(), as_json: bool = False) -> int:
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise UsageError(f"unknown cache kind {unknown[0]!r}; kinds: {', '.join(KINDS)}")
    if action == "info":
        if kinds:
            raise UsageError("cache info lists every kind: give kinds to cache clear only")
        rows = info()
        root = paths.cache_dir(root=cache_root_from_environ())
        if as_json:
            print(json.dumps({"root": str(root), "kinds": rows}, indent=1))
            return 0
        print(f"clnn cache: {root}")
        for r in rows:
            print(f"  {r['kind']:13} {r['files']:6} files {_human(r['bytes']):>10}  {r['path']}")
        return 0
    rows = clear(list(dict.fromkeys(kinds)) or DEFAULT_CLEAR)
    if as_json:
        print(json.dumps({"cleared": rows}, indent=1))
        return 0
    for r in rows:
        print(f"cleared {r['kind']}: {r['files']} files, {_human(r['bytes'])} ({r['path']})")
    if not kinds:
        print("kept: models, downloads, pocl (name them to clear them)")
    return 0


def _cmd(args) -> int:
    return run_cache_cli(args.action, args.kinds, as_json=args.json)


def register(sub) -> None:
    """Add ``clnn cache`` to the subcommands."""
    a = sub.add_parser("cache", help="what clnn keeps on disk (programs, imported models, "
                                      "compilation caches, capabilities, tuning, models) and "
                                      "emptying it")
    a.add_argument("action", choices=["info", "clear"],
                   help="info: files and bytes of each kind; clear: empty the kinds named "
                        "(default: all but models, downloads and pocl)")
    a.add_argument("kinds", nargs="*", metavar="KIND",
                   help="clear: programs, imports, compilation, capabilities, tuning, "
                        "models, downloads or pocl")
    a.add_argument("--json", action="store_true", help="print as JSON")
    a.set_defaults(func=_cmd)
