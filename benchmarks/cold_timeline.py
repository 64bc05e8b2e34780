"""Timeline of a cold first result (issue #37): which thread does what, when, and when the
main thread could not run Python.

    python3 benchmarks/cold_timeline.py MODEL.tflite [--json]

In a fresh process on empty caches (clnn's and PoCL's in a new temporary directory), a model
is read (``clnn.tflite.load``), the OpenCL device opened, the model prepared through the HAL
and executed once, as ``clnn bench prepare --models`` times it. The phases are the spans of
the functions it wraps (seconds from the process's start; CPU seconds of the thread that ran
them): the compiler's warm-up (``compile_and_link``, on its own thread), the planning, the
chains' sources (``chain_plan``), their programs' builds (``build_program``: clBuildProgram),
the binaries kept (``save_binary``: PoCL generates a program's code at its first binary query
or launch), the zero execution. A sampling thread looks at the main thread every 2 ms: a
sample later than 20 ms is a span in which another thread held the GIL (a pyopencl call that
keeps it while the implementation works), printed as ``gil_gaps``.

An implementation that compiles one program at a time per process (PoCL: one LLVM user at a
time) runs the warm-up and the chains' builds one after the other whatever thread calls them:
the spans of ``compile_and_link``, ``build_program`` and ``save_binary`` then follow one
another, and the first result waits for their sum.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import time; T0 = time.perf_counter()
import functools, json, sys, threading
SPANS, GAPS, DONE = [], [], []

def wrap(owner, attr, name):
    f = getattr(owner, attr)
    @functools.wraps(f)
    def timed(*a, **k):
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return f(*a, **k)
        finally:
            SPANS.append({"name": name, "thread": threading.current_thread().name,
                          "start": t0 - T0, "end": time.perf_counter() - T0,
                          "cpu": time.thread_time() - c0})
    setattr(owner, attr, timed)

def sample():
    main, last = threading.main_thread().ident, time.perf_counter()
    while not DONE:
        time.sleep(0.002)
        now = time.perf_counter()
        if now - last > 0.02:
            fr = sys._current_frames().get(main)
            GAPS.append({"end": now - T0, "seconds": now - last,
                         "main_in": fr.f_code.co_name if fr else None})
        last = now

threading.Thread(target=sample, daemon=True).start()
import pyopencl.invoker  # noqa: F401
import clnn.tflite
from clnn import chain, execution, plan, prepared_model, program_cache
from clnn.program_cache import compiler
from clnn.cli.run import random_inputs
from clnn.devices import open_cl_device
from hal.builder import make_request
imported_at = time.perf_counter() - T0
for owner, attr in ((compiler, "compile_and_link"), (program_cache, "build_program"),
                    (program_cache.ProgramCache, "save_binary"),
                    (program_cache.ProgramCache, "join_warm"),
                    (program_cache.ProgramCache, "build_together"),
                    (plan.Planner, "_plan_static"), (chain, "chain_plan"),
                    (execution.Chained, "build_chains"),
                    (prepared_model.ClPreparedModel, "_run_zero")):
    wrap(owner, attr, attr)
wrap(clnn.tflite, "load", "tflite.load")
model = clnn.tflite.load(sys.argv[1])
t = time.perf_counter(); device = open_cl_device()
SPANS.append({"name": "open_cl_device", "thread": "MainThread", "start": t - T0,
              "end": time.perf_counter() - T0, "cpu": None})
t = time.perf_counter(); prepared = device.prepare_model(model.model)
SPANS.append({"name": "prepare_model", "thread": "MainThread", "start": t - T0,
              "end": time.perf_counter() - T0, "cpu": None})
prepared.execute_synchronously(make_request(model.model, random_inputs(model)))
first = time.perf_counter() - T0
DONE.append(1)
print(json.dumps({"imported_s": imported_at, "first_result_s": first,
                  "spans": sorted(SPANS, key=lambda s: s["start"]), "gil_gaps": GAPS,
                  "process_cpu_s": time.process_time()}))
"""


def timeline(path: str) -> dict:
    """The timeline of ``path``'s cold first result, in a fresh process on empty caches."""
    with tempfile.TemporaryDirectory(prefix="clnn-timeline-") as caches:
        env = dict(os.environ, CLNN_CACHE_DIR=os.path.join(caches, "clnn"),
                   POCL_CACHE_DIR=os.path.join(caches, "pocl"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # (as clnn bench prepare --models runs)
        proc = subprocess.run([sys.executable, "-c", CHILD, path], env=env, text=True,
                              capture_output=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{path}: {(proc.stderr or proc.stdout).strip()[-2000:]}")
    result = json.loads(lines[-1])
    result["model"] = os.path.basename(path)
    result["load_average"] = os.getloadavg()[0]
    return result


def show(result: dict) -> None:
    print(f"{result['model']}: first result {result['first_result_s']:.3f} s (imports "
          f"{result['imported_s']:.3f} s), process CPU {result['process_cpu_s']:.2f} s, "
          f"load average {result['load_average']:.2f}")
    for s in result["spans"]:
        cpu = "" if s["cpu"] is None else f"  cpu {s['cpu']:.3f}"
        print(f"  {s['start']:6.3f} {s['end']:6.3f}  {s['thread'][:20]:20s} {s['name']}{cpu}")
    for g in result["gil_gaps"]:
        print(f"  main thread held off {g['seconds']:.3f} s until {g['end']:.3f} "
              f"(in {g['main_in']})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help=".tflite paths")
    ap.add_argument("--json", action="store_true", help="print the timelines as JSON")
    args = ap.parse_args()
    results = [timeline(p) for p in args.models]
    if args.json:
        print(json.dumps(results, indent=1))
    else:
        for r in results:
            show(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
