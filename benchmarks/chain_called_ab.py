"""Chain programs whose kernels are inlined into the task loops or called (issue #37).

For each model (a name under ~/.cache/clnn/models or a .tflite path), prepared with chains
(one chain), the chain's program is built once per variant of ``called`` (the kernel families
whose kernel each task function calls per work-item, ``noinline``: clnn.chain.source, the
device class's ``chain_called``), each source made new to PoCL's cache by a ``__constant``
with a nonce; recorded per variant: the process's CPU seconds (getrusage, all threads) of
clBuildProgram (``build_s``) and of the first binary query (``codegen_s``: PoCL's work-group
function and LLVM code generation), then the chain's run time on the model's own table and
buffers, the variants taking turns run after run (``--runs`` each: the median, the 10th
percentile and the fastest). Run with ``PYOPENCL_NO_CACHE=1 POCL_WORK_GROUP_SPECIALIZATION=0
POCL_CACHE_DIR=<empty dir>`` for the compile figures. Prints one JSON document.

    PYTHONPATH=. python benchmarks/chain_called_ab.py pose_detection face_landmark \\
        --variants inline=,dwconv=conv2d+depthwise_conv2d --runs 400 > out.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import numpy as np


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _build(ch, called: tuple, nonce: int):
    """The chain's kernel with ``called`` families called, and its compile CPU seconds."""
    import pyopencl as cl

    from clnn.chain import source
    from clnn.program_cache import BUILD_OPTIONS

    src = f"__constant int clnn_nonce_{os.getpid()}_{nonce} = 1;\n" + \
        source(ch.parts, ch.nbuf, called=called, unroll=ch.unroll)
    t0 = _cpu()
    prg = cl._cl._Program(ch.table.context, src)
    prg.build(" ".join(BUILD_OPTIONS).encode(), [ch.cl_device])
    t1 = _cpu()
    prg.get_info(cl.program_info.BINARIES)
    kernel = cl.Kernel(cl.Program(prg), "clnn_chain")
    kernel.set_args(*ch.arguments())
    return kernel, {"build_s": round(t1 - t0, 3), "codegen_s": round(_cpu() - t1, 3)}


def _times(ch, kernels: dict, runs: int) -> dict:
    """Each variant's run times (ms), the variants taking turns (each first in turn)."""
    import pyopencl as cl

    queue = cl.CommandQueue(ch.table.context, ch.cl_device)
    names, got = list(kernels), {n: [] for n in kernels}
    for r in range(runs):
        for n in (names if r % 2 == 0 else names[::-1]):
            t0 = time.perf_counter()
            cl.enqueue_nd_range_kernel(queue, kernels[n], ch.global_size, ch.local_size)
            queue.finish()
            got[n].append((time.perf_counter() - t0) * 1e3)
    return {n: {"median_ms": round(float(np.median(v)), 3),
                "p10_ms": round(float(np.percentile(v, 10)), 3),
                "min_ms": round(float(np.min(v)), 3)} for n, v in got.items()}


def _model(name: str, variants: dict, runs: int) -> dict:
    import clnn

    path = name if os.path.exists(name) else \
        os.path.expanduser(f"~/.cache/clnn/models/{name}.tflite")
    m = clnn.load(path, cache=False)
    m.prepared.wait_chains()
    row = {"model": os.path.basename(path), "chains": []}
    for k, ch in enumerate(m.prepared.chains()):
        kernels, cpu = {}, {}
        for j, (n, called) in enumerate(variants.items()):
            kernels[n], cpu[n] = _build(ch, called, 100 * k + j)
        row["chains"].append({"launches": len(ch.launches), "kernels": len(ch.parts),
                              "compile_cpu": cpu, "run": _times(ch, kernels, runs),
                              "load_average": os.getloadavg()})
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--variants", default="inline=,dwconv=conv2d+depthwise_conv2d",
                    help="NAME=FAMILY+FAMILY,... (an empty list: every kernel inlined)")
    ap.add_argument("--runs", type=int, default=400)
    a = ap.parse_args()
    variants = {n: tuple(f for f in fams.split("+") if f)
                for n, fams in (v.split("=") for v in a.variants.split(","))}
    json.dump({"variants": variants, "runs": a.runs,
               "models": [_model(m, variants, a.runs) for m in a.models]},
              sys.stdout, indent=1)


if __name__ == "__main__":
    main()
