"""Per-operation-type time of MediaPipe (.tflite) models on clnn and on litert's XNNPACK, side
by side: where clnn loses against XNNPACK, operation type by operation type (issue #36).

    python3 benchmarks/tflite_op_profiles.py [--runs 300] [--json FILE] MODEL.tflite ...

litert: ai-edge-litert's Python interpreter has no per-operator profiler, so each operator is
timed as a one-operator sub-model (its constant inputs kept, the DEQUANTIZE operators of fp16
weights feeding it kept with it: XNNPACK folds them at prepare; its other inputs random model
inputs), XNNPACK with 2 threads as models_ab.py runs it: the fastest of ``--runs`` invokes,
minus the fastest invoke of a one-operator model of next to no work (an ADD of one element: the
Python call, the interpreter's and XNNPACK's fixed cost per operator). The sum over the
operators is printed against the whole model's fastest invoke: one-operator models add up to
more than the model (each operator's thread-pool dispatch and cold caches), so the per-type
figures are upper bounds of XNNPACK's share. clnn: each operation's fastest kernel time of
``--runs`` chained runs (the chains' profiled variants, by their cycle counters, as `clnn run
--profile` times them), and the mean, FLOP, bytes, rate and bound of `clnn run MODEL --profile
--iterations 50 --json` (against `clnn bench peak`); per operation type, the operations fused
into another counted in their own row at 0 (the host operation's time holds them). Fastest
runs on both sides: the least load-sensitive figure on a shared machine. The record (default
benchmarks/results/tflite_op_profiles.json) holds the load average before and after.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from clnn.bench.records import write_record  # noqa: E402

THREADS = 2


def _names():
    from ai_edge_litert import schema_py_generated as s

    return {v: k for k, v in vars(s.BuiltinOperator).items() if not k.startswith("_")}


def _op_type(model, op, names) -> str:
    code = model.operatorCodes[op.opcodeIndex]
    return names[max(code.builtinCode, code.deprecatedBuiltinCode)]


def _constant(model, sg, t: int) -> bool:
    buf = model.buffers[sg.tensors[t].buffer]
    return buf.data is not None and len(buf.data) > 0 or bool(getattr(buf, "size", 0))


def _time_invoke(content: bytes, runs: int) -> float:
    """The fastest ms of one invoke of the model in ``content`` (inputs random)."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=content, num_threads=THREADS)
    it.allocate_tensors()
    rng = np.random.default_rng(0)
    for d in it.get_input_details():
        it.set_tensor(d["index"], rng.standard_normal(d["shape"]).astype(d["dtype"]))
    for _ in range(10):
        it.invoke()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        it.invoke()
        times.append(time.perf_counter() - t0)
    return float(np.min(times)) * 1e3


def _sub_model(model, sg, keep: list, inputs: list, outputs: list) -> bytes:
    from ai_edge_litert.tools import flatbuffer_utils as fu

    saved = (sg.operators, sg.inputs, sg.outputs, model.signatureDefs)
    sg.operators, sg.inputs, sg.outputs, model.signatureDefs = keep, inputs, outputs, []
    try:
        return bytes(fu.convert_object_to_bytearray(model))
    finally:
        sg.operators, sg.inputs, sg.outputs, model.signatureDefs = saved


def litert_ops(path: str, runs: int) -> dict:
    """{"ops": [{index, type, ms}], "overhead_ms", "model_ms"} of one model on litert."""
    from ai_edge_litert.tools import flatbuffer_utils as fu

    names = _names()
    model = fu.read_model(path)
    sg = model.subgraphs[0]
    ops = list(sg.operators)
    producer = {t: op for op in ops for t in op.outputs}
    rows = []
    empty = _empty_model_ms(model, sg, ops, names, runs)
    folded = _folded(model, sg, ops, names)
    constants = {t for t, op in producer.items() if id(op) in folded}
    for i, op in enumerate(ops):
        kind = _op_type(model, op, names)
        if id(op) in folded:
            continue
        keep, inputs = [], []
        for t in op.inputs:
            if t < 0 or _constant(model, sg, t):
                continue
            if t in constants:
                _keep_producers(t, producer, folded, keep)
            elif t not in inputs:
                inputs.append(t)
        ms = _time_invoke(_sub_model(model, sg, keep + [op], inputs, list(op.outputs)), runs)
        rows.append({"index": i, "type": kind, "ms": round(max(ms - empty, 0.0), 5),
                     "raw_ms": round(ms, 5)})
    with open(path, "rb") as f:
        whole = _time_invoke(f.read(), runs)
    return {"ops": rows, "overhead_ms": round(empty, 5), "model_ms": round(whole, 4)}


