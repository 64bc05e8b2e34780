"""``clnn bench prepare --models [NAMES]``: the time to a first result of MediaPipe models, as
a user who runs ``clnn run`` meets it, split into import, prepare and first execution.

Per model, two fresh processes:

``cold``  empty caches: clnn's cache directory (with the program binaries pyopencl keeps) and
          PoCL's kernel cache point into a new temporary directory (nothing built earlier is
          reused);
``warm``  the same directories, as the cold process left them (programs, PoCL's compiled
          kernels and the model's compilation cache filled).

Both run with Python's bytecode cache as installed (``PYTHONDONTWRITEBYTECODE`` removed from
their environment: pip byte-compiles the packages it installs, ``make`` clnn's own modules).

Each process times its Python imports (clnn's device, the TFLite reader, pyopencl), loading
the model and opening the device, ``prepare`` (through the compilation cache, as ``clnn run``
does by default: clnn/prepare_cached.py), the first execution and the median of a few
steady-state executions after it, then saving the compilation cache (after the first result,
as ``clnn run`` does); the parent adds the process's wall clock (interpreter start
included). The 1-minute load average is reported with the table: on a loaded machine every
figure grows, the compile work most.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

#: steady-state executions timed after the first one (their median)
STEADY_RUNS = 20


def _child(t_start: float, path: str) -> dict:
    """One process's time to a first result (run inside the fresh process)."""
    import numpy as np
    import pyopencl
    import pyopencl.invoker  # noqa: F401  (what the first kernel.set_args imports)

    import clnn.tflite
    from clnn import launch, program_cache
    from clnn.cli.run import random_inputs
    from clnn.devices import open_cl_device
    from clnn.prepare_cached import prepare_with_cache
    from hal.builder import make_request

    t_import = time.perf_counter()
    with open(path, "rb") as f:
        data = f.read()
    imported = clnn.tflite.load(data)
    device = open_cl_device()
    t_load = time.perf_counter()
    prepared, cache, save = prepare_with_cache(device, imported.model, data)
    t_prepare = time.perf_counter()
    built, first_launches = program_cache.STATS["built"], launch.STATS["first_launches"]
    req = make_request(imported.model, random_inputs(imported))
    t_request = time.perf_counter()  # (the inputs: counted in the time to the first result)
    r = prepared.execute_synchronously(req)
    t_first = time.perf_counter()
    if r.status != 0:
        return {"error": f"execution failed: {r.status.name} {r.message}"}
    steady = []
    for _ in range(STEADY_RUNS):
        t = time.perf_counter()
        prepared.execute_synchronously(req)
        steady.append(time.perf_counter() - t)
    t_save = time.perf_counter()
    if save is not None:  # as clnn run: the compilation cache is saved after the first result
        save()
    save_s = time.perf_counter() - t_save
    first = t_first - t_request
    median = float(np.median(steady))
    return {"import_s": t_import - t_start, "load_s": t_load - t_import,
            "prepare_s": t_prepare - t_load, "request_s": t_request - t_prepare,
            "first_execution_s": first,
            "steady_s": median, "first_over_steady": first / median if median else None,
            "to_first_result_s": t_first - t_start, "compilation_cache": cache,
            "cache_save_s": save_s,
            "programs_built": built, "warm_up_s": getattr(prepared, "warm_up_seconds", None),
            "kernel_first_launches_at_prepare": first_launches,
            "kernel_first_launches_at_execution": launch.STATS["first_launches"]
            - first_launches,
            "programs_built_at_execution": program_cache.STATS["built"] - built,
            "pyopencl": pyopencl.VERSION_TEXT, "device": device.name}


_CHILD = ("import time; t = time.perf_counter(); import json, sys; "
          "from clnn.bench.bench_first_result import _child; "
          "print(json.dumps(_child(t, sys.argv[1])))")


def run_phase(path: str, caches: str) -> dict:
    """One fresh process on ``path`` with its caches under ``caches``."""
    env = dict(os.environ, CLNN_CACHE_DIR=os.path.join(caches, "clnn"),
               POCL_CACHE_DIR=os.path.join(caches, "pocl"))
    # Python's own bytecode cache as a user has it (pip byte-compiles what it installs; an
    # environment that turns the writing off would compile clnn's modules in every process)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, path], env=env, capture_output=True,
                          text=True, timeout=1800)
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:] or
                f"exit status {proc.returncode}"}
    row = json.loads(lines[-1])
    row["process_s"] = wall
    return row


def bench_model(path: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="clnn-first-result-") as caches:
        cold = run_phase(path, caches)
        warm = run_phase(path, caches)
    return {"model": os.path.basename(path), "cold": cold, "warm": warm}


def run_first_result_bench(names=None, as_json: bool = False) -> int:
    from clnn.bench import timing
    from clnn.cli.errors import CliError
    from clnn.models.mediapipe import MODELS, NEEDS_MEDIAPIPE_OPS, FetchError, fetch

    try:
        paths = fetch(names or None, say=lambda m: print(m, file=sys.stderr))
    except (FetchError, KeyError) as e:
        raise CliError(f"{e.args[0] if e.args else e}") from e
    load_before = timing.load_average()
    rows = []
    for name in sorted(paths):
        if name in NEEDS_MEDIAPIPE_OPS and not names:
            continue
        rows.append(bench_model(paths[name]))
        if not as_json:
            _print_row(rows[-1], header=len(rows) == 1)
    result = {"models": rows, "load_average_before": load_before,
              "load_average_after": timing.load_average(), "cpu_count": os.cpu_count(),
              "known_models": len(MODELS)}
    if as_json:
        print(json.dumps(result, indent=1))
    else:
        print(f"load average {load_before} before, {result['load_average_after']} after, "
              f"on {os.cpu_count()} cores (a loaded machine slows the cold column most)")
    return 1 if any("error" in r[p] for r in rows for p in ("cold", "warm")) else 0


def _print_row(r: dict, header: bool):
    if header:
        print(f"{'model':38} {'phase':5} {'import':>7} {'load':>6} {'prepare':>8} "
              f"{'first':>8} {'steady':>8} {'total':>8} {'process':>8}  built  cache")
    for phase in ("cold", "warm"):
        p = r[phase]
        if "error" in p:
            print(f"{r['model']:38} {phase:5} failed: {p['error']}")
            continue
        print(f"{r['model']:38} {phase:5} {p['import_s']:6.2f}s {p['load_s']:5.2f}s "
              f"{p['prepare_s']:7.2f}s {p['first_execution_s'] * 1e3:6.1f}ms "
              f"{p['steady_s'] * 1e3:6.1f}ms {p['to_first_result_s']:7.2f}s "
              f"{p['process_s']:7.2f}s  {p['programs_built']:5}  {p['compilation_cache']}")
