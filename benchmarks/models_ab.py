"""Before / after latency of the MediaPipe models on the OpenCL device, in one run.

    python3 benchmarks/models_ab.py --base COMMIT [--iterations 10] [--rounds 3] [--json]
                                    [--int8] [MODEL ...]

The clnn of ``COMMIT`` (extracted with ``git archive`` into a temporary directory) and the
working tree each run in a worker process that imports, prepares and warms every model once;
then, model by model and round by round, the two workers and ai-edge-litert (2 threads, in this
process) take turns, each first in turn: ``--iterations`` timed executions each per round, so
that load changes on a shared machine hit all three alike. Reported: the median over every round
of each, the ratios to litert, the speed-up, the fastest execution of each clnn side (less
sensitive to a loaded machine than the medians), whether the working tree's outputs match
litert (clnn run's tolerance; a quantized model's against litert's builtin kernels, which
clnn matches bit for bit: XNNPACK's int8 kernels requantize otherwise), and the load average
before and after each model with the share of CPU time the hypervisor stole meanwhile (a
virtual machine's slow phase, which the load average does not show; Linux). ``--int8``:
the int8 models of ``clnn models fetch --int8`` (clnn/models/int8.py) instead of the MediaPipe
ones.

Loading, the seeded inputs, the litert side, the medians and the tolerance are those of
``clnn bench models`` (clnn/bench/bench_models.py); only the worker is written out here,
since it also runs in the base commit's tree and so may use only what both trees have.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKER = r"""
import json, os, sys, time
import numpy as np
try:  # the layout since clnn/tools was split by job
    from clnn.models.mediapipe import fetch
    from clnn.devices import open_device
    from clnn.cli.run import ClnnRunner, random_inputs
except ImportError:  # a base commit from before the split
    from clnn.tools.models import fetch
    from clnn.tools.devices import open_device
    from clnn.tools.run import ClnnRunner, random_inputs
from clnn.tflite import load
device = open_device("opencl")
runners = {}
for line in sys.stdin:
    name, n, out = line.split()
    if name not in runners:
        path = name if os.path.isabs(name) else fetch([name])[name]
        imported = load(path)
        inputs = random_inputs(imported)
        runner = ClnnRunner(imported, device)
        outs, _ = runner.run(inputs)
        runners[name] = (runner, inputs)
        np.savez(out, *outs)
    runner, inputs = runners[name]
    times = [runner.run(inputs)[1] for _ in range(int(n))]
    print(json.dumps(times), flush=True)