#: operators that XNNPACK folds at prepare where their inputs are constant (fp16 weights'
#: DEQUANTIZE, sparse weights' DENSIFY): timed with their consumer, never alone
FOLDED = ("DEQUANTIZE", "DENSIFY")


def _folded(model, sg, ops, names) -> set:
    """The ids of the operators computing constants (a FOLDED operator whose inputs are
    constants or the outputs of other such operators), in the model's order."""
    out, const = set(), set()
    for op in ops:
        if _op_type(model, op, names) in FOLDED and all(
                t in const or _constant(model, sg, t) for t in op.inputs if t >= 0):
            out.add(id(op))
            const.update(op.outputs)
    return out


def _keep_producers(t: int, producer: dict, folded: set, keep: list) -> None:
    """Append the folded operators computing ``t`` to ``keep`` (producers first)."""
    op = producer[t]
    if any(op is k for k in keep):
        return
    for u in op.inputs:
        if u >= 0 and u in producer and id(producer[u]) in folded:
            _keep_producers(u, producer, folded, keep)
    keep.append(op)


def _empty_model_ms(model, sg, ops, names, runs: int) -> float:
    """The median invoke of the model's first ADD of two activations, run on one-element
    tensors: the fixed cost of an invoke and of one XNNPACK operator (0 where the model has no
    such ADD)."""
    for op in ops:
        ins = [t for t in op.inputs if t >= 0]
        if _op_type(model, op, names) != "ADD" or len(ins) != 2 or \
                any(_constant(model, sg, t) for t in ins):
            continue
        touched = sorted(set(ins) | {op.outputs[0]})
        saved = {t: sg.tensors[t].shape for t in touched}
        for t in touched:
            sg.tensors[t].shape = [1]
        try:
            return _time_invoke(_sub_model(model, sg, [op], sorted(set(ins)),
                                           [op.outputs[0]]), runs)
        finally:
            for t in touched:
                sg.tensors[t].shape = saved[t]
    return 0.0


