"""Where a chained run's time goes: its wall against the sum of its steps' kernel minima.

    python3 benchmarks/chain_step_cost.py MODEL... [--runs 40] [--json OUT]

MODEL: a MediaPipe model name, a .tflite or .onnx path. Per model, in one process: the chained
prepared model (the runs the latency runs make) and a second prepare with ``CLNN_CHAIN=0`` on a
profiling queue (every launch on its own, timed by its OpenCL event; per launch its minimum over
the runs). The chained model's wall (host: HAL execution, median) and, from the chains'
profiled variant (clnn.bench.chain_profile: per work-group its start and its leaving each
launch, cycle counters), per chained run (medians over the runs):

- ``span``: the chains' time on the device (last leave minus first start, summed over chains);
- ``start_skew``: the last work-group's start minus the first's (a worker woken late);
- ``waits``: per launch, the last work-group's leave minus the first's, summed;
- ``launch_max``: per launch, the longest any work-group spent in it, summed;
- ``kernel_min``: the chained launches' one-by-one event minima, summed (their ideal);
- ``step_cost``: (span - kernel_min) / chained launches: what a step costs inside a chain;
- ``launch_median_sum``: per launch its median in the chain (the longest a work-group spent
  in it), summed; ``slower_in_chain``: the launches whose chained median exceeds their
  one-by-one minimum by 10% and 2 us or more;
- ``host``: the profiled variant's wall - span: the unchained launches, copies, enqueue and
  the host's wait.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model_file(name: str) -> str:
    if name.endswith((".tflite", ".onnx")):
        if os.path.exists(name):
            return name
        sub = "onnx" if name.endswith(".onnx") else ""
        return os.path.join(os.path.expanduser("~/.cache/clnn/models"), sub, name)
    from clnn.models.mediapipe import model_path
    return str(model_path(name + ".tflite"))


def prepare_unchained(device, model, inputs):
    saved = os.environ.get("CLNN_CHAIN")
    os.environ["CLNN_CHAIN"] = "0"
    try:
        pm = device.prepare_model(model)
        pm.run(inputs)
    finally:
        if saved is None:
            os.environ.pop("CLNN_CHAIN")
        else:
            os.environ["CLNN_CHAIN"] = saved
    return pm


def minima(pm, inputs, runs: int) -> dict:
    """Per launch (its position in the plan's run) its event minimum in seconds."""
    best: dict = {}
    for _ in range(runs):
        events: list = []
        pm.run(inputs, events=events)
        for i, (step, ev) in enumerate(events):
            s = (ev.profile.end - ev.profile.start) * 1e-9
            key = (i, step.name)
            best[key] = min(best.get(key, s), s)
    return best


def stamps(pm, inputs, runs: int) -> tuple[list, float]:
    """(per run, per chain, the work-groups' stamps in cycles; the cycles per microsecond)."""
    import pyopencl as cl

    from clnn.bench import chain_profile

    chains = pm.chains()
    hz = chain_profile.ready(chains, pm.queue.context) if chains else None
    if hz is None:
        return [], 1.0
    out = []
    with chain_profile.profiled(chains):
        pm.run(inputs)
        for _ in range(runs):
            pm.run(inputs)
            per = []
            for ch in chains:
                st = np.empty((int(ch.global_size[0]), len(ch.launches) + 1), np.uint64)
                cl.enqueue_copy(pm.queue, st, ch.prof)
                per.append(st.astype(np.int64))
            out.append(per)
    return out, hz / 1e6


def breakdown(runs: list, per_us: float) -> dict:
    """Medians over runs of the stamps' figures (module docstring), microseconds (``per_us``:
    cycles per microsecond); ``launch`` and ``wait``: per chained launch, in chain order."""
    from clnn.bench.chain_profile import launch_cycles

    rows = {"span": [], "start_skew": [], "waits": [], "launch_max": [], "end_skew": []}
    launch, wait = [], []
    for per in runs:
        v = dict.fromkeys(rows, 0.0)
        for st in per:
            ends = st[:, 1:]
            v["span"] += ends.max() - st[:, 0].min()
            v["start_skew"] += st[:, 0].max() - st[:, 0].min()
            v["waits"] += float((ends.max(axis=0) - ends.min(axis=0)).sum())
            v["launch_max"] += float(launch_cycles(st).sum())
            v["end_skew"] += ends[:, -1].max() - ends[:, -1].min()
        for k in rows:
            rows[k].append(v[k] / per_us)
        launch.append(np.concatenate([launch_cycles(st) for st in per]) / per_us)
        wait.append(np.concatenate([st[:, 1:].max(axis=0) - st[:, 1:].min(axis=0)
                                    for st in per]) / per_us)
    out = {k: float(np.median(x)) for k, x in rows.items()}
    out["launch"] = np.median(launch, axis=0) if launch else np.zeros(0)
    out["wait"] = np.median(wait, axis=0) if wait else np.zeros(0)
    return out


def wall(pm, model, inputs, runs: int) -> float:
    from hal.builder_requests import make_request

    req = make_request(model, inputs)
    for _ in range(5):
        pm.execute_synchronously(req)
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        pm.execute_synchronously(req)
        t.append(time.perf_counter() - t0)
    return float(np.median(t)) * 1e6


def profiled_wall(pm, model, inputs, runs: int) -> float:
    """:func:`wall` with the chains' profiled variants (the runs the stamps come from)."""
    from clnn.bench import chain_profile

    chains = pm.chains()
    with chain_profile.profiled(chains):
        return wall(pm, model, inputs, runs)


def slower_in_chain(chains: list, b: dict, alone: list) -> list:
    """The chained launches whose median in the chain exceeds their one-by-one minimum by
    10% and 2 us or more (``alone``: per chained launch its minimum, microseconds)."""
    out = []
    launches = [la for ch in chains for la in ch.launches]
    for j, (la, t, a, w) in enumerate(zip(launches, b["launch"], alone, b["wait"])):
        if t > 1.1 * a and t - a >= 2.0:
            out.append({"launch": j, "kernel": la.name, "global_size": list(la.global_size),
                        "alone_min_us": round(a, 1), "chained_median_us": round(float(t), 1),
                        "wait_us": round(float(w), 1)})
    return out


def matched_minima(chains: list, best: dict) -> list:
    """Per chained launch its one-by-one minimum (microseconds): the chains' launches are
    runs of the plan's launches in order, matched by kernel name in order."""
    names = [la.name for ch in chains for la in ch.launches]
    out, k = [], 0
    for (_, nm), s in sorted(best.items()):
        if k < len(names) and nm == names[k]:
            out.append(1e6 * s)
            k += 1
    return out


def one_model(path: str, dev, pdev, runs: int) -> dict:
    from clnn.cli.onnx_run import import_model
    from clnn.cli.run import parse_inputs

    imported = import_model(path, None)
    inputs = [np.asarray(x) for x in parse_inputs(imported, ())]
    pm = dev.prepare_model(imported.model)
    pm.run(inputs)
    pm.wait_chains()
    chains = pm.chains()
    best = minima(prepare_unchained(pdev, imported.model, inputs), inputs, runs)
    w = wall(pm, imported.model, inputs, runs)
    b = breakdown(*stamps(pm, inputs, runs))
    wp = profiled_wall(pm, imported.model, inputs, runs)
    alone = matched_minima(chains, best)
    n = len(alone)
    rec = {"model": os.path.basename(path), "launches": len(best), "chains": len(chains),
           "chained_launches": n, "wall_us": round(w, 1), "wall_profiled_us": round(wp, 1),
           "all_kernel_min_us": round(1e6 * sum(best.values()), 1),
           "kernel_min_us": round(sum(alone), 1)}
    rec.update({f"{k}_us": round(v, 1) for k, v in b.items() if not isinstance(v, np.ndarray)})
    if n and len(b["launch"]) == n:
        rec["launch_median_sum_us"] = round(float(b["launch"].sum()), 1)
        rec["step_cost_us"] = round((b["span"] - sum(alone)) / n, 2)
        rec["host_us"] = round(wp - b["span"], 1)
        rec["slower_in_chain"] = slower_in_chain(chains, b, alone)
        rec["slower_excess_us"] = round(sum(r["chained_median_us"] - r["alone_min_us"]
                                            for r in rec["slower_in_chain"]), 1)
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    from clnn.devices import open_device

    dev = open_device("opencl")
    pdev = open_device("opencl", profiling=True)
    before = os.getloadavg()[0]
    recs = []
    for name in a.models:
        rec = one_model(model_file(name), dev, pdev, a.runs)
        print(json.dumps(rec), flush=True)
        recs.append(rec)
    out = {"benchmark": "benchmarks/chain_step_cost.py", "runs": a.runs,
           "load_average": {"before": before, "after": os.getloadavg()[0]}, "models": recs}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
