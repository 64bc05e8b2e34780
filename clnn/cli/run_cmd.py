"""``clnn run``: import a model and run it on a device (clnn/cli/run.py, clnn/cli/stream_run.py)."""

from __future__ import annotations

from clnn.cli.devices import DEVICE_HELP, device_list, device_spec
from clnn.cli.errors import UsageError, non_negative_int, output_file, positive_int
from clnn.models.onnx import model_file


def _cmd(args) -> int:
    from clnn.cli.devices import require_device
    from clnn.cli.onnx_run import parse_shapes
    from clnn.cli.run import run_model
    from clnn.devices import parse_device_spec
    from clnn.importing.formats import is_onnx
    from clnn.models.onnx import resolve_model

    if args.profile and parse_device_spec(args.device)[0] != "opencl":
        raise UsageError("--profile reads OpenCL profiling events: it needs an OpenCL --device")
    if args.trace and parse_device_spec(args.device)[0] != "opencl":
        raise UsageError("--trace reads OpenCL profiling events: it needs an OpenCL --device")
    check_plot(args)
    require_device(args.device)
    devices = device_list(args.devices) if args.devices else None
    if args.plan and not devices:
        raise UsageError("--plan shows the runtime's placement over several devices: it "
                         "needs --devices")
    if devices and (args.profile or args.trace or args.per_op):
        raise UsageError("--devices runs through the NNAPI runtime: --profile, --trace and "
                         "--per-op read one OpenCL device")
    args.model = resolve_model(args.model)  # a file, or a known model's name (fetched)
    if args.compare == "litert-builtin" and not args.stream:
        raise UsageError("--compare litert-builtin compares the frames of a --stream")
    if args.stream:
        return _cmd_run_stream(args)
    if args.per_op:
        from clnn.suites.divergence import run_per_op

        if not args.compare:
            raise UsageError("--per-op compares every operation: it needs --compare "
                             "reference or --compare litert")
        if args.profile:
            raise UsageError("--per-op makes one debugging run with every tensor kept: "
                             "--profile does not apply to it")
        if args.compare != "reference" and (args.compare == "onnxruntime") != is_onnx(args.model):
            raise UsageError("--per-op compares an ONNX model with onnxruntime and a TFLite "
                             "model with litert (or either with the reference)")
        return run_per_op(args.model, args.device, args.input, args.compare, args.json,
                          plot=args.plot, shapes=parse_shapes(args.shape))
    return run_model(args.model, args.device, args.input, args.iterations, args.compare,
                     args.profile, args.json, warmup=args.warmup, plot=args.plot,
                     trace=args.trace, shapes=parse_shapes(args.shape),
                     use_cache=not args.no_cache, devices=devices, show_plan=args.plan)


def _cmd_run_stream(args) -> int:
    from clnn.cli.stream_run import run_stream

    for flag in ("per_op", "profile", "trace", "plot", "shape"):
        if getattr(args, flag):
            raise UsageError(f"--{flag.replace('_', '-')} does not apply to --stream")
    if args.compare == "onnxruntime":
        raise UsageError("--stream runs TFLite streaming models: compare with litert, "
                         "litert-builtin or reference")
    return run_stream(args.model, args.stream, args.device, args.stream_input, args.seed,
                      args.compare, args.input, args.json, use_cache=not args.no_cache)


def check_plot(args) -> None:
    """--plot FILE (run, bench models, capabilities): its extension picks the format; checked
    before a long run."""
    if args.plot:
        from clnn.bench.plots import check_plot_path

        check_plot_path(args.plot)


def register(sub) -> None:
    """Add ``clnn run`` to the subcommands."""
    r = sub.add_parser("run", help="import a .tflite or .onnx model and run it on a device")
    r.add_argument("model", type=model_file,
                   help="a .tflite or .onnx file, or the name of a model clnn models fetches "
                        "(light_resnet50, face_landmark)")
    r.add_argument("--device", default="reference", type=device_spec, help=DEVICE_HELP)
    r.add_argument("--devices", default=None, metavar="A,B,...",
                   help="run through the NNAPI runtime (clnn.nnapi) over these devices, "
                        "each operation placed on the one with the best measured capabilities "
                        "(--device is then not used)")
    r.add_argument("--plan", action="store_true",
                   help="with --devices: print where each operation runs and the capability "
                        "figures compared")
    r.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input from a .npy file (default: seeded random inputs)")
    r.add_argument("--iterations", type=positive_int, default=10, help="timed runs after a warm-up")
    r.add_argument("--warmup", type=non_negative_int, default=3,
                   help="untimed runs between the first run (reported apart) and the timed "
                   "runs (default: 3)")
    r.add_argument("--compare", default=None,
                   choices=["reference", "litert", "litert-builtin", "onnxruntime"],
                   help="max abs/rel error against the reference device, ai-edge-litert "
                   "(.tflite) or onnxruntime (.onnx); litert and onnxruntime are timed too, "
                   "taking turns with clnn; with --stream, every frame's outputs and state "
                   "against the reference, litert (XNNPACK: outputs only) or litert-builtin "
                   "(its built-in kernels)")
    r.add_argument("--stream", type=positive_int, default=None, metavar="N",
                   help="a streaming model (TFLite resource variables): feed N frames, its "
                   "state kept on the device between them; per-frame outputs and times")
    r.add_argument("--stream-input", default="random", choices=["random", "features"],
                   help="--stream frames: seeded random ones, or a seeded spectrogram-like "
                   "stream (features); --input NAME=FILE.npy takes N frames along axis 0")
    r.add_argument("--seed", type=non_negative_int, default=20240607,
                   help="the seed of the --stream frames")
    r.add_argument("--shape", action="append", default=[], metavar="NAME=D1,D2,...",
                   help="ONNX: fix the dimensions of input NAME at load (an input with "
                        "dimensions left open otherwise runs with 1 in each)")
    r.add_argument("--per-op", action="store_true",
                   help="with --compare: the error of every operation's output, in order, "
                   "and the first operation out of tolerance")
    r.add_argument("--profile", action="store_true",
                   help="per-operation kernel times from OpenCL profiling events")
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.add_argument("--plot", default=None, metavar="FILE", type=output_file,
                   help="draw the latency histogram and (opencl) the kernel time per operation "
                        "to FILE (.png or .html)")
    r.add_argument("--trace", default=None, metavar="FILE.json", type=output_file,
                   help="write one execution's kernels as a Chrome/Perfetto trace (opencl)")
    r.add_argument("--no-cache", action="store_true",
                   help="prepare afresh, without the compilation cache kept under clnn's cache "
                        "directory")
    r.set_defaults(func=_cmd)
