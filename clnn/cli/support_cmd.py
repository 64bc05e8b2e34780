"""``clnn support``: which operations of a model the OpenCL device runs (clnn/cli/support.py)."""

from __future__ import annotations

import argparse

from clnn.cli.devices import DEVICE_HELP, device_spec
from clnn.cli.errors import UsageError, existing_dir


def _cmd(args) -> int:
    from clnn.cli.devices import require_device, require_opencl
    from clnn.cli.support import run_support_cli
    from clnn.devices import parse_device_spec

    require_opencl(args.device, "support")
    require_device(args.device)
    if args.extensions:
        from clnn.cli.support_extensions import run_extensions_cli

        return run_extensions_cli(parse_device_spec(args.device)[1], as_json=args.json)
    if args.model is None:
        raise UsageError("support needs a model (or --extensions)")
    from clnn.cli.onnx_run import parse_shapes

    return run_support_cli(args.model, corpus=args.corpus,
                           device=parse_device_spec(args.device)[1], as_json=args.json,
                           shapes=parse_shapes(args.shape))


def register(sub) -> None:
    """Add ``clnn support`` to the subcommands."""
    s = sub.add_parser("support", help="which operations of a model the OpenCL device runs, "
                                        "with the reason for each")
    s.add_argument("model", nargs="?",
                   help="a .tflite or .onnx file, a model clnn models fetches "
                   "(light_resnet50), a corpus .json.gz file or a corpus test name")
    s.add_argument("--extensions", action="store_true",
                   help="list the vendor extensions instead: operand types, operations by "
                   "name and which have OpenCL kernels")
    s.add_argument("--shape", action="append", default=[], metavar="NAME=D1,D2,...",
                   help="ONNX: fix the dimensions of input NAME at load")
    s.add_argument("--corpus", default=None, type=existing_dir,
                   help="corpus directory for test names "
                   "(default: $CLNN_CTS_CORPUS, else ../shared/cts/public from a checkout)")
    s.add_argument("--device", default="opencl", type=device_spec,
                   help=f"the OpenCL device: {DEVICE_HELP}")
    # the old name, kept working for scripts that use it (deprecated, so not in --help)
    s.add_argument("--cl-device", dest="device", type=device_spec, help=argparse.SUPPRESS)
    s.add_argument("--json", action="store_true",
                   help="print the operations, whether each is supported and why, as JSON")
    s.set_defaults(func=_cmd)
