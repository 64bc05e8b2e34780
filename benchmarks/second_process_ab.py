"""The second process of issue #37, two checkouts taking turns: a fresh Python process on a warm
cache (clnn.tflite.load, open_cl_device, prepare_model without a compilation cache, one
execution), its CPU seconds by phase (time.process_time: robust on a loaded machine) and its
wall (each phase's, in the process, and of the whole process with the interpreter's
start).

    python3 benchmarks/second_process_ab.py --side main=/work/main --side branch=/work/wt-x \\
        [--rounds 6] [--caches DIR] [--json FILE] [MODEL ...]

Each side has its own CLNN_CACHE_DIR under ``--caches`` (PoCL's cache is shared: it is keyed by
the source), warmed by two runs per model first; then every round runs each model once per
side, the sides in turn first. The record holds the load average per round, the medians and
every run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

MODELS = ["face_detection_short_range", "hand_landmark_full", "iris_landmark",
          "pose_landmark_full"]
CHILD = r'''
import time; c0 = time.process_time(); w0 = time.perf_counter()
import json, sys
marks = []
def mark(name): marks.append((name, time.process_time(), time.perf_counter()))
import numpy, pyopencl
mark("numpy+pyopencl")
import clnn.tflite
from clnn.cli.run import random_inputs
from clnn.devices import open_cl_device
from hal.builder import make_request
mark("clnn-imports")
imported = clnn.tflite.load(sys.argv[1]); mark("load")
device = open_cl_device(); mark("open")
prepared = device.prepare_model(imported.model); mark("prepare")
r = prepared.execute_synchronously(make_request(imported.model, random_inputs(imported)))
mark("first")
wall = time.perf_counter() - w0
assert r.status == 0, r.message
out, prev, prev_w = {}, c0, w0
for name, t, tw in marks:
    out[name], prev = round(t - prev, 4), t
    out[name + "_wall"], prev_w = round(tw - prev_w, 4), tw
out.update(total_cpu=round(prev - c0, 4), wall_in_process=round(wall, 4))
print(json.dumps(out))
'''


def run(side: str, path: str, model: str, caches: str, models_dir: str) -> dict:
    env = dict(os.environ, CLNN_CACHE_DIR=os.path.join(caches, side), PYTHONPATH=path)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode kept, as an installed clnn has it
    t0 = time.perf_counter()
    model_path = os.path.join(models_dir, f"{model}.tflite")
    proc = subprocess.run([sys.executable, "-c", CHILD, model_path], env=env,
                          capture_output=True, text=True, cwd=caches)
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{side} {model}: {proc.stderr[-2000:]}")
    return {**json.loads(lines[-1]), "process_wall": round(wall, 4)}


def measure(args, sides: dict) -> dict:
    runs = {s: {m: [] for m in args.models} for s in sides}
    loads = [os.getloadavg()]
    for r in range(args.rounds):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        for m in args.models:
            for side in order:
                runs[side][m].append(run(side, sides[side], m, args.caches, args.models_dir))
        loads.append(os.getloadavg())
    medians = {m: {s: {k: round(statistics.median(row[k] for row in runs[s][m]), 4)
                       for k in runs[s][m][0]} for s in sides} for m in args.models}
    return {"load_average_per_round": loads, "medians": medians, "runs": runs}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", default=MODELS)
    p.add_argument("--side", action="append", required=True, help="NAME=CHECKOUT")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--caches", default="/tmp/clnn-second-process")
    p.add_argument("--models-dir", default=os.path.expanduser("~/.cache/clnn/models"))
    p.add_argument("--json", default="benchmarks/results/second_process_ab.json")
    args = p.parse_args()
    sides = dict(s.split("=", 1) for s in args.side)
    os.makedirs(args.caches, exist_ok=True)
    for side, path in sides.items():  # warm each side's cache
        for m in args.models:
            for _ in range(2):
                run(side, path, m, args.caches, args.models_dir)
    record = measure(args, sides)
    for m, per_side in record["medians"].items():
        for side, row in per_side.items():
            print(f"{m[:26]:26} {side:8} " + " ".join(f"{k}={v}" for k, v in row.items()))
    with open(args.json, "w") as f:
        json.dump({"sides": sides, **record}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
