"""Kernel time of the MediaPipe models before / after the speed work of issue #11, in one
process, interleaved, from OpenCL profiling events (kernel-only: meaningful on a loaded
machine where wall times are not).

    python3 benchmarks/speed_ab.py [--rounds 15] [--no-tuning] [--no-fusion] MODEL...

A: every GEMM layer on the heuristic variant (CLNN_TUNE=off) and the PAD fusions of before
(one convolution reading the PAD); B: the tuning cache's choices (no measuring: run ``clnn
tune`` first, same CLNN_CACHE_DIR) and every PAD fusion (several readers, pooling, channel PAD
into ADD). Each model is prepared twice on two devices; then A and B take turns ``--rounds``
times. Reported: the median kernel time per run of each, split into GEMM kernels, PAD launches
and the rest, the speed-up, whether B's outputs equal A's within the float tolerance, and the
load average.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from clnn import fusion, tuning  # noqa: E402
from clnn.cli.run import random_inputs  # noqa: E402
from clnn.device import ClDevice  # noqa: E402
from clnn.models.mediapipe import model_path  # noqa: E402
from clnn.options import from_environ  # noqa: E402
from clnn.tflite import load  # noqa: E402


@contextlib.contextmanager
def fusions_of_before():
    """Only a PAD read by exactly one convolution fuses (what clnn/fusion.py did before): the
    PAD families replaced where find_fusions looks them up (clnn.fusion.find; clnn.fusion
    itself in a tree where it is one module)."""
    import importlib

    try:
        where, names = importlib.import_module("clnn.fusion.find"), ("pad_fusions",
                                                                     "channel_pad_fusions")
    except ModuleNotFoundError:  # (clnn/fusion.py: one module)
        where, names = fusion, ("_pad_fusions", "_channel_pad_fusions")
    pads, chpads = (getattr(where, n) for n in names)

    def single(g):
        found = pads(g)
        n = collections.Counter(f.pad_op for f in found.values())
        return {j: f for j, f in found.items()
                if n[f.pad_op] == 1 and g.sg.operations[j].type in fusion.CONV_OPS}

    setattr(where, names[0], single)
    setattr(where, names[1], lambda g, taken: {})
    try:
        yield
    finally:
        setattr(where, names[0], pads)
        setattr(where, names[1], chpads)


def kernel_ms(pm, inputs) -> tuple[dict, list]:
    events = []
    outs = pm.run([np.asarray(x) for x in inputs], events=events)
    split = collections.Counter()
    for launch, ev in events:
        ms = (ev.profile.end - ev.profile.start) * 1e-6
        split[(launch.op_index, launch.name)] += ms
        part = "gemm" if launch.name == "gemm.gemm" else "pad" if launch.name == "pad.pad" \
            else "other"
        split[part] += ms
        split["total"] += ms
    return split, outs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="MediaPipe model file names")
    ap.add_argument("--rounds", type=int, default=15, help="A/B turns per model")
    ap.add_argument("--no-tuning", action="store_true", help="B without the tuning cache")
    ap.add_argument("--no-fusion", action="store_true", help="B with the fusions of before")
    ap.add_argument("--layers", type=int, default=0,
                    help="also print the N operations whose kernel time changed most")
    args = ap.parse_args(argv)
    options = from_environ()  # (this script's CLNN_* variables, as before)
    dev_a = ClDevice(profiling=True, options=options)
    dev_b = ClDevice(profiling=True, options=options)
    dev_a.tuner = tuning.Tuner(dev_a, "off", None)
    cache = None if args.no_tuning else tuning.TuningCache(
        tuning.device_identity(dev_b.platform, dev_b.cl_device))
    # budget 0: the cache's choices, nothing measured
    dev_b.tuner = tuning.Tuner(dev_b, "off" if args.no_tuning else "fast", cache,
                                     budget=0.0)
    dev_b.tuner.start_model = lambda owner=None: None
    print(f"load average before: {os.getloadavg()}")
    for name in args.models:
        imported = load(model_path(name))
        inputs = random_inputs(imported)
        with fusions_of_before():
            pm_a = dev_a.prepare_model(imported.model)
        if args.no_fusion:
            with fusions_of_before():
                pm_b = dev_b.prepare_model(imported.model)
        else:
            pm_b = dev_b.prepare_model(imported.model)
        a_runs, b_runs = [], []
        for r in range(args.rounds + 1):
            sa, oa = kernel_ms(pm_a, inputs)
            sb, ob = kernel_ms(pm_b, inputs)
            if r:  # the first round warms up
                a_runs.append(sa)
                b_runs.append(sb)
        same = all(np.allclose(x, y, rtol=1e-3, atol=1e-4) for x, y in zip(oa, ob))
        med = {k: (statistics.median(s[k] for s in a_runs), statistics.median(s[k] for s in
                                                                               b_runs))
               for k in ("total", "gemm", "pad", "other")}
        tuned = list(dev_b.tuner.records)
        print(f"{name}: kernel ms per run A {med['total'][0]:.3f}  B {med['total'][1]:.3f}  "
              f"speed-up {med['total'][0] / med['total'][1]:.2f}x  (outputs equal: {same}; "
              f"{len(tuned)} layers from the tuning cache)")
        for k in ("gemm", "pad", "other"):
            print(f"    {k:6} A {med[k][0]:.3f}  B {med[k][1]:.3f}")
        if args.layers:
            keys = {k for s in a_runs + b_runs for k in s if isinstance(k, tuple)}
            delta = {k: (statistics.median(s.get(k, 0.0) for s in a_runs),
                         statistics.median(s.get(k, 0.0) for s in b_runs)) for k in keys}
            for k in sorted(delta, key=lambda k: -abs(delta[k][0] - delta[k][1]))[:args.layers]:
                print(f"    op {k[0]:4} {k[1]:36} A {delta[k][0]:.4f}  B {delta[k][1]:.4f}")
        dev_b.tuner.records.clear()
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
