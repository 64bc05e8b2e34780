"""Kernel throughput of the MediaPipe models' convolutions, a base commit against the working
tree, on the same machine in one run.

    python3 benchmarks/kernel_rates_ab.py --base COMMIT [--rounds 3] [--reps 10]
        [--base-env NAME=VALUE] [--new-env NAME=VALUE] [--json] [MODEL ...]

For trees whose kernels cannot be compared through ``clnn run --profile`` (a commit from before
the roofline existed, or one whose chains time operations by their cycle counters): each tree's
worker (benchmarks/kernel_rates_worker.py of this tree, run in the base extracted with ``git
archive`` as benchmarks/models_ab.py does, and in the working tree) prepares the model, runs it
three times, then enqueues every launch of its plans alone, chained ones included, on a
profiling queue, ``--reps`` times after two untimed runs (median: the layer's data in the
caches, as the tuner measures it); the two workers take turns model by model for ``--rounds``
rounds, and each operation's time is the median over the rounds of the sum of its launches.
FLOP per operation: 2 x outputs x filter taps x input channels (CONV_2D) or x filter taps
(DEPTHWISE_CONV_2D), from each tree's own import, an operation fused into another counted with
the one whose launches do its work. Reported per model and in all: GFLOP/s of the 1x1
(pointwise) convolutions, the depthwise ones and the other convolutions, and the kernel time of
every operation. Launches alone pay what a chain saves (wake-ups, cold hand-overs): these rates
are below the chained ones of ``clnn run --profile``, alike for both trees. A depthwise
convolution fused into its 1x1 convolution's kernel is its own class, dw+pw; use ``--new-env
CLNN_DWPW=0`` (and ``--base-env``) to keep them apart, so that the two classes are timed each
alone.
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

#: the worker's source, run in each tree (benchmarks/kernel_rates_worker.py)
with open(os.path.join(ROOT, "benchmarks", "kernel_rates_worker.py")) as _f:
    WORKER = _f.read()

#: the classes of operations: a 1x1 convolution, a depthwise one, any other convolution, and a
#: depthwise convolution fused into its 1x1 convolution's kernel (CLNN_DWPW), timed together
CLASSES = ("pointwise", "depthwise", "conv", "dw+pw")


class Worker(models_ab.Worker):
    def __init__(self, tree: str, extra_env=()):
        super().__init__(tree, extra_env, WORKER)

    def rates(self, path: str, reps: int) -> dict:
        return self.ask(path, reps)


def kind(row: dict) -> str | None:
    """The class of an operation's row (:data:`CLASSES`), None for no convolution."""
    types = {t for t, _ in row.get("ops", ())}
    if {"CONV_2D", "DEPTHWISE_CONV_2D"} <= types:
        return "dw+pw"
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
    """GFLOP/s of [FLOP, ms]; None where no time was measured."""
    flop, ms = flop_ms
    return flop / ms / 1e6 if ms else None


def rates(s: dict) -> dict:
    """{class: GFLOP/s (None where no time)} of a :func:`summary`."""
    return {c: gflops(s[c]) for c in CLASSES}


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
                    row[side] = dict(s, gflops=rates(s))
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
                          "load_average": load, "models": rows, "totals": totals,
                          "totals_gflops": {side: rates(t) for side, t in totals.items()}},
                         indent=1))
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
