"""``clnn fuzz``: the reliability suites at a larger count (clnn/suites/fuzz_*.py)."""

from __future__ import annotations

from clnn.cli.devices import DEVICE_HELP, device_spec
from clnn.cli.errors import CliError, existing_dir, non_negative_int, output_file, positive_int


def _cmd(args) -> int:
    """``clnn fuzz KIND``: the reliability suites at a larger count (clnn/suites/fuzz_<kind>.py,
    each with ``main(args) -> int``)."""
    import importlib

    if args.device is not None:
        from clnn.cli.devices import require_device, require_opencl

        if args.kind != "models":  # tflite, graphs: the reference device always runs
            require_opencl(args.device, f"fuzz {args.kind}")
        require_device(args.device)
    name = f"clnn.suites.fuzz_{args.kind}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:
            raise
        raise CliError(f"the {args.kind} suite is not in this checkout "
                       f"(clnn/suites/fuzz_{args.kind}.py is missing)") from None
    from clnn.cli.devices import device_environment

    with device_environment(args.device):
        return module.main(args)


def register(sub) -> None:
    """Add ``clnn fuzz`` to the subcommands."""
    z = sub.add_parser("fuzz", help="reliability suites at a larger count: malformed TFLite "
                                     "files, model mutations, random graphs")
    z.add_argument("kind", choices=["tflite", "models", "graphs"],
                   help="tflite: byte flips, truncations and synthetic headers of real models; "
                        "models: VTS-style model and request mutations; graphs: random graphs "
                        "on OpenCL against the reference")
    z.add_argument("--count", type=positive_int, default=1000, help="cases to try")
    z.add_argument("--seed", type=non_negative_int, default=0,
                   help="first seed (cases are reproducible)")
    z.add_argument("--corpus", default=None, type=existing_dir,
                   help="models: corpus directory (default: ../shared/cts/public)")
    z.add_argument("--json", default=None, metavar="REPORT", type=output_file,
                   help="write a JSON report")
    z.add_argument("--device", default=None, type=device_spec,
                   help="the OpenCL device the suite runs beside the reference device "
                        f"(models: reference alone with --device reference): {DEVICE_HELP}")
    z.set_defaults(func=_cmd)
