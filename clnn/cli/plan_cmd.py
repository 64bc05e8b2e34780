"""``clnn plan``: what the OpenCL device will do with a model, pass by pass
(clnn/passes/report.py formats it)."""

from __future__ import annotations

from clnn.cli.devices import DEVICE_HELP, device_spec

PASSES = ("partition", "shapes", "fusion", "select", "tune", "memory")


def _cmd(args) -> int:
    import json

    from clnn.cli.devices import require_device, require_opencl
    from clnn.cli.onnx_run import parse_shapes
    from clnn.cli.support import load_model
    from clnn.devices import open_device
    from clnn.passes.report import format_report, plan_report

    require_opencl(args.device, "plan")
    require_device(args.device)
    _, model = load_model(args.model, shapes=parse_shapes(args.shape))
    report = plan_report(open_device(args.device), model)
    print(json.dumps(report, indent=1) if args.json else format_report(report, args.pass_))
    return 0


def register(sub) -> None:
    """Add ``clnn plan`` to the subcommands."""
    pl = sub.add_parser("plan", help="what the OpenCL device will do with a model: what each "
                        "pass of the prepare produced (partitions, shapes, fused nodes with "
                        "their epilogues, kernels and variants with why, the memory plan)")
    pl.add_argument("model", help="a .tflite or .onnx file, or a model clnn models fetches")
    pl.add_argument("--pass", dest="pass_", default=None, choices=PASSES,
                    help="print only what this pass produced")
    pl.add_argument("--shape", action="append", default=[], metavar="NAME=D1,D2,...",
                    help="ONNX: fix the dimensions of input NAME at load")
    pl.add_argument("--device", default="opencl", type=device_spec,
                    help=f"the OpenCL device: {DEVICE_HELP}")
    pl.add_argument("--json", action="store_true", help="print the whole report as JSON")
    pl.set_defaults(func=_cmd)
