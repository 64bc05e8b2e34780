#!/usr/bin/env python
"""The int8 models of ``clnn models fetch --int8`` (or any .tflite files named) bit for bit:
per model and output, the largest difference from ai-edge-litert's built-in kernels of clnn's
devices and of litert's default XNNPACK delegate, over seeded random inputs spanning each
input's full range (clnn/suites/int8_check.py).

    python scripts/int8_models_lsb.py [--seeds 5] [--devices reference,opencl] [MODEL ...]

Models clnn cannot import are listed with the reason. OpenCL runs without fallback.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from clnn.models.int8 import INT8_MODELS, STREAMING, present_int8  # noqa: E402
from clnn.suites.int8_check import compare_model  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--devices", default="reference,opencl")
    args = ap.parse_args(argv)
    from clnn.devices import open_device

    devices = {n: open_device(n, fallback=False) if n == "opencl" else open_device(n)
               for n in args.devices.split(",") if n}
    paths = args.models or [present_int8(n) or n for n in sorted(INT8_MODELS)
                            if n not in STREAMING]
    ok = True
    for path in paths:
        name = os.path.basename(path)
        if not os.path.exists(path):
            print(f"{name:28} not in the cache (clnn models fetch --int8)")
            ok = False
            continue
        try:
            result = compare_model(path, devices, range(args.seeds), xnnpack=True)
        except Exception as e:  # report it and go on
            print(f"{name:28} {type(e).__name__}: {str(e).splitlines()[0]}")
            ok = False
            continue
        cells = "  ".join(f"{side} {result[side]}" for side in result)
        print(f"{name:28} LSB per output vs litert built-in: {cells}", flush=True)
        ok &= all(max(v) == 0 for side, v in result.items() if side != "xnnpack")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
