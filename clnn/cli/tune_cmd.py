"""``clnn tune``: the kernels of models tuned ahead of time (clnn/cli/tune.py)."""

from __future__ import annotations

from clnn.cli.devices import DEVICE_HELP, device_spec
from clnn.cli.errors import existing_file


def family_names() -> list[str]:
    """The names of the tunable kernel families (those ``--family`` takes)."""
    from clnn import tuning
    from clnn.kernels import (  # noqa: F401  (the modules that declare the families)
        _conv_variants,
        _depthwise_variants,
        _dwpw_variants,
        _gemm_variants,
        _winograd,
    )

    return sorted(tuning.FAMILIES)


def _cmd(args) -> int:
    from clnn.cli.devices import device_environment, require_device, require_opencl
    from clnn.cli.errors import CliError
    from clnn.cli.tune import tune_models

    require_opencl(args.device, "tune")
    unknown = sorted(set(args.family or ()) - set(family_names()))
    if unknown:
        raise CliError(f"--family {', '.join(unknown)}: not a tunable family (the families: "
                       f"{', '.join(family_names())})")
    require_device(args.device)
    with device_environment(args.device):
        return tune_models(args.models, fast=args.fast, retune=args.retune, as_json=args.json,
                          families=args.family)


def register(sub) -> None:
    """Add ``clnn tune`` to the subcommands."""
    t = sub.add_parser("tune", help="tune the kernels of .tflite or .onnx models for the OpenCL "
                       "device ahead of time (the tuning cache)")
    t.add_argument("models", nargs="+", type=existing_file, help=".tflite or .onnx files")
    t.add_argument("--device", default="opencl", type=device_spec,
                   help=f"the OpenCL device: {DEVICE_HELP}")
    t.add_argument("--fast", action="store_true",
                   help="measure the smaller candidate set of CLNN_TUNE=fast, not every one, "
                   "and skip the check of the depthwise -> 1x1 fusions in the model's runs")
    t.add_argument("--retune", action="store_true",
                   help="measure again the layers that already have a tuning-cache entry")
    t.add_argument("--family", action="append", metavar="NAME",
                   help="measure only the layers of this kernel family (repeatable: gemm, conv, "
                   "depthwise, winograd, dwpw); the others keep their cache entry or default")
    t.add_argument("--json", action="store_true", help="print the result as JSON")
    t.set_defaults(func=_cmd)
