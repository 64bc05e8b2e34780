"""``clnn cts``: the NNAPI conformance corpus on a device (clnn/suites/cts.py)."""

from __future__ import annotations

import json
import os
import sys

from clnn.cli.devices import DEVICE_HELP, device_list, device_spec
from clnn.cli.errors import CliError, UsageError, existing_dir, output_file, positive_int


def _cmd(args) -> int:
    from clnn.cli.devices import require_device
    from clnn.suites.cts import run_corpus

    require_device(args.device)
    _check_k(args.k)
    options = {}
    if args.no_fallback:
        options["fallback"] = False
    if args.runtime:
        options["runtime"] = device_list(args.runtime)
    summary = run_corpus(args.corpus, args.device, args.k, jobs=args.jobs,
                         device_options=options, mode=args.mode)
    if not summary.results:
        where = f"no test in {args.corpus} matches -k {args.k!r}" if args.k else \
            f"{args.corpus} holds no corpus file (*.json.gz)"
        raise CliError(f"{where}; nothing was run")
    if args.json or args.junit:
        _write_cts_reports(args, summary, options)
    if not args.verbose:  # a corrupt file is never silent, even without -v
        for r in summary.results:
            if r.variant == "file":
                print(f"clnn cts: {r.detail}", file=sys.stderr)
    else:
        for r in summary.results:
            if r.status in ("failed", "error") or (args.verbose > 1 and r.status != "passed"):
                first = r.detail.splitlines()[0] if r.detail else ""
                print(f"{r.status.upper():11} {r.name} [{r.variant}]: {first}")
    print(summary.closing_line())
    return 0 if summary.counts["error"] == 0 and summary.counts["failed"] == 0 else 1


def _check_k(expression) -> None:
    """A bad -k expression is a usage error before any test runs (an empty one, as in pytest
    and as before, selects every test)."""
    from clnn.suites.kexpr import KeywordError, compile_expression

    if expression:
        try:
            compile_expression(expression)
        except KeywordError as e:
            raise UsageError(str(e)) from None


def _write_cts_reports(args, summary, options) -> None:
    from clnn.suites.cts import open_cts_device
    from clnn.suites.cts_report import run_metadata, write_junit

    run = run_metadata(args.corpus, open_cts_device(args.device, options), args.mode)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary.to_json(run), f, indent=1)
    if args.junit:
        write_junit(summary, args.junit, run)


def register(sub) -> None:
    """Add ``clnn cts`` to the subcommands."""
    c = sub.add_parser("cts", help="run the NNAPI conformance corpus on a device")
    c.add_argument("corpus", type=existing_dir, help="directory of *.json.gz corpus files")
    c.add_argument("--device", default="reference", type=device_spec, help=DEVICE_HELP)
    c.add_argument("-k", default=None, metavar="EXPRESSION",
                   help="only tests whose spec or name match: case-insensitive substrings or "
                        "globs joined pytest-style with and / or / not and parentheses")
    c.add_argument("--json", default=None, metavar="REPORT", type=output_file,
                   help="write a JSON report (results, durations, device, mode, corpus, date)")
    c.add_argument("--junit", default=None, metavar="FILE", type=output_file,
                   help="write a JUnit XML report for CI systems (one testsuite per spec)")
    c.add_argument("-j", "--jobs", type=positive_int, default=os.cpu_count() or 1,
                   help="worker processes running tests (default: the number of cores)")
    c.add_argument("--mode", default="sync",
                   choices=["sync", "async", "fenced", "burst", "device-memory"],
                   help="how each request is executed (see clnn/suites/cts_modes.py)")
    c.add_argument("--no-fallback", action="store_true",
                   help="do not run unsupported operations on the reference device")
    c.add_argument("--runtime", nargs="?", const="opencl,reference", default=None,
                   metavar="DEVICES",
                   help="run every test through the NNAPI runtime (clnn.nnapi) over DEVICES, "
                        "names joined by commas (default: opencl,reference), operations placed "
                        "by the devices' capabilities; --device is then not used")
    c.add_argument("-v", "--verbose", action="count", default=0,
                   help="list failures (-vv: also unsupported)")
    c.set_defaults(func=_cmd)
