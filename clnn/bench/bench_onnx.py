"""``clnn bench models --onnx``: every ONNX test model (clnn/models/onnx.py) on the clnn
device and on onnxruntime (CPUExecutionProvider, 2 intra-op threads, 1 inter-op) in one run.

Per model: import, prepare (not timed), one untimed run on each side, then ``rounds`` rounds
in which clnn and onnxruntime take turns, each running the same seeded random input
``iterations // rounds`` times (at least once): a change of machine load during the run
reaches both sides alike. Each turn starts once the other side's threads have gone idle
(clnn.bench.timing.settle: onnxruntime's intra-op workers spin on after a run returns, and
clnn's runs right after them had one core of two). Reported: the median of all timed runs of
each side, their ratio (clnn / onnxruntime; above 1 means clnn is slower), the spread of the
per-round medians ((max - min) / median, flagged above clnn.bench.timing.ROUND_SPREAD_LIMIT),
the max error against onnxruntime with the tolerance |a-b| <= 1e-4 + 1e-3 * max|b|, and the share of
operations that run on OpenCL.
The load average is printed before and after.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from clnn.bench import timing
from clnn.cli.onnx_run import ORT_THREADS, OrtRunner
from clnn.cli.run import ClnnRunner, compare, random_inputs
from clnn.devices import open_device
from clnn.importing.formats import load_onnx
from clnn.models.onnx import ONNX_MODELS, FetchError, fetch_onnx, model_shapes


def on_opencl(device, model) -> tuple[int | None, int]:
    """(operations the device runs on OpenCL, operations); (None, n) for a device that is not
    OpenCL (the reference device)."""
    n = len(model.main.operations)
    report = getattr(device, "support_report", None)
    if report is None:
        return None, n
    return sum(1 for row in report(model) if row[2]), n


def bench_onnx_model(path: str, device, iterations: int, rounds: int) -> dict:
    """One model: latency of both sides in interleaved rounds, accuracy, OpenCL share."""
    row: dict = {"model": os.path.basename(path)}
    try:
        imported = load_onnx(path, model_shapes(path))
        inputs = random_inputs(imported)
        runner = ClnnRunner(imported, device)
        ort = OrtRunner(path, ORT_THREADS)
    except Exception as e:  # noqa: BLE001 - report the model and go on with the next
        row["error"] = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
        return row
    per_round = max(1, iterations // rounds)
    outs, _ = runner.run(inputs)  # first runs apart: plans, kernels, onnxruntime's arenas
    ref, _ = ort.run(imported, inputs)
    times, medians = timing.rounds({"clnn": lambda: runner.run(inputs)[1],
                                    "onnxruntime": lambda: ort.run(imported, inputs)[1]},
                                   rounds, per_round)
    clnn_ms = float(np.median(times["clnn"])) * 1e3
    ort_ms = float(np.median(times["onnxruntime"])) * 1e3
    errs = compare(outs, ref)
    cl, total = on_opencl(device, imported.model)
    row.update({"operations": total, "on_opencl": cl,
                "prepare_s": round(runner.prepare_s, 3), "clnn_ms": round(clnn_ms, 3),
                "onnxruntime_ms": round(ort_ms, 3), "ratio": round(clnn_ms / ort_ms, 3),
                "clnn_round_ms": [round(m, 3) for m in medians["clnn"]],
                "onnxruntime_round_ms": [round(m, 3) for m in medians["onnxruntime"]],
                "spread": {side: round(timing.round_spread(m), 3)
                           for side, m in medians.items()},
                "max_abs_err": max(e["max_abs_err"] for e in errs),
                "max_rel_err": max(e["max_rel_err"] for e in errs),
                "within_tolerance": all(e["within_tolerance"] for e in errs)})
    row["unstable"] = any(s > timing.ROUND_SPREAD_LIMIT for s in row["spread"].values())
    return row


def run_onnx_bench(iterations: int = 20, rounds: int = 5, as_json: bool = False,
                   names=None, device_name: str = "opencl", plot: str | None = None) -> int:
    from clnn.cli.errors import CliError

    try:
        paths = fetch_onnx(names, say=lambda m: print(m, file=sys.stderr))
    except (FetchError, KeyError) as e:
        raise CliError(e.args[0] if e.args else str(e)) from None
    try:
        import onnxruntime  # noqa: F401 - the peer every row is measured against
    except ImportError:
        raise CliError("clnn bench models --onnx needs onnxruntime (pip install "
                       "'clnn[bench]')") from None
    device = open_device(device_name)
    load_before = timing.load_average()
    if not as_json:
        print(f"device: {device.name}; onnxruntime (CPU) with {ORT_THREADS} threads; "
              f"{rounds} interleaved rounds of {max(1, iterations // rounds)} runs each; "
              f"load average {timing.fmt_load(load_before)}")
    t0 = time.perf_counter()
    rows = []
    for name in sorted(paths):
        rows.append(bench_onnx_model(paths[name], device, iterations, rounds))
        if not as_json:
            _print_row(rows[-1])
    load_after = timing.load_average()
    warnings = timing.rounds_warnings(rows, load_before, load_after)
    result = {"device": device.name, "onnxruntime_threads": ORT_THREADS,
              "iterations": iterations, "rounds": rounds,
              "load_average": {"before": load_before, "after": load_after},
              "seconds": round(time.perf_counter() - t0, 1), "models": rows,
              "warnings": warnings}
    if as_json:
        print(json.dumps(result, indent=1))
    else:
        print(f"ratio = clnn / onnxruntime (median of all timed runs); load average after: "
              f"{timing.fmt_load(load_after)}")
    for w in warnings:
        print(f"clnn bench models: warning: {w}", file=sys.stderr)
    if plot is not None:
        from clnn.bench.plots import bench_figure

        bench_figure(plot, rows, device.name, peer="onnxruntime")
        print(f"clnn bench models: wrote {plot}", file=sys.stderr)
    return 0 if all(r.get("within_tolerance") for r in rows) else 1


def _print_row(r: dict):
    if "error" in r:
        print(f"{r['model']:26} {r['error']}")
        return
    flag = "  UNSTABLE" if r["unstable"] else ""
    cl = "-" if r["on_opencl"] is None else r["on_opencl"]
    print(f"{r['model']:26} clnn {r['clnn_ms']:9.2f} ms  onnxruntime {r['onnxruntime_ms']:8.2f} "
          f"ms  ratio {r['ratio']:6.2f}  on OpenCL {cl}/{r['operations']}  "
          f"max err {r['max_abs_err']:.2e} "
          f"({'ok' if r['within_tolerance'] else 'OUT OF TOLERANCE'}){flag}")


__all__ = ["ONNX_MODELS", "bench_onnx_model", "on_opencl", "run_onnx_bench"]
