"""``clnn bench prepare --models [NAMES]``: the time to a first result of MediaPipe models
through the HAL (``clnn.tflite.load``, the OpenCL device, ``prepare_model`` without a
compilation cache, one execution), as most NNAPI clients meet it, in fresh processes:

``cold``    empty caches: clnn's cache directory (tuning, the program binaries pyopencl keeps)
            and PoCL's kernel cache point into a new temporary directory;
``second``  a second process on the caches the cold one left (every later process is this
            one: a prepare picks the kernels the one before picked);
``new``     the model on a machine where clnn ran every other model of the run, never this one
            (the caches those processes left; a new model on a warm machine).

The new-model column comes from caches warmed by halves (each half of the models warms a copy
of the caches for the other half, down to one model): about n log2 n extra processes instead
of n (n - 1). The demo model's prepare through the HAL's compilation cache is ``clnn bench
prepare`` without ``--models`` (clnn/bench/bench_prepare.py).

Every process runs with Python's bytecode cache as installed (``PYTHONDONTWRITEBYTECODE``
removed from its environment: pip byte-compiles the packages it installs) and times its
phases, shown as shares of its time to the first result:

``import``    clnn, pyopencl, NumPy and the TFLite reader;
``load``      reading the model, opening the device;
``plan``      shapes and planning (the prepare passes but the tuning);
``tune``      measuring kernel variants (``CLNN_TUNE=fast`` or ``full``: not the default);
``compile``   building the programs (the chains' included) and the warm-up's first launches
              (PoCL compiles a kernel at its first launch);
``zero``      the execution on zero inputs at the end of prepare;
``other``     the rest of prepare (partitioning, the layout pass, constants, the helper);
``first``     the request and the first execution.

The parent adds the process's wall clock (the interpreter's start included) and reports the
1-minute load average: on a loaded machine every figure grows, the compile work most.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

#: steady-state executions timed after the first one (their median)
STEADY_RUNS = 20
#: the phases of a time to the first result, in order (the keys ``<phase>_s`` of a row)
PHASES = ("import", "load", "plan", "tune", "compile", "zero", "other", "first")
COLUMNS = ("cold", "second", "new")


def _prepare_parts(device, prepared, prepare_s: float) -> dict:
    """The phases of ``prepare_s`` (seconds) of ``prepared`` on ``device``."""
    tuner = getattr(device, "tuner", None)
    tune = tuner.spent if tuner is not None and tuner.measured else 0.0
    warm = getattr(prepared, "warm_up_parts", {"launches_s": 0.0, "zero_s": 0.0})
    plan = max(0.0, prepared.build_seconds - tune)
    compile_s = device.programs.build_s + warm["launches_s"] + \
        getattr(prepared.runner, "build_s", 0.0)  # (chains built at prepare)
    other = prepare_s - plan - tune - compile_s - warm["zero_s"]
    return {"plan_s": plan, "tune_s": tune, "compile_s": compile_s, "zero_s": warm["zero_s"],
            "other_s": other}


def _child(t_start: float, path: str) -> dict:
    """One process's time to a first result (run inside the fresh process)."""
    import numpy as np
    import pyopencl
    import pyopencl.invoker  # noqa: F401  (what the first kernel.set_args imports)

    import clnn.tflite
    from clnn import launch, program_cache
    from clnn.cli.run import random_inputs
    from clnn.devices import open_cl_device
    from hal.builder import make_request

    t_import = time.perf_counter()
    imported = clnn.tflite.load(path)
    device = open_cl_device()
    t_load = time.perf_counter()
    prepared = device.prepare_model(imported.model)
    t_prepare = time.perf_counter()
    device = getattr(prepared, "device", device)  # (a small model: its companion device)
    built, first_launches = program_cache.STATS["built"], launch.STATS["first_launches"]
    req = make_request(imported.model, random_inputs(imported))
    r = prepared.execute_synchronously(req)
    t_first = time.perf_counter()
    if r.status != 0:
        return {"error": f"execution failed: {r.status.name} {r.message}"}
    steady = []
    for _ in range(STEADY_RUNS):
        t = time.perf_counter()
        prepared.execute_synchronously(req)
        steady.append(time.perf_counter() - t)
    median = float(np.median(steady))
    return {"import_s": t_import - t_start, "load_s": t_load - t_import,
            "prepare_s": t_prepare - t_load,
            **_prepare_parts(device, prepared, t_prepare - t_load),
            "first_s": t_first - t_prepare, "steady_s": median,
            "to_first_result_s": t_first - t_start, "programs_built": built,
            "compile_build_s": device.programs.build_s,
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


def bench_model(path: str, say=None) -> dict:
    """The cold and second-process columns of one model."""
    with tempfile.TemporaryDirectory(prefix="clnn-first-result-") as caches:
        cold = run_phase(path, caches)
        second = run_phase(path, caches)
    row = {"model": os.path.basename(path), "cold": cold, "second": second}
    if say:
        say(f"{row['model']}: cold {_total(cold)}, second process {_total(second)}")
    return row


def _total(p: dict) -> str:
    return "failed" if "error" in p else f"{p['to_first_result_s']:.2f} s"


def new_model_rows(paths: list[str], caches: str, out: dict, say=None):
    """``out[path]``: the process of each model on copies of ``caches`` warmed by every other
    model of ``paths`` (halves warm a copy for each other, down to one model)."""
    if len(paths) == 1:
        out[paths[0]] = run_phase(paths[0], caches)
        if say:
            say(f"{os.path.basename(paths[0])}: new on a machine warm with the others "
                f"{_total(out[paths[0]])}")
        return
    half = len(paths) // 2
    for mine, others in ((paths[:half], paths[half:]), (paths[half:], paths[:half])):
        with tempfile.TemporaryDirectory(prefix="clnn-new-model-") as copy:
            warmed = os.path.join(copy, "caches")
            shutil.copytree(caches, warmed, symlinks=True)
            for p in others:
                run_phase(p, warmed)
            new_model_rows(mine, warmed, out, say)


def run_first_result_bench(names=None, as_json: bool = False) -> int:
    from clnn.bench import timing
    from clnn.cli.errors import CliError
    from clnn.models.mediapipe import MODELS, NEEDS_MEDIAPIPE_OPS, FetchError, fetch

    try:
        paths = fetch(names or None, say=lambda m: print(m, file=sys.stderr))
    except (FetchError, KeyError) as e:
        raise CliError(f"{e.args[0] if e.args else e}") from e
    picked = [paths[n] for n in sorted(paths) if names or n not in NEEDS_MEDIAPIPE_OPS]
    load_before = timing.load_average()
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    rows = [bench_model(p, say) for p in picked]
    if len(picked) > 1:  # (one model: no other to warm the machine with)
        news: dict = {}
        with tempfile.TemporaryDirectory(prefix="clnn-new-model-") as caches:
            os.makedirs(os.path.join(caches, "clnn"))
            new_model_rows(picked, caches, news, say)
        for row, p in zip(rows, picked):
            row["new"] = news[p]
    result = {"models": rows, "load_average_before": load_before,
              "load_average_after": timing.load_average(), "cpu_count": os.cpu_count(),
              "known_models": len(MODELS)}
    if as_json:
        print(json.dumps(result, indent=1))
    else:
        print_table(rows)
        print(f"load average {load_before} before, {result['load_average_after']} after, "
              f"on {os.cpu_count()} cores (a loaded machine slows the cold column most)")
    return 1 if any("error" in r[c] for r in rows for c in COLUMNS if c in r) else 0


def print_table(rows: list):
    print(f"{'model':34} {'column':6} {'to first':>8} {'process':>8}  "
          + " ".join(f"{p:>7}" for p in PHASES) + "  built")
    for r in rows:
        for column in COLUMNS:
            p = r.get(column)
            if p is None:
                continue
            if "error" in p:
                print(f"{r['model']:34} {column:6} failed: {p['error']}")
                continue
            total = p["to_first_result_s"]
            shares = " ".join(f"{100 * p[f'{ph}_s'] / total:6.0f}%" for ph in PHASES)
            print(f"{r['model']:34} {column:6} {total:7.2f}s {p['process_s']:7.2f}s  {shares}"
                  f"  {p['programs_built']:5}")
