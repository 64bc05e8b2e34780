"""``clnn demo``: a small MobileNet-style model on each device (clnn/cli/demo.py)."""

from __future__ import annotations

from clnn.cli.devices import DEVICE_HELP, device_spec


def _cmd(args) -> int:
    from clnn.cli.demo import run_demo

    return run_demo(args.device)


def register(sub) -> None:
    """Add ``clnn demo`` to the subcommands."""
    d = sub.add_parser("demo", help="run a small MobileNet-style model and compare devices")
    d.add_argument("--device", default=None, type=device_spec,
                   help=f"{DEVICE_HELP} (default: OpenCL, else the reference device)")
    d.set_defaults(func=_cmd)
