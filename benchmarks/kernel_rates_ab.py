"""Kernel throughput of the MediaPipe models' convolutions, a base commit against the working
tree, on the same machine in one run.

    python3 benchmarks/kernel_rates_ab.py --base COMMIT [--rounds 3] [--reps 10]
        [--base-env NAME=VALUE] [--new-env NAME=VALUE] [--json] [MODEL ...]

For trees whose kernels cannot be compared through ``clnn run --profile`` (a commit from before
the roofline existed, or one whose chains time operations by their cycle counters): each tree's
worker (the base extracted with ``git archive``, as benchmarks/models_ab.py does) prepares the
model, runs it three times, then enqueues every launch of its plans alone on a profiling queue,
``--reps`` times after two untimed runs (median: the layer's data in the caches, as the tuner
measures it); the two workers take turns model by model for ``--rounds`` rounds, and each
operation's time is the median over the rounds of the sum of its launches. FLOP per operation:
2 x outputs x filter taps x input channels (CONV_2D) or x filter taps (DEPTHWISE_CONV_2D), from
each tree's own import. Reported per model and in all: GFLOP/s of the 1x1 (pointwise)
convolutions, the depthwise ones and the other convolutions, and the kernel time of every
operation. Launches alone pay what a chain saves (wake-ups, cold hand-overs): these rates are
below the chained ones of ``clnn run --profile``, alike for both trees. Use ``--new-env
CLNN_DWPW=0`` to keep a depthwise convolution out of its 1x1 convolution's kernel, so that
the two classes are timed apart.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks import models_ab  # noqa: E402
from benchmarks.models_ab import env_pairs, extract  # noqa: E402

WORKER = r"""
import json, statistics, sys
import pyopencl as cl
from clnn.devices import open_device
from clnn.cli.run import ClnnRunner, random_inputs
from clnn.tflite import load
device = open_device("opencl")
queue = cl.CommandQueue(device.context,
                        properties=cl.command_queue_properties.PROFILING_ENABLE)
cases = {}
for line in sys.stdin:
    path, reps = line.split()
    if path not in cases:
        imported = load(path)
        runner = ClnnRunner(imported, device)
        inputs = random_inputs(imported)
        for _ in range(3):
            runner.run(inputs)
        cases[path] = (imported, runner)
    imported, runner = cases[path]
    per = {}
    for part in runner.prepared.partitions:
        for plan in part.plans.values():
            for launch in (plan.launches if plan is not None else ()):
                if launch.kernel is None:
                    continue
                times = []
                for i in range(int(reps) + 2):
                    ev = cl.enqueue_nd_range_kernel(queue, launch.kernel, launch.global_size,
                                                    launch.local_size)
                    queue.finish()
                    if i >= 2:
                        times.append((ev.profile.end - ev.profile.start) * 1e-6)
                row = per.setdefault(str(launch.op_index), {"ms": 0.0, "kernels": []})
                row["ms"] += statistics.median(times)
                row["kernels"].append(launch.name)
    sg = imported.model.main
    for idx, row in per.items():
        op = sg.operations[int(idx)]
        row["type"], row["flop"] = op.type.name, 0
        outs = 1
        for d in sg.operands[op.outputs[0]].dimensions:
            outs *= d
        if op.type.name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            f = list(sg.operands[op.inputs[1]].dimensions)
            row["filter"] = f
            taps = f[1] * f[2] * (f[3] if op.type.name == "CONV_2D" else 1)
            row["flop"] = 2 * outs * taps
    print(json.dumps(per), flush=True)
"""

CLASSES = ("pointwise", "depthwise", "conv")


class Worker(models_ab.Worker):
    def __init__(self, tree: str, extra_env=()):
        super().__init__(tree, extra_env, WORKER)

    def rates(self, path: str, reps: int) -> dict:
        return self.ask(path, reps)


def kind(row: dict) -> str | None:
    if row["type"] == "DEPTHWISE_CONV_2D":
        return "depthwise"
    if row["type"] == "CONV_2D":
        return "pointwise" if row["filter"][1] == row["filter"][2] == 1 else "conv"
    return None


def merge(rounds: list[dict]) -> dict:
    """Per operation: the median over the rounds of its kernel time."""
    out = {}
    for op, row in rounds[0].items():
        out[op] = dict(row, ms=statistics.median(r[op]["ms"] for r in rounds if op in r))
    return out


def summary(per: dict) -> dict:
    """{class: [FLOP, ms]} and the kernel time of every operation."""
    s = {c: [0, 0.0] for c in CLASSES}
    for row in per.values():
        c = kind(row)
        if c is not None:
            s[c][0] += row["flop"]
            s[c][1] += row["ms"]
    s["all_ms"] = sum(row["ms"] for row in per.values())
    return s


def gflops(flop_ms) -> float | None:
    flop, ms = flop_ms
    return flop / ms / 1e6 if ms else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the commit measured as 'before'")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=10, help="timed runs of each launch")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--base-env", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--new-env", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("models", nargs="*", help="model names (default: every model litert runs)")
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    from clnn.bench import timing
    from clnn.bench.bench_models import litert_models
    from clnn.models.mediapipe import fetch

    paths = fetch(args.models or litert_models())
    load = [round(os.getloadavg()[0], 2)]
    rows, totals = [], {side: {c: [0, 0.0] for c in CLASSES} for side in ("base", "new")}
    with tempfile.TemporaryDirectory() as tmp:
        base_tree = os.path.join(tmp, "base")
        os.mkdir(base_tree)
        extract(args.base, base_tree)
        workers = {"base": Worker(base_tree, env_pairs(ap, args.base_env)),
                   "new": Worker(ROOT, env_pairs(ap, args.new_env))}
        try:
            for name, path in paths.items():
                got = {"base": [], "new": []}
                for r in range(args.rounds):
                    for side in timing.turn(["base", "new"], r):
                        got[side].append(workers[side].rates(str(path), args.reps))
                row = {"model": name}
                for side in ("base", "new"):
                    s = summary(merge(got[side]))
                    row[side] = s
                    for c in CLASSES:
                        totals[side][c][0] += s[c][0]
                        totals[side][c][1] += s[c][1]
                rows.append(row)
                if not args.json:
                    _print_row(row)
        finally:
            for w in workers.values():
                w.close()
    load.append(round(os.getloadavg()[0], 2))
    if args.json:
        print(json.dumps({"base": args.base, "rounds": args.rounds, "reps": args.reps,
                          "load_average": load, "models": rows, "totals": totals}, indent=1))
        return 0
    for c in CLASSES:
        b, n = gflops(totals["base"][c]), gflops(totals["new"][c])
        if b and n:
            print(f"all models  {c:9} {b:6.1f} -> {n:6.1f} GFLOP/s ({n / b:.2f}x)")
    print(f"load average {load[0]} -> {load[1]}")
    return 0


def _print_row(row):
    parts = [f"{row['model'][:34]:34} kernels {row['base']['all_ms']:7.2f} -> "
             f"{row['new']['all_ms']:6.2f} ms"]
    for c in CLASSES:
        b, n = gflops(row["base"][c]), gflops(row["new"][c])
        if b and n:
            parts.append(f"{c} {b:5.1f} -> {n:5.1f} ({n / b:.2f}x)")
    print("  ".join(parts), flush=True)


if __name__ == "__main__":
    sys.exit(main())
