"""Where one execution's time goes, per model (issue #36): the Python path, the kernels, and
the rest (enqueue, the device's workers waking, the host's wait).

    python3 benchmarks/time_split.py [MODEL ...] [--rounds 5] [--iterations 300] [--json FILE]

MODEL: a name of the int8 models (``~/.cache/clnn/models/int8/NAME.tflite``, default the four
tinyml ones) or a .tflite path. Per model, in one process, on the OpenCL device, a request
made once and executed through the HAL (``execute_synchronously``, the chains waited for):

- ``wall_us``: the median execution (median of the rounds' medians);
- ``python_us``: the same executions with pyopencl's enqueue calls replaced by no-ops and the
  queue by one whose ``finish`` returns at once (:func:`python_alone`): the HAL and driver path
  alone, its buffer objects and kernel arguments included (the fastest round: what it costs
  when nothing else takes the core);
- ``kernel_us``: each launch's fastest time over the runs, launches one by one with profiling
  events, summed (benchmarks/kernel_minima.py's figure);
- ``rest_us``: wall - python - kernels: enqueueing, the workers' wake-up and the host's wait
  (and, on a loaded machine, the time other work took from them).

The load average is printed: on a shared machine the wall and the rest are noisy, the Python
and kernel figures less so.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.kernel_minima import minima  # noqa: E402
from clnn.bench import timing  # noqa: E402
from clnn.bench.bench_models import load_case  # noqa: E402
from clnn.devices import open_device  # noqa: E402
from hal.builder import make_request  # noqa: E402

INT8 = ("anomaly_detection", "image_classification", "keyword_spotting", "visual_wake_words")


class _Queue:
    """A queue stand-in whose finish returns at once."""

    def finish(self):
        pass


@contextlib.contextmanager
def python_alone(prepared):
    """While the block runs, ``prepared``'s executions enqueue nothing and wait for nothing
    (pyopencl's enqueue calls no-ops, its queue a stand-in): what they cost is the Python
    path's, with the buffer objects and kernel arguments it makes."""
    import pyopencl as cl

    names = ("enqueue_nd_range_kernel", "enqueue_copy", "enqueue_fill_buffer")
    saved = {n: getattr(cl, n) for n in names}
    queue = prepared.queue
    try:
        for n in names:
            setattr(cl, n, lambda *a, **k: None)
        prepared.queue = _Queue()
        yield
    finally:
        for n, f in saved.items():
            setattr(cl, n, f)
        prepared.queue = queue


def median_us(fn, iterations: int) -> float:
    times = []
    for _ in range(iterations):
        t = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) / 1e3


def _path(name: str) -> str:
    return name if name.endswith(".tflite") else \
        os.path.expanduser(f"~/.cache/clnn/models/int8/{name}.tflite")


def split(device, profiling, path: str, rounds: int, iterations: int) -> dict:
    imported, inputs = load_case(path)
    pm = device.prepare_model(imported.model)
    req = make_request(imported.model, inputs)
    pm.execute_synchronously(req)
    pm.wait_chains()

    def run():
        r = pm.execute_synchronously(req)
        assert r.status == 0, r

    for _ in range(20):
        run()
    walls, pys = [], []
    for _ in range(rounds):
        walls.append(median_us(run, iterations))
        with python_alone(pm):
            pys.append(median_us(run, iterations))
    kernels = minima(profiling, path, iterations)["kernel_us"]
    wall, py = statistics.median(walls), min(pys)
    return {"model": os.path.basename(path), "wall_us": round(wall, 1),
            "python_us": round(py, 1), "kernel_us": kernels,
            "rest_us": round(wall - py - kernels, 1),
            "wall_round_us": [round(w, 1) for w in walls]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(INT8))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--json", help="also write the result as JSON to this file")
    args = ap.parse_args(argv)
    device = open_device("opencl")
    profiling = open_device("opencl", profiling=True)
    before = timing.load_average()
    rows = [split(device, profiling, _path(m), args.rounds, args.iterations)
            for m in args.models]
    result = {"device": device.name, "rounds": args.rounds, "iterations": args.iterations,
              "models": rows, "load_average": {"before": before,
                                               "after": timing.load_average()}}
    for r in rows:
        print(f"{r['model']:28} {r['wall_us']:7.1f} us = Python {r['python_us']:5.1f} + "
              f"kernels {r['kernel_us']:6.1f} + enqueue / wake-up / wait {r['rest_us']:6.1f}")
    print(f"load average {timing.fmt_load(before)} -> "
          f"{timing.fmt_load(result['load_average']['after'])}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
