"""GFLOP/s of the models' pointwise and depthwise convolutions, chained and one by one.

    python3 benchmarks/chain_rates.py MODEL.tflite... [--rounds 3] [--iterations 10]

Each operation is timed in the model's own run, as `clnn run --profile` times it: chained (the
runs the latency runs make: each chained launch timed inside its chain by the cycle counters of
the chain's profiled variant, clnn/chain.py) and one by one (a second prepare of the model with
``CLNN_CHAIN=0``: every launch on its own, timed by its OpenCL profiling event, each waited
for); the two take turns, ``--rounds`` rounds of ``--iterations`` runs each. Categories:
pointwise CONV_2D (a 1x1 filter), DEPTHWISE_CONV_2D, a depthwise convolution fused into the
1x1 convolution after it (one ``gemm.dwpw`` launch: both operations' FLOP), and every
operation. GFLOP/s = the category's FLOP (clnn run --profile's counts) / its kernel time; the
totals add every model's FLOP and time.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATEGORIES = ("pointwise CONV_2D", "DEPTHWISE_CONV_2D", "depthwise + pointwise (fused)", "all")


def category(sg, k: int, fused: list[int]) -> str | None:
    """The category of operation ``k`` whose kernels also do the operations ``fused``."""
    op = sg.operations[k]
    if any(sg.operations[j].type.name == "DEPTHWISE_CONV_2D" for j in fused):
        return "depthwise + pointwise (fused)"
    if op.type.name == "DEPTHWISE_CONV_2D":
        return "DEPTHWISE_CONV_2D"
    if op.type.name == "CONV_2D" and tuple(sg.operands[op.inputs[1]].dimensions[1:3]) == (1, 1):
        return "pointwise CONV_2D"
    return None


def tally(rows: list, pm, sg, into: dict):
    """Add a profile's rows (ms per run) to ``into``: category -> [flop, ms]."""
    from clnn.bench.roofline import counts

    fused_into = getattr(pm, "fused_into", {})
    for r in rows:
        k = r.get("operation")
        if k is None or not r["ms"]:
            continue
        fused = [j for j, t in fused_into.items() if t == k]
        flop = counts(sg, k)[0] + sum(counts(sg, j)[0] for j in fused)
        for c in (category(sg, k, fused), "all"):
            if c is not None:
                into.setdefault(c, [0, 0.0])
                into[c][0] += flop
                into[c][1] += r["ms"]


def line(label: str, got: dict) -> str:
    cells = []
    for c in CATEGORIES:
        if c in got:
            flop, ms = got[c]
            cells.append(f"{c} {flop / ms / 1e6:6.1f}")
    return f"{label:11} " + "  ".join(cells)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    from clnn.cli.onnx_run import import_model
    from clnn.cli.run import parse_inputs, profile_prepared
    from clnn.devices import open_device

    device = open_device("opencl", profiling=True)
    print(f"device: {device.cl_device.name.strip()}, load average "
          f"{os.getloadavg()[0]:.2f} (GFLOP/s per category)")
    totals: dict = {"chained": {}, "one by one": {}}
    for path in args.models:
        imported = import_model(path, None)
        sg = imported.model.main
        inputs = [np.asarray(x) for x in parse_inputs(imported, ())]
        chained = device.prepare_model(imported.model)
        chained.run(inputs)
        chained.wait_chains()
        saved = os.environ.get("CLNN_CHAIN")
        os.environ["CLNN_CHAIN"] = "0"
        try:
            plain = device.prepare_model(imported.model)
            plain.run(inputs)
        finally:
            if saved is None:
                os.environ.pop("CLNN_CHAIN")
            else:
                os.environ["CLNN_CHAIN"] = saved
        mine: dict = {"chained": {}, "one by one": {}}
        for _ in range(args.rounds):
            for label, pm in (("chained", chained), ("one by one", plain)):
                rows = profile_prepared(pm, imported.model, inputs, args.iterations)
                if label == "chained" and not any(r.get("chained") for r in rows):
                    label = "unchained"  # no cycle counter, or no chain: said as it is
                for into in (mine.setdefault(label, {}), totals.setdefault(label, {})):
                    tally(rows, pm, sg, into)
        for label, got in mine.items():
            if got:
                print(f"{os.path.basename(path)}: {line(label, got)}", flush=True)
    for label, got in totals.items():
        if got:
            print(f"all models: {line(label, got)}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