"""


#: the int8 models of ``--int8`` by default: the MLPerf Tiny models of issue #36
INT8_TINYML = ("anomaly_detection", "image_classification", "keyword_spotting",
               "visual_wake_words")
#: the sides of a round; round r starts with the (r mod 3)-th (timing.turn)
SIDES = ["base", "new", "litert"]


class Worker:
    """A worker process running ``script`` (default :data:`WORKER`) in ``tree``."""

    def __init__(self, tree: str, extra_env=(), script: str = WORKER):
        env = dict(os.environ, PYTHONPATH=tree)
        env.update(dict(extra_env))
        self.proc = subprocess.Popen([sys.executable, "-c", script], cwd=tree, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)

    def ask(self, name: str, *args):
        """One request line (``name`` and ``args``) to the worker; its JSON answer."""
        self.proc.stdin.write(" ".join(str(a) for a in (name, *args)) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker failed on {name}")
        return json.loads(line)

    def times(self, name: str, n: int, out: str) -> list[float]:
        return self.ask(name, n, out)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def extract(commit: str, into: str):
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)


def env_pairs(ap, items: list[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name:
            ap.error(f"{item!r} is not NAME=VALUE")
        out.append((name, value))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the commit measured as 'before'")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--base-env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable set for the base worker only (with --base "
                    "HEAD: the same code under two settings, e.g. POCL_WORK_GROUP_"
                    "SPECIALIZATION=1)")
    ap.add_argument("--new-env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable set for the working tree's worker only")
    ap.add_argument("--int8", action="store_true",
                    help="the int8 models (clnn models fetch --int8; default: the MediaPipe ones)")
    ap.add_argument("models", nargs="*", help="model names (default: every model litert runs; "
                    "with --int8 the four MLPerf Tiny models)")
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    from clnn.bench import timing
    from clnn.bench.bench_models import accuracy, litert_models, load_case, median_ms, open_litert
    from clnn.cli.run import LITERT_THREADS
    from clnn.models.mediapipe import fetch
    from clnn.suites.litert_builtin import expected_outputs

    if args.int8:
        from clnn.models.int8 import fetch_int8

        paths = fetch_int8(args.models or list(INT8_TINYML))
    else:
        paths = fetch(args.models or litert_models())
    names = list(paths)  # as fetch spells them (a name without its .tflite suffix is one)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base_tree = os.path.join(tmp, "base")
        os.mkdir(base_tree)
        extract(args.base, base_tree)
        base = Worker(base_tree, env_pairs(ap, args.base_env))
        new = Worker(ROOT, env_pairs(ap, args.new_env))
        try:
            for name in names:
                load_before, ticks = os.getloadavg()[0], timing.cpu_ticks()
                imported, inputs = load_case(paths[name])
                litert = open_litert(paths[name])
                # a quantized model: litert's builtin kernels (XNNPACK requantizes otherwise)
                ref = expected_outputs(paths[name], imported, inputs,
                                       litert.latency(imported, inputs, 1)[0])
                t = {"base": [], "new": [], "litert": []}
                out = os.path.join(tmp, "new.npz")
                for r in range(args.rounds):  # each side first in turn (timing.rounds)
                    for side in timing.turn(SIDES, r):
                        if side == "base":
                            t["base"] += base.times(paths[name], args.iterations,
                                                    os.path.join(tmp, "b.npz"))
                        elif side == "new":
                            t["new"] += new.times(paths[name], args.iterations, out)
                        else:
                            t["litert"] += litert.latency(imported, inputs, args.iterations)[1]
                got = np.load(out)
                outs = [got[f"arr_{k}"] for k in range(len(got.files))]
                ms = {k: median_ms(v) for k, v in t.items()}
                rows.append({"model": name, "before_ms": round(ms["base"], 3),
                             "after_ms": round(ms["new"], 3),
                             "litert_ms": round(ms["litert"], 3),
                             "ratio_before": round(ms["base"] / ms["litert"], 2),
                             "ratio_after": round(ms["new"] / ms["litert"], 2),
                             "speedup": round(ms["base"] / ms["new"], 2),
                             "before_min_ms": round(min(t["base"]) * 1e3, 3),
                             "after_min_ms": round(min(t["new"]) * 1e3, 3),
                             "litert_min_ms": round(min(t["litert"]) * 1e3, 3),
                             "within_tolerance": accuracy(outs, ref)["within_tolerance"],
                             "load_average": [round(load_before, 2),
                                              round(os.getloadavg()[0], 2)],
                             "steal": _rounded(timing.steal_share(ticks, timing.cpu_ticks()))})
                if not args.json:
                    _print_row(rows[-1])
        finally:
            base.close()
            new.close()
    if args.json:
        print(json.dumps({"base": args.base, "iterations": args.iterations,
                          "rounds": args.rounds, "litert_threads": LITERT_THREADS,
                          "models": rows}, indent=1))
    return 0 if all(r["within_tolerance"] for r in rows) else 1


def _rounded(share):
    return None if share is None else round(share, 3)


def _print_row(r):
    steal = "" if r.get("steal") is None else f"  steal {100 * r['steal']:.1f}%"
    print(f"{r['model']:34} before {r['before_ms']:8.2f} ms ({r['ratio_before']:5.2f}x)  "
          f"after {r['after_ms']:7.2f} ms ({r['ratio_after']:5.2f}x)  litert "
          f"{r['litert_ms']:6.2f} ms  speed-up {r['speedup']:5.2f}  "
          f"{'ok' if r['within_tolerance'] else 'OUT OF TOLERANCE'}  load "
          f"{r['load_average'][0]:.2f}-{r['load_average'][1]:.2f}{steal}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
