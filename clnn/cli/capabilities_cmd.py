"""``clnn capabilities``: the OpenCL device's measured capabilities (clnn/cli/capabilities.py)."""

from __future__ import annotations

from clnn.cli.devices import DEVICE_HELP, device_list, device_spec
from clnn.cli.errors import UsageError, output_file
from clnn.cli.run_cmd import check_plot


def _cmd(args) -> int:
    from clnn import paths
    from clnn.cli.capabilities import run_capabilities_cli
    from clnn.cli.devices import device_environment, require_device, require_opencl
    from clnn.cli.errors import require_writable_dir
    from clnn.options import cache_root_from_environ

    specs = device_list(args.devices) if args.devices else [args.device]
    for spec in specs:
        require_opencl(spec, "capabilities")
        require_device(spec)
    # the measurement takes seconds and its record is saved at the end: check the place first
    require_writable_dir(paths.cache_dir("capabilities", root=cache_root_from_environ()),
                         "the capabilities cache")
    check_plot(args)
    if len(specs) > 1:
        if args.baseline != "reference" or args.plot:
            raise UsageError("--baseline litert and --plot take one device (--device)")
        return run_capabilities_cli(remeasure=args.remeasure, as_json=args.json,
                                    devices=specs)
    with device_environment(specs[0]):
        return run_capabilities_cli(remeasure=args.remeasure, as_json=args.json,
                                    plot=args.plot, baseline=args.baseline)


def register(sub) -> None:
    """Add ``clnn capabilities`` to the subcommands."""
    k = sub.add_parser("capabilities", help="the OpenCL device's measured capabilities")
    k.add_argument("--remeasure", action="store_true", help="measure again, ignoring the cache")
    k.add_argument("--json", action="store_true", help="print as JSON")
    k.add_argument("--device", default="opencl", type=device_spec,
                   help=f"the OpenCL device: {DEVICE_HELP}")
    k.add_argument("--devices", default=None, metavar="A,B,...",
                   help="several OpenCL devices (--device is then not used): those not cached "
                        "are measured together (interleaved, against the same reference "
                        "samples) and compared")
    k.add_argument("--plot", default=None, metavar="FILE", type=output_file,
                   help="draw exec_time per workload to FILE (.png or .html)")
    k.add_argument("--baseline", choices=("reference", "litert"), default="reference",
                   help="reference (default): the HAL figures against the reference device "
                        "only; litert: also OpenCL against TFLite's runtime (ai-edge-litert) "
                        "on the same workloads, measured now")
    k.set_defaults(func=_cmd)
