"""The fixed cost of one execution through the HAL (issue #36): a one-operation model (an
int8 ADD of two [1, 16] tensors, QUANT8_ASYMM_SIGNED) run by ``execute_synchronously`` on the
OpenCL device, split into the device wait and the Python path.

    python3 benchmarks/fixed_cost.py [--iterations 2000] [--rounds 5] [--json FILE]

In the same executions: ``execution``, the wall time of ``execute_synchronously`` (the request
made outside); ``device``, the time inside the calls that enqueue the launches and that read
the outputs back, waiting for the device (clnn.launch.enqueue_launch, _download_outputs and
_read_bound, timed by wrappers); ``python``, the rest: the HAL and driver path in Python
(validation, inputs, plan, uploads, outputs) with the queue's ``finish`` (where enqueue_plan
or, on the short path, enqueue_bound waits for the kernels when nothing is read back). Also
``device_only``: the plan's launches enqueued straight through pyopencl and waited for
(``enqueue_nd_range_kernel`` + ``finish``), in rounds taking turns with the executions; and
``python_alone``: the executions with pyopencl's enqueue calls
and the queue's finish stubbed (benchmarks/time_split.py python_alone), the Python path
without any wait (the fastest round's median). Medians per round, then the median of the
rounds; the load average is printed: on a shared machine the figures are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.time_split import python_alone  # noqa: E402
from clnn.bench import timing  # noqa: E402
from clnn.devices import open_device  # noqa: E402
from hal.builder import ModelBuilder, make_request  # noqa: E402

S8 = "TENSOR_QUANT8_ASYMM_SIGNED"


def add_model(n: int = 16):
    b = ModelBuilder()
    x = b.input(S8, (1, n), 0.05, -3)
    y = b.input(S8, (1, n), 0.04, 2)
    b.op("ADD", [x, y, b.int32(0)], b.output(S8, (1, n), 0.08, -1))
    return b.finish()


def _median_us(fn, iterations: int) -> float:
    times = []
    for _ in range(iterations):
        t = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) / 1e3


def device_only(pm):
    """A callable enqueueing the plan's launches (or its chains) and waiting for them."""
    import pyopencl as cl

    plans = [pl for p in pm.partitions for pl in p.plans.values() if pl is not None]
    steps = [s for pl in plans for s in (pl.chained or pl.launches)]
    q = pm.queue

    def run():
        for s in steps:
            cl.enqueue_nd_range_kernel(q, s.kernel, s.global_size, s.local_size)
        q.finish()
    return run, len(steps)


class DeviceTimer:
    """Wrappers timing clnn.launch's enqueue_launch, _download_outputs and _read_bound (the
    calls that wait for the device) while installed, each in the module that looks it up
    (clnn.launch.launches, .enqueue, .binding; clnn.launch itself in a tree where it is one
    module): ``ns`` sums their wall time."""

    NAMES = (("launches", "enqueue_launch"), ("enqueue", "_download_outputs"),
             ("binding", "_read_bound"))

    def __init__(self):
        import importlib

        self.ns = 0
        self.saved = []
        for sub, n in self.NAMES:
            try:
                module = importlib.import_module(f"clnn.launch.{sub}")
            except ModuleNotFoundError:  # (clnn/launch.py: one module)
                module = importlib.import_module("clnn.launch")
            self.saved.append((module, n, getattr(module, n)))

    def __enter__(self):
        for module, n, f in self.saved:
            setattr(module, n, self._timed(f))
        return self

    def __exit__(self, *exc):
        for module, n, f in self.saved:
            setattr(module, n, f)

    def _timed(self, f):
        def timed(*args, **kwargs):
            t = time.perf_counter_ns()
            try:
                return f(*args, **kwargs)
            finally:
                self.ns += time.perf_counter_ns() - t
        return timed


def _split_us(pm, req, iterations: int) -> tuple[float, float]:
    """(median execution us, median us of it in the device calls) over ``iterations``."""
    total, inside = [], []
    with DeviceTimer() as dt:
        for _ in range(iterations):
            before = dt.ns
            t = time.perf_counter_ns()
            pm.execute_synchronously(req)
            total.append(time.perf_counter_ns() - t)
            inside.append(dt.ns - before)
    return statistics.median(total) / 1e3, statistics.median(inside) / 1e3


def measure(iterations: int, rounds: int) -> dict:
    device = open_device("opencl")
    model = add_model()
    pm = device.prepare_model(model)
    rng = np.random.default_rng(0)
    inputs = [rng.integers(-128, 128, (1, 16)).astype(np.int8) for _ in range(2)]
    req = make_request(model, inputs)
    for _ in range(3):
        pm.execute_synchronously(req)
    dev, launches = device_only(pm)
    per_round = {"execution": [], "device": [], "python": [], "device_only": [],
                 "python_alone": []}
    load_before = timing.load_average()
    for _ in range(rounds):
        ex, inside = _split_us(pm, req, iterations)
        per_round["execution"].append(ex)
        per_round["device"].append(inside)
        per_round["python"].append(ex - inside)
        per_round["device_only"].append(_median_us(dev, iterations))
        with python_alone(pm):
            per_round["python_alone"].append(_median_us(
                lambda: pm.execute_synchronously(req), iterations))
    load_after = timing.load_average()
    med = {k: round(statistics.median(v), 1) for k, v in per_round.items()}
    # ("device": where the model runs; a one-operation model on the companion, clnn/companion.py)
    return {"model": "ADD of two [1, 16] QUANT8_ASYMM_SIGNED tensors", "launches": launches,
            "device": pm.device.name, "iterations": iterations, "rounds": rounds,
            "execution_us": med["execution"], "device_us": med["device"],
            "python_us": med["python"], "device_only_us": med["device_only"],
            "python_alone_us": round(min(per_round["python_alone"]), 1),
            "round_us": {k: [round(v, 1) for v in vs] for k, vs in per_round.items()},
            "load_average": {"before": load_before, "after": load_after}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", help="also write the result as JSON to this file")
    args = ap.parse_args(argv)
    r = measure(args.iterations, args.rounds)
    print(f"{r['model']} on {r['device']} ({r['launches']} launch): execution "
          f"{r['execution_us']} us = device {r['device_us']} us (enqueue and wait) + Python "
          f"{r['python_us']} us; the launch alone (enqueue + finish) {r['device_only_us']} us; "
          f"the Python path alone (OpenCL calls stubbed) {r['python_alone_us']} us "
          f"(medians; load average {timing.fmt_load(r['load_average']['before'])} -> "
          f"{timing.fmt_load(r['load_average']['after'])})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
