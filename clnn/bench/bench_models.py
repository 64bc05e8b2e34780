"""``clnn bench models``: every MediaPipe model (clnn.models.mediapipe) on the OpenCL device and
with ai-edge-litert (2 threads) in the same run: median latency of each, their ratio (clnn /
litert; above 1 means clnn is slower) and the max error against litert (for a quantized model,
against litert's builtin kernels, which clnn matches bit for bit; XNNPACK's int8 kernels, the
ones timed, round otherwise). Streaming models are skipped (clnn run --stream N).

Each model: import, prepare (timed apart, through the compilation cache as ``clnn run``), the
first result, then clnn's executions back to back until :data:`FIRST_SECONDS` after
``prepare_model`` returned (the first seconds: what a user's executions meet right after
prepare, with whatever the driver still builds or tunes in the background at work; nothing is
waited for), one untimed first run of litert, then ``--rounds`` rounds in which clnn and
litert take turns, each running the same seeded random input ``--iterations`` times per round:
a change of machine load during the run reaches both sides alike. The rounds are the steady
state: before them clnn waits for the background work (``wait_chains``). Reported per model:
the median of all timed runs of each side and their ratio, the per-round medians and their
spread ((max - min) / median, flagged above clnn.bench.timing.ROUND_SPREAD_LIMIT), the median
latency of the first seconds' executions and its ratio to clnn's steady state; for the run:
the load average before and after (a warning above half the cores) and the median ratio over
the models.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from clnn.bench import timing
from clnn.cli.run import (
    LITERT_THREADS,
    ClnnRunner,
    LiteRtRunner,
    compare,
    latency_stats,
    random_inputs,
    read_model_bytes,
)
from clnn.devices import open_device
from clnn.models.mediapipe import MODELS, NEEDS_MEDIAPIPE_OPS, FetchError, fetch
from clnn.suites.litert_builtin import expected_outputs, quantized
from hal.builder_requests import make_request
from hal.errors import ErrorStatus, HalError

#: seconds after prepare_model returns whose executions make the first-seconds column
FIRST_SECONDS = 1.0


def litert_models() -> list[str]:
    """Every model ai-edge-litert runs (the others need MediaPipe's custom operators)."""
    return [m for m in sorted(MODELS) if m not in NEEDS_MEDIAPIPE_OPS]


def load_case(path: str):
    """The imported model and its seeded random inputs, which every side of a benchmark runs."""
    from clnn.tflite import load

    imported = load(path)
    return imported, random_inputs(imported)


def open_litert(path: str) -> LiteRtRunner:
    """ai-edge-litert on the model file with the threads every benchmark gives it."""
    return LiteRtRunner(path, LITERT_THREADS)


def median_ms(times: list[float]) -> float:
    return latency_stats(times)["median_ms"]


def accuracy(outs, ref) -> dict:
    """Max errors over all outputs against litert's, and whether all are within tolerance."""
    errs = compare(outs, ref)
    return {"max_abs_err": max(e["max_abs_err"] for e in errs),
            "max_rel_err": max(e["max_rel_err"] for e in errs),
            "within_tolerance": all(e["within_tolerance"] for e in errs)}


def first_seconds(runner, inputs, ready: float, first_s: float,
                  window: float = FIRST_SECONDS) -> list[float]:
    """Seconds of each clnn execution in the ``window`` seconds after ``ready`` (when
    prepare_model returned): the first one's (``first_s``), then executions back to back
    through the HAL until the window ends, as a user's would run (the runner's wait for the
    background chains is not made)."""
    model, times = runner.imported.model, [first_s]
    while time.perf_counter() - ready < window:
        req = make_request(model, inputs)
        t0 = time.perf_counter()
        r = runner.prepared.execute_synchronously(req)
        times.append(time.perf_counter() - t0)
        if r.status != ErrorStatus.NONE:
            raise HalError(f"execution failed: {r.message or r.status.name}", r.status)
    return times


def bench_model(path: str, device, iterations: int, use_cache: bool = True,
                rounds: int = 5, first_window: float = FIRST_SECONDS) -> dict:
    """One model: its first seconds (``first_window``: their length), then ``rounds``
    interleaved rounds of ``iterations`` runs on each side."""
    row: dict = {"model": os.path.basename(path)}
    try:
        litert = open_litert(path)
    except Exception as e:  # not loadable by TFLite itself: nothing to compare with
        row["error"] = f"ai-edge-litert cannot load it: {str(e).splitlines()[0]}"
        return row
    try:
        imported, inputs = load_case(path)
        if imported.states:  # its executions are frames of one stream, not independent runs
            row["error"] = (f"skipped: a streaming model ({len(imported.states)} state "
                            "variables); clnn run --stream N times its frames")
            return row
        runner = ClnnRunner(imported, device, read_model_bytes(path) if use_cache else None)
        t0 = ready = time.perf_counter()
        outs, run_s = runner.run(inputs)
        first_s = time.perf_counter() - t0
        runner.save_cache()  # after the first result, as clnn run does
        window = first_seconds(runner, inputs, ready, run_s, first_window)
        ref = expected_outputs(path, imported, inputs, litert.run(imported, inputs)[0])
        times, medians = timing.rounds({"clnn": lambda: runner.run(inputs)[1],
                                        "litert": lambda: litert.run(imported, inputs)[1]},
                                       rounds, iterations)
    except Exception as e:  # report and go on with the next model
        row["error"] = f"clnn: {type(e).__name__}: {getattr(e, 'reason', e)}"
        return row
    clnn_ms, litert_ms = median_ms(times["clnn"]), median_ms(times["litert"])
    spread = {side: round(timing.round_spread(m), 3) for side, m in medians.items()}
    row.update({"operations": len(imported.model.main.operations),
                "prepare_s": round(runner.prepare_s, 3), "compilation_cache": runner.cache,
                "first_execution_s": round(first_s, 4),
                "clnn_ms": round(clnn_ms, 3), "litert_ms": round(litert_ms, 3),
                "first_seconds": {"window_s": first_window, "runs": len(window),
                                  "median_ms": round(median_ms(window), 3),
                                  "vs_steady": round(median_ms(window) / clnn_ms, 2)},
                "ratio": round(clnn_ms / litert_ms, 2),
                "clnn_round_ms": [round(m, 3) for m in medians["clnn"]],
                "litert_round_ms": [round(m, 3) for m in medians["litert"]],
                "spread": spread,
                "unstable": max(spread.values()) > timing.ROUND_SPREAD_LIMIT,
                "compared_with": "litert builtin kernels" if quantized(imported.model)
                else "litert", **accuracy(outs, ref)})
    return row


def run_models_bench(iterations: int = 20, as_json: bool = False, names=None,
                     device_name: str = "opencl", plot: str | None = None,
                     use_cache: bool = True, rounds: int = 5, int8: bool = False) -> int:
    """The MediaPipe models, or with ``int8`` the int8 ones (clnn/models/int8.py)."""
    try:
        if int8:
            from clnn.models.int8 import fetch_int8

            paths = fetch_int8(names, say=lambda m: print(m, file=sys.stderr))
        else:
            paths = fetch(names, say=lambda m: print(m, file=sys.stderr))
    except (FetchError, KeyError) as e:
        print(f"clnn bench models: {e.args[0] if e.args else e}", file=sys.stderr)
        return 1
    try:
        device = open_device(device_name)
    except Exception as e:
        print(f"clnn bench models: cannot open the {device_name} device: {e}", file=sys.stderr)
        return 1
    load_before = timing.load_average()
    if not as_json:
        print(f"device: {device.name}; ai-edge-litert with {LITERT_THREADS} threads; "
              f"{rounds} interleaved rounds of {iterations} runs each; load average "
              f"{timing.fmt_load(load_before)}")
    rows = []
    for name in sorted(paths):
        if name in NEEDS_MEDIAPIPE_OPS and names is None:
            rows.append({"model": name, "error": "skipped: needs MediaPipe custom operators "
                         "(ai-edge-litert cannot load it either)"})
            continue
        rows.append(bench_model(paths[name], device, iterations, use_cache, rounds))
        if not as_json:
            _print_row(rows[-1])
    load_after = timing.load_average()
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    warnings = timing.rounds_warnings(rows, load_before, load_after)
    result = {"device": device.name, "litert_threads": LITERT_THREADS,
              "iterations": iterations, "rounds": rounds,
              "load_average": {"before": load_before, "after": load_after},
              "median_ratio": round(float(np.median(ratios)), 3) if ratios else None,
              "max_ratio": max(ratios) if ratios else None, "models": rows,
              "warnings": warnings}
    if as_json:
        print(json.dumps(result, indent=1))
    else:
        if ratios:
            print(f"median ratio {result['median_ratio']:.2f}, largest {max(ratios):.2f} "
                  f"over {len(ratios)} models")
        print(f"ratio = clnn / litert (median of all timed runs); load average after: "
              f"{timing.fmt_load(load_after)}")
    for w in warnings:
        print(f"clnn bench models: warning: {w}", file=sys.stderr)
    if plot is not None:
        from clnn.bench.plots import bench_figure

        bench_figure(plot, rows, device.name)
        print(f"clnn bench models: wrote {plot}", file=sys.stderr)
    ok = all(r.get("within_tolerance") for r in rows if r["model"] not in NEEDS_MEDIAPIPE_OPS)
    return 0 if ok else 1


def _print_row(r: dict):
    if "error" in r:
        print(f"{r['model']:40} {r['error']}")
        return
    print(f"{r['model']:40} prepare {r['prepare_s']:6.2f} s ({r['compilation_cache']:4}) first "
          f"{r['first_execution_s'] * 1e3:8.1f} ms  clnn {r['clnn_ms']:9.2f} ms  "
          f"litert {r['litert_ms']:8.2f} ms  "
          f"ratio {r['ratio']:6.2f}  first {r['first_seconds']['window_s']:g} s "
          f"{r['first_seconds']['median_ms']:8.2f} ms "
          f"({r['first_seconds']['vs_steady']:.2f} x steady)  max err {r['max_abs_err']:.2e} "
          f"({'ok' if r['within_tolerance'] else 'OUT OF TOLERANCE'})"
          f"{'  UNSTABLE' if r['unstable'] else ''}")


__all__ = ["FIRST_SECONDS", "MODELS", "accuracy", "bench_model", "first_seconds",
           "litert_models", "load_case", "median_ms", "open_litert", "run_models_bench"]
