"""Execution time of chained models for several task counts per compute unit (clnn/chain.py
tasks_per_unit: the device class's chain_tasks), and how long a chain's work-groups wait for
each other.

    python3 benchmarks/chain_tasks.py MODEL [MODEL...] [--tasks 4,2,16] [--rounds 8]
                                      [--iterations 40]

MODEL: a MediaPipe model name (clnn models fetch) or a .tflite path. Per model, one prepared
model per task count in this process (each with its chains built at that count), taking turns:
``--rounds`` rounds of ``--iterations`` HAL executions each, the first count rotating; prints
the median execution time of each and its ratio to the first count's. Then, for the first
count, the chains' profiled variant (clnn/bench/chain_profile.py) gives the waits: per launch,
the last work-group's leave minus the first's, summed over the chain, against the chain's time.
Load average before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def waits(runner, inputs, runs: int = 30) -> tuple[float, float]:
    """(chain microseconds, summed per-launch wait microseconds), medians over ``runs``."""
    import pyopencl as cl

    from clnn.bench import chain_profile

    pm = runner.prepared
    chains = pm.chains()
    hz = chain_profile.ready(chains, pm.queue.context) if chains else None
    if hz is None:
        return float("nan"), float("nan")
    total, wait = [], []
    with chain_profile.profiled(chains):
        for _ in range(runs):
            runner.run(inputs)
            t = w = 0.0
            for ch in chains:
                st = np.empty((int(ch.global_size[0]), len(ch.launches) + 1), np.uint64)
                cl.enqueue_copy(pm.queue, st, ch.prof)
                st = st.astype(np.float64) / hz * 1e6
                ends = st[:, 1:]
                t += ends.max() - st[:, 0].min()
                w += float((ends.max(axis=0) - ends.min(axis=0)).sum())
            total.append(t)
            wait.append(w)
    return float(np.median(total)), float(np.median(wait))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--tasks", default="4,2,16", help="task counts per unit, the first the base")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=40)
    a = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    from clnn import chain
    from clnn.bench import timing
    from clnn.bench.bench_models import load_case
    from clnn.cli.run import ClnnRunner
    from clnn.devices import open_device
    from clnn.models.mediapipe import model_path
    from hal.builder_requests import make_request

    counts = [int(x) for x in a.tasks.split(",")]
    dev = open_device("opencl")
    print(f"load average {os.getloadavg()[0]:.2f}; tasks per unit {counts}; "
          f"{a.rounds} rounds x {a.iterations} executions")
    for name in a.models:
        path = name if name.endswith(".tflite") else str(model_path(name + ".tflite"))
        imported, inputs = load_case(path)
        runners = {}
        for t in counts:
            chain.TASKS_PER_UNIT = t  # read when a plan's chains are made
            r = ClnnRunner(imported, dev, None)
            for _ in range(5):
                r.run(inputs)
            runners[t] = r
        req = make_request(imported.model, inputs)
        times: dict[int, list] = {t: [] for t in counts}
        for rnd in range(a.rounds):
            for t in timing.turn(counts, rnd):
                pm = runners[t].prepared
                for _ in range(a.iterations):
                    t0 = time.perf_counter()
                    pm.execute_synchronously(req)
                    times[t].append(time.perf_counter() - t0)
        base = np.median(times[counts[0]])
        cells = "  ".join(f"{t}: {1e3 * np.median(v):.3f} ms ({np.median(v) / base:.3f})"
                          for t, v in times.items())
        total, wait = waits(runners[counts[0]], inputs)
        print(f"{os.path.basename(path):40s} {cells}  waits at {counts[0]}: {wait:.0f} of "
              f"{total:.0f} us ({100 * wait / total:.0f}%)", flush=True)
    print(f"load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
