"""Kernel time of whole models, robust to a loaded machine: each launch's fastest time over
``--runs`` executions (launches one by one, OpenCL profiling events), summed per kernel and per
model.

    python3 benchmarks/kernel_minima.py [--runs 200] [--json] MODEL.tflite ...

The minimum of each launch is what the kernel costs when no other work takes its cores (the
medians of a machine shared with other work mostly measure that work); the sum is the model's
kernel time without the per-execution costs (Python path, enqueue, waits). For a before /
after, run each tree's own copy, taking turns: the script imports the clnn of the tree it sits
in, whatever PYTHONPATH says.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from clnn.bench import timing  # noqa: E402
from clnn.bench.bench_models import load_case  # noqa: E402
from clnn.devices import open_device  # noqa: E402


def minima(device, path: str, runs: int) -> dict:
    """{kernel name: us} (each launch's minimum, summed by kernel) and the model's sum."""
    imported, inputs = load_case(path)
    pm = device.prepare_model(imported.model)
    pm.run(inputs)
    best = collections.defaultdict(lambda: float("inf"))
    names = {}
    for _ in range(runs):
        events = []
        pm.run(inputs, events=events)
        for n, (launch, ev) in enumerate(events):
            best[n] = min(best[n], ev.profile.end - ev.profile.start)
            names[n] = launch.name
    by_kernel = collections.Counter()
    for n, ns in best.items():
        by_kernel[names[n]] += ns / 1e3
    return {"model": os.path.basename(path), "launches": len(best),
            "kernel_us": round(sum(by_kernel.values()), 1),
            "by_kernel_us": {k: round(v, 1) for k, v in by_kernel.most_common()}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("models", nargs="+", help=".tflite files")
    args = ap.parse_args(argv)
    device = open_device("opencl", profiling=True)
    load_before = timing.load_average()
    rows = [minima(device, m, args.runs) for m in args.models]
    result = {"device": device.name, "runs": args.runs, "models": rows,
              "load_average": {"before": load_before, "after": timing.load_average()}}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    for r in rows:
        print(f"{r['model']:32} {r['kernel_us']:8.1f} us in {r['launches']} launches: "
              + ", ".join(f"{k} {v}" for k, v in r["by_kernel_us"].items()))
    print(f"load average {timing.fmt_load(load_before)} -> "
          f"{timing.fmt_load(result['load_average']['after'])}")


if __name__ == "__main__":
    main()
