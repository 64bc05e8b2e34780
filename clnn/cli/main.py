"""The ``clnn`` command line.

Every failure is one line on stderr, ``clnn <command>: <what is wrong>``, with exit status 2
for a usage error and 1 for a failure (clnn/cli/errors.py); ``CLNN_DEBUG=1`` adds the
traceback.
"""

from __future__ import annotations

import os
import sys

from clnn.cli.errors import (
    OneLineParser,
    report,
)

#: the subcommands in --help order, each module's ``register(sub)`` adding its own
COMMANDS = ("cts_cmd", "demo_cmd", "bench_cmd", "tune_cmd", "run_cmd", "models_cmd", "cache_cmd",
            "devices", "support_cmd", "plan_cmd", "capabilities_cmd", "fuzz_cmd")


def build_parser() -> OneLineParser:
    import importlib

    from clnn.cli.version import VersionAction

    p = OneLineParser(prog="clnn", description=__doc__)
    p.add_argument("--version", action=VersionAction)
    sub = p.add_subparsers(dest="command", required=True,
                           help="what to do (clnn COMMAND --help says more)")
    for name in COMMANDS:
        importlib.import_module(f"clnn.cli.{name}").register(sub)
    return p


def main(argv=None) -> int:
    """Run one command; every way it can fail ends here as one line and an exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help (0), or a usage error OneLineParser has reported (2)
        return e.code if isinstance(e.code, int) else 2
    prog = f"clnn {args.command}"
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of stdout went away (| head): nothing left to say
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter closes it
        except OSError:
            pass
        return 1
    except SystemExit as e:  # raise SystemExit("message") from deep inside a command
        if isinstance(e.code, str):
            print(f"{prog}: {e.code.removeprefix(prog + ': ')}", file=sys.stderr)
            return 1
        return e.code or 0
    except Exception as e:
        return report(prog, e)