def clnn_ops(path: str) -> dict:
    """`clnn run --profile --json` of one model (per operation: the mean kernel time inside
    its chain, FLOP, bytes, bound and rate against `clnn bench peak`)."""
    out = subprocess.run([sys.executable, "-m", "clnn", "run", path, "--device", "opencl",
                          "--profile", "--iterations", "50", "--json"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def clnn_min_ms(path: str, runs: int) -> dict:
    """{operation: its fastest kernel ms of ``runs`` chained runs} (the chains' profiled
    variants, as clnn run --profile times them; the fastest run of each operation, as litert's
    side takes its fastest invoke: the least load-sensitive figure on a shared machine)."""
    from clnn import chain
    from clnn.bench import chain_profile
    from clnn.cli.run import ClnnRunner, random_inputs
    from clnn.devices import open_device
    from clnn.launch import ChainEvents
    from clnn.tflite import load

    imported = load(path)
    inputs = [np.asarray(x) for x in random_inputs(imported)]
    runner = ClnnRunner(imported, open_device("opencl"))
    runner.run(inputs)
    pm = runner.prepared
    pm.wait_chains()
    chains = pm.chains()
    hz = chain_profile.ready(chains, pm.device.context) if chains else None
    best: dict = {}
    with chain_profile.profiled(chains if hz else []):
        for _ in range(runs + 1):
            per: dict = {}
            events = ChainEvents() if hz else []
            pm.run(inputs, events=events)
            for step, ev in events:
                if isinstance(step, chain.Chain):
                    for la, sec in zip(step.launches, chain_profile.launch_times(step, pm.queue,
                                                                                 hz)):
                        per[la.op_index] = per.get(la.op_index, 0.0) + sec * 1e3
                else:
                    ms = (ev.profile.end - ev.profile.start) * 1e-6
                    per[step.op_index] = per.get(step.op_index, 0.0) + ms
            for op, ms in per.items():
                best[op] = min(best.get(op, ms), ms)
    return best


def per_type(rows: list, key: str = "type") -> dict:
    out = collections.defaultdict(lambda: {"ops": 0, "ms": 0.0})
    for r in rows:
        out[r[key]]["ops"] += 1
        out[r[key]]["ms"] += r["ms"]
    return {k: {"ops": v["ops"], "ms": round(v["ms"], 4)} for k, v in out.items()}


def _clnn_types(prof: dict, fastest: dict) -> list:
    """Each operation's fastest kernel ms under its own type, or its host's where it is
    fused (as 0: its host's time holds it)."""
    by_op = {p["operation"]: p for p in prof["profile"]}
    rows = []
    for p in prof["profile"]:
        fused = [k for k in p["kernels"] if k.startswith("fused into operation ")]
        if fused:
            host = by_op.get(int(fused[0].rsplit(" ", 1)[1]))
            kind = f"{p['type']} (fused into {host['type'] if host else '?'})"
        else:
            kind = p["type"]
        rows.append({"type": kind, "ms": fastest.get(p["operation"], 0.0)})
    return rows


def compare(path: str, runs: int) -> dict:
    lt = litert_ops(path, runs)
    prof = clnn_ops(path)
    fastest = clnn_min_ms(path, runs)
    lt_types, cl_types = per_type(lt["ops"]), per_type(_clnn_types(prof, fastest))
    table = {}
    for kind in sorted(set(lt_types) | set(cl_types)):
        a, b = cl_types.get(kind, {"ops": 0, "ms": 0.0}), lt_types.get(kind, {"ops": 0, "ms": 0.0})
        table[kind] = {"clnn_ops": a["ops"], "clnn_ms": a["ms"], "litert_ops": b["ops"],
                       "litert_ms": b["ms"],
                       "ratio": round(a["ms"] / b["ms"], 2) if b["ms"] > 0 else None}
    return {"model": os.path.basename(path), "per_type": table,
            "clnn_latency_median_ms": round(prof["latency"]["median_ms"], 4),
            "clnn_kernel_ms": round(sum(r["ms"] or 0 for r in prof["profile"]), 4),
            "clnn_kernel_fastest_ms": round(sum(fastest.values()), 4),
            "litert_model_ms": lt["model_ms"], "litert_invoke_overhead_ms": lt["overhead_ms"],
            "litert_sum_of_ops_ms": round(sum(r["ms"] for r in lt["ops"]), 4),
            "litert_ops": lt["ops"],
            "clnn_ops": [dict({k: p.get(k) for k in ("operation", "type", "kernels", "ms",
                                                      "flop", "bytes", "bound", "rate",
                                                      "peak_fraction")},
                              fastest_ms=round(fastest.get(p["operation"], 0.0), 5))
                         for p in prof["profile"]]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "tflite_op_profiles.json"))
    args = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    results = []
    for m in args.models:
        r = compare(m, args.runs)
        results.append(r)
        print(f"{r['model']}: clnn {r['clnn_latency_median_ms']} ms (kernels "
              f"{r['clnn_kernel_ms']}, fastest {r['clnn_kernel_fastest_ms']}), litert "
              f"{r['litert_model_ms']} ms (one-operator sum {r['litert_sum_of_ops_ms']}, "
              f"invoke overhead {r['litert_invoke_overhead_ms']})")
        for kind, v in sorted(r["per_type"].items(), key=lambda kv: -kv[1]["clnn_ms"]):
            print(f"  {kind:40s} clnn {v['clnn_ops']:3d} ops {v['clnn_ms']:.4f} ms   litert "
                  f"{v['litert_ops']:3d} ops {v['litert_ms']:.4f} ms   ratio {v['ratio']}")
    load = [round(load0, 2), round(os.getloadavg()[0], 2)]
    print(f"load average before / after: {load}")
    write_record(args.json, {"benchmark": "tflite_op_profiles", "runs": args.runs,
                             "litert_threads": THREADS, "load_average": load,
                             "models": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
