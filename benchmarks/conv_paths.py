"""The paths of a float 3x3 CONV_2D on the OpenCL device against each other: the im2col GEMM,
Winograd F(2x2, 3x3) (stride 1 only) and the direct ``conv_tile`` kernel, on the layers of
few input channels where the rule of clnn.kernels.conv2d.direct_max_c decides between them
(common_det's first layers, strided and stride-1 ones of 12-48 channels). Kernel time of a
one-operation model (OpenCL profiling events, the minimum of ``--iterations`` runs: the least
load-sensitive figure on a shared machine), each path forced (the device's ``winograd``
option; the direct kernel by raising the rule's channel limits), and the path the rule takes.

    python3 benchmarks/conv_paths.py [--iterations 30] [--json FILE]

The JSON record (default benchmarks/results/conv_paths.json) holds the commit, the device, the
load average before and after and, per layer, each path's time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import clnn.kernels.conv2d as conv2d  # noqa: E402
from clnn.bench.records import git_commit, write_record  # noqa: E402
from clnn.device import ClDevice  # noqa: E402
from clnn.execution import Execution  # noqa: E402
from clnn.options import DeviceOptions  # noqa: E402
from hal.builder import ModelBuilder  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
#: (H, W, C, O, stride): NHWC input, SAME padding, fused RELU
LAYERS = [(208, 208, 12, 24, 1), (208, 208, 24, 48, 2), (104, 104, 24, 24, 1),
          (104, 104, 48, 96, 2), (112, 112, 16, 32, 2), (112, 112, 32, 64, 2),
          (28, 28, 32, 64, 2), (56, 56, 16, 16, 1), (56, 56, 16, 64, 1), (56, 56, 12, 24, 1),
          (28, 28, 16, 32, 1), (14, 14, 16, 64, 1), (55, 55, 16, 64, 1), (20, 20, 16, 64, 1),
          (20, 20, 12, 24, 1), (14, 14, 12, 24, 1)]


def _model(h, w, c, o, s):
    rng = np.random.default_rng(0)
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [1, h, w, c])
    wt = b.constant(rng.uniform(-1, 1, (o, 3, 3, c)).astype(np.float32))
    bias = b.constant(rng.uniform(-1, 1, o).astype(np.float32))
    shape = [1, -(-h // s), -(-w // s), o]
    b.mark_output(b.op("CONV_2D", [x, wt, bias, b.int32(1), b.int32(s), b.int32(s),
                                   b.int32(1)], b.tensor("TENSOR_FLOAT32", shape)))
    return b.finish(), [rng.uniform(-1, 1, (1, h, w, c)).astype(np.float32)]


def _kernel_ms(model, inputs, iterations: int, winograd, limits) -> tuple[float, list]:
    saved = (conv2d.DIRECT_MAX_C_STRIDED, conv2d.DIRECT_MAX_C_LARGE, conv2d.DIRECT_LARGE_OUT,
             conv2d.DIRECT_MAX_C_STRIDED_TAPS)
    if limits is not None:
        conv2d.DIRECT_MAX_C_STRIDED, conv2d.DIRECT_MAX_C_LARGE, conv2d.DIRECT_LARGE_OUT = limits
        conv2d.DIRECT_MAX_C_STRIDED_TAPS = limits[0]
    try:
        dev = ClDevice(fallback=False, options=DeviceOptions(winograd=winograd, chains=False))
        pm = dev.prepare_model(model)
    finally:
        (conv2d.DIRECT_MAX_C_STRIDED, conv2d.DIRECT_MAX_C_LARGE, conv2d.DIRECT_LARGE_OUT,
         conv2d.DIRECT_MAX_C_STRIDED_TAPS) = saved
    times = []
    for r in range(iterations + 1):
        events = []
        pm.run(inputs, execution=Execution(pm, dev.timing_queue(), events=events))
        if r:  # (the first: PoCL compiles for the work sizes)
            times.append(sum(e.profile.end - e.profile.start for _, e in events) * 1e-6)
    names = [la.name for p in pm.partitions for pl in p.plans.values() for la in pl.launches]
    return min(times), names


def _load():
    from clnn.bench.timing import load_average

    return load_average()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "conv_paths.json"))
    args = ap.parse_args()
    load_before, t0, rows = _load(), time.perf_counter(), []
    never, always = (8, 8, 1 << 30), (1 << 10, 1 << 10, 0)
    for layer in LAYERS:
        model, inputs = _model(*layer)
        ms = {}
        ms["im2col"], _ = _kernel_ms(model, inputs, args.iterations, 0, never)
        if layer[4] == 1:
            ms["winograd"], _ = _kernel_ms(model, inputs, args.iterations, 2, never)
        ms["direct"], _ = _kernel_ms(model, inputs, args.iterations, 0, always)
        rule_ms, names = _kernel_ms(model, inputs, args.iterations, None, None)
        rule = "direct" if "conv2d.conv_tile" in names else \
            "winograd" if "conv2d.wino_in" in names else "im2col"
        best = min(ms, key=ms.get)
        h, w, c, o, s = layer
        rows.append({"layer": {"H": h, "W": w, "C": c, "O": o, "stride": s},
                     "ms": {k: round(v, 4) for k, v in ms.items()}, "rule": rule,
                     "best": best, "rule_over_best": round(ms[rule] / ms[best], 2)})
        print(f"{h}x{w}x{c}->{o} s{s}: " + "  ".join(f"{k} {v:.3f}" for k, v in ms.items()) +
              f"  rule: {rule} ({rows[-1]['rule_over_best']:.2f} of the best)", flush=True)
    record = {"benchmark": "benchmarks/conv_paths.py", "commit": git_commit(HERE),
              "device": ClDevice(fallback=False).name, "iterations": args.iterations,
              "statistic": "min", "load_average": {"before": load_before, "after": _load()},
              "seconds": round(time.perf_counter() - t0, 1), "layers": rows}
    write_record(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
