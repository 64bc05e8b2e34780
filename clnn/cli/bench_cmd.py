"""``clnn bench``: the benchmarks of clnn/bench, each against a peer in the same run."""

from __future__ import annotations

from clnn.cli.devices import DEVICE_HELP, device_spec
from clnn.cli.errors import UsageError, output_file, positive_int
from clnn.cli.run_cmd import check_plot


def _cmd(args) -> int:
    from clnn.cli.devices import device_environment, require_device, require_opencl

    if args.what != "models":
        require_opencl(args.device, f"bench {args.what}")
    require_device(args.device)
    if args.plot and args.what != "models":
        raise UsageError("--plot draws the models benchmark: use it with clnn bench models")
    if args.onnx and args.what not in ("models", "quant"):
        raise UsageError("--onnx picks the ONNX models: use it with clnn bench models")
    if args.int8 and (args.what != "models" or args.onnx):
        raise UsageError("--int8 picks the int8 .tflite models: use it with clnn bench models, "
                         "without --onnx")
    if args.formats is not None and args.what != "quant":
        raise UsageError("--formats picks quantization formats: use it with clnn bench quant")
    if (args.devices is not None or args.record is not None or args.modes is not None) \
            and args.what != "quant":
        raise UsageError("--devices, --modes and --record are clnn bench quant's: use them "
                         "with it")
    check_plot(args)
    with device_environment(args.device):
        return _bench(args)


def _bench(args) -> int:
    if args.what == "prepare" and args.models is not None:
        from clnn.bench.bench_first_result import run_first_result_bench

        return run_first_result_bench(args.models, as_json=args.json)
    if args.what == "prepare":
        from clnn.bench.bench_prepare import run_prepare_bench

        return run_prepare_bench(as_json=args.json)
    if args.what == "models" and args.onnx:
        from clnn.bench.bench_onnx import run_onnx_bench

        return run_onnx_bench(args.iterations, args.rounds, as_json=args.json,
                              names=args.models or None, device_name=args.device,
                              plot=args.plot)
    if args.what == "models":
        from clnn.bench.bench_models import run_models_bench

        return run_models_bench(args.iterations, as_json=args.json, names=args.models or None,
                                device_name=args.device, plot=args.plot,
                                use_cache=not args.no_cache, rounds=args.rounds,
                                int8=args.int8)
    if args.what == "quant":
        from clnn.bench.onnx_quant import run_quant_bench

        return run_quant_bench(args.models or None, args.formats or None, as_json=args.json,
                               device_names=args.devices or ("reference", "opencl"),
                               record_to=args.record, modes=args.modes or None)
    if args.what == "peak":
        from clnn.bench.bench_peak import run_peak_bench

        return run_peak_bench(as_json=args.json, remeasure=True)
    from clnn.bench.bench_gemm import run_gemm_bench

    return run_gemm_bench(args.n, args.reps, as_json=args.json, sweep=args.sweep)


def register(sub) -> None:
    """Add ``clnn bench`` to the subcommands."""
    b = sub.add_parser("bench", help="benchmarks measured against a peer in the same run")
    b.add_argument("what", choices=["gemm", "models", "prepare", "peak", "quant"],
                   help="gemm: SGEMM n^3, clnn kernel vs NumPy; models: the MediaPipe models "
                        "on clnn vs ai-edge-litert (2 threads); prepare: the demo model's cold "
                        "prepare vs prepare from the compilation cache (with --models: "
                        "MediaPipe models' time to the first result through the HAL, cold, in "
                        "a second process and new on a machine warm with the others, in "
                        "phases); peak: the device's FMA "
                        "throughput and memory bandwidth (cached for clnn run --profile); quant: "
                        "the ONNX dev models quantized with onnxruntime.quantization in each "
                        "format, max difference from onnxruntime in LSB on the reference and "
                        "the OpenCL device")
    b.add_argument("--n", type=positive_int, default=1024,
                   help="gemm: the matrix size n (default 1024)")
    b.add_argument("--reps", type=positive_int, default=10,
                   help="gemm: timed repetitions (default 10)")
    b.add_argument("--json", action="store_true", help="print the result as JSON")
    b.add_argument("--sweep", action="store_true", help="also time other GEMM tile sizes")
    b.add_argument("--iterations", type=positive_int, default=20,
                   help="models: timed runs per model and round (with --onnx: in all)")
    b.add_argument("--models", nargs="*", default=None,
                   help="models: only these (file names); prepare: time to the first result "
                        "of these MediaPipe models (none named: all), cold, second process "
                        "and new on a warm machine")
    b.add_argument("--device", default="opencl", type=device_spec,
                   help=f"the clnn device (gemm, prepare: OpenCL only): {DEVICE_HELP}")
    b.add_argument("--plot", default=None, metavar="FILE", type=output_file,
                   help="models: draw clnn vs litert per model to FILE (.png or .html)")
    b.add_argument("--onnx", action="store_true",
                   help="models: the ONNX test models (clnn models fetch --onnx) on clnn vs "
                        "onnxruntime (2 threads), in interleaved rounds")
    b.add_argument("--int8", action="store_true",
                   help="models: the int8 .tflite models (clnn models fetch --int8) on clnn "
                        "vs ai-edge-litert")
    b.add_argument("--rounds", type=positive_int, default=5,
                   help="models: rounds in which clnn and its peer (litert, onnxruntime) "
                        "take turns (default 5): --iterations runs each per round for the "
                        "MediaPipe models, shared among the rounds with --onnx")
    b.add_argument("--formats", nargs="*", default=None,
                   help="quant: only these formats (qop-u8, qop-u8-pc, qop-s8, qop-s8-pc, "
                        "qdq-u8, qdq-u8-pc, qdq-s8, qdq-s8-pc, dynamic; default all)")
    b.add_argument("--no-cache", action="store_true",
                   help="models: prepare afresh, without the compilation cache kept under "
                        "clnn's cache directory")
    b.add_argument("--devices", nargs="*", default=None, choices=["reference", "opencl"],
                   help="quant: the devices compared (default both)")
    b.add_argument("--modes", nargs="*", default=None, choices=["nnapi", "onnxruntime"],
                   help="quant: the import modes compared (clnn.onnx.load quantized=; "
                        "default both)")
    b.add_argument("--record", nargs="?", const="", default=None, metavar="FILE",
                   help="quant: also write the table with its conditions (commit, machine, "
                        "load, onnxruntime version) as JSON to FILE (default "
                        "benchmarks/results/onnx_quant-<UTC time>.json)")
    b.set_defaults(func=_cmd)
