"""``clnn tune MODEL...``: tune the layers of .tflite and .onnx models ahead of time
(clnn/tuning.py).

Each model is prepared on the OpenCL device with the tuner in ``full`` mode (every candidate,
no budget; ``--fast``: the prepare-time candidate set) so that every layer worth tuning gets a
tuning-cache entry; a later process (any model with the same layer shapes) reuses them without
measuring. Prints per layer what was chosen against the heuristic default and the kernel-time
gain, with the load average (a busy machine makes the figures, and so the choices, noisy).
Then (not with ``--fast``) the depthwise -> 1x1 fusions the tuner chose are checked in the
model's own runs, fused against apart, and those faster apart are set apart
(clnn/cli/tune_chain.py). A model whose shapes are known only at an execution is run once on
random inputs, its layers planned and tuned then.
"""

from __future__ import annotations

import json
import os
import sys


def _variant(v) -> str:
    if isinstance(v, dict) and "vw" in v and "tile" not in v:  # depthwise_tile, conv_tile
        rows = {-1: "auto", 0: "driver"}.get(v["rows"], v["rows"])
        if v.get("slide"):
            band = f" bands of {v['r']}" if v.get("r", 1) > 1 else ""
            return f"slide vw {v['vw']}{band} rows {rows}"
        nv = f" nv {v['nv']}" if v.get("nv", 1) > 1 else ""
        return f"{'sweep ' if v.get('sweep') else ''}vw {v['vw']}{nv} tx {v['tx']} rows {rows}"
    if isinstance(v, dict) and set(v) == {"m"}:  # 3x3 path (clnn/kernels/_winograd.py)
        return f"Winograd F({v['m']}x{v['m']},3x3)" if v["m"] else "im2col GEMM"
    if isinstance(v, dict) and "fuse" in v:  # depthwise -> 1x1 (clnn/kernels/_dwpw.py)
        return f"fused tile {'x'.join(map(str, v['tile']))}" if v["fuse"] else "two launches"
    if not isinstance(v, dict) or "tile" not in v:
        return json.dumps(v)
    wg = v.get("wg")
    wg = "auto" if wg == "auto" else ("driver" if wg is None else "x".join(map(str, wg)))
    return f"tile {'x'.join(map(str, v['tile']))} wg {wg}"


def _sig(s) -> str:
    if isinstance(s, dict) and {"M", "N", "K"} <= set(s):
        b = f" x{s['batches']}" if s.get("batches", 1) != 1 else ""
        dt = f" {s['dt']}" if s.get("dt", "f32") != "f32" else ""
        return f"{s['amode']:6} M{s['M']} N{s['N']} K{s['K']}{b}{dt}"
    if isinstance(s, dict) and {"c", "fh", "fw", "oh", "ow", "N"} <= set(s):  # dw -> 1x1
        return f"dw {s['fh']}x{s['fw']}/{s['sw']} {s['oh']}x{s['ow']}x{s['c']} -> {s['N']}"
    if isinstance(s, dict) and {"c", "o", "oh", "ow", "relaxed"} <= set(s):  # 3x3, stride 1
        return f"conv 3x3/1 {s['h']}x{s['w']}x{s['c']} -> {s['o']}"
    if isinstance(s, dict) and {"c", "o", "fh", "fw", "oh", "ow"} <= set(s):  # conv_tile
        return f"conv {s['fh']}x{s['fw']}/{s['sw']} {s['h']}x{s['w']}x{s['c']} -> {s['o']}"
    if isinstance(s, dict) and {"c", "fh", "fw", "oh", "ow"} <= set(s):  # depthwise
        dt = f" {s['dt']}" if s.get("dt", "f32") != "f32" else ""
        return f"dw {s['fh']}x{s['fw']}/{s['sw']} {s['oh']}x{s['ow']}x{s['c']}{dt}"
    return json.dumps(s)


def plan_at_execution(pm, imported):
    """A model whose shapes are known only at an execution (the int8 tinyml models' batch
    dimension) is planned, and so tuned, there: run once on random inputs (unknown
    dimensions 1, as ``clnn run`` takes them)."""
    import numpy as np

    from clnn.cli.run import random_inputs

    planner = getattr(pm, "planner", None)
    if planner is not None and planner.static_shapes() is None:
        pm.run([np.asarray(x) for x in random_inputs(imported)])


def tune_models(paths: list[str], device: str | None = None, fast: bool = False,
                retune: bool = False, as_json: bool = False,
                families: list[str] | None = None) -> int:
    from clnn import tuning
    from clnn.cli import tune_chain
    from clnn.cli.errors import CliError
    from clnn.cli.onnx_run import import_model
    from clnn.cli.run import random_inputs
    from clnn.devices import open_cl_device

    dev = open_cl_device(device, profiling=True)
    # ahead of time: no budget
    tuner = tuning.tuner_for(dev, "fast" if fast else "full", retune=retune, unbounded=True,
                             families=frozenset(families) if families else None)
    load = [round(x, 2) for x in os.getloadavg()]
    report = {"device": dev.name, "load_average": load, "cache": str(tuner.cache.path),
              "models": []}
    failed = 0
    for path in paths:
        first = len(tuner.records)
        try:  # a model that cannot be tuned is reported; the others still are
            imported = import_model(path)
            pm = dev.prepare_model(imported.model)
            if not hasattr(pm, "run"):
                raise CliError(f"{path}: the OpenCL device could not prepare the model")
        except CliError as e:  # one line on stderr, as every command's errors
            failed += 1
            print(f"clnn tune: {e}", file=sys.stderr)
            report["models"].append({"model": os.path.basename(path), "error": str(e)})
            continue
        plan_at_execution(pm, imported)
        recs = tuner.records[first:]
        layers = [{"operation": r.op_index, "family": r.family, "signature": r.signature,
                   "default": r.default, "choice": r.choice, "default_ms": r.default_ms,
                   "best_ms": r.best_ms, "gain": r.gain, "cached": r.cached} for r in recs]
        d = sum(r.default_ms or 0.0 for r in recs if r.best_ms)
        b = sum(r.best_ms or 0.0 for r in recs if r.default_ms)
        # the fusions checked in the model's own (chained) runs: clnn/cli/tune_chain.py
        checks = [] if fast else tune_chain.check(dev, imported.model, pm, recs, tuner,
                                                  random_inputs(imported))
        report["models"].append({"model": os.path.basename(path), "layers": layers,
                                 "default_ms": d, "best_ms": b,
                                 "gain": d / b if b else None, "fusions_in_model": checks})
    if as_json:
        print(json.dumps(report, indent=1))
        return 1 if failed else 0
    print(f"clnn tune on {report['device']} (load average {load}); cache {report['cache']}")
    if max(load) > (os.cpu_count() or 1) * 0.5 and failed < len(paths):
        print("  warning: the machine is busy: timings and so the choices are noisy",
              file=sys.stderr)
    for m in report["models"]:
        if "error" in m:
            print(f"{m['model']}: not tuned (the error above)")
            continue
        n = len(m["layers"])
        print(f"{m['model']}: {n} layer{'s' * (n != 1)} tuned")
        print(f"  {'op':>4}  {'shape':32} {'default':22} {'chosen':22} {'ms default':>10} "
              f"{'ms chosen':>9} {'gain':>6}")
        for r in m["layers"]:
            dm = "" if r["default_ms"] is None else f"{r['default_ms']:.4f}"
            bm = "" if r["best_ms"] is None else f"{r['best_ms']:.4f}"
            g = "" if r["gain"] is None else f"{r['gain']:.2f}x"
            print(f"  {r['operation']:>4}  {_sig(r['signature'])[:32]:32} "
                  f"{_variant(r['default'])[:22]:22} {_variant(r['choice'])[:22]:22} "
                  f"{dm:>10} {bm:>9} {g:>6}{'  (cached)' if r['cached'] else ''}")
        if m["gain"]:
            print(f"  tuned layers: {m['default_ms']:.3f} ms with the defaults, "
                  f"{m['best_ms']:.3f} ms tuned ({m['gain']:.2f}x)")
        checks = m["fusions_in_model"]
        if checks:
            apart = [c for c in checks if c["apart"]]
            print(f"  depthwise -> 1x1 fusions in the model's runs: {len(apart)} of "
                  f"{len(checks)} signatures faster apart (now set apart)")
            for c in checks:
                ops = ", ".join(str(j) for j in c["operations"])
                print(f"    op {ops:12} {_sig(c['signature'])[:32]:32} fused "
                      f"{c['fused_ms']:.4f} ms, apart {c['apart_ms']:.4f} ms"
                      f"{'  -> apart' if c['apart'] else ''}")
    return 1 if failed else 0
