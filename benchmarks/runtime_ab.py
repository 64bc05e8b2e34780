"""Steady-state latency of a model placed wholly on one device through the NNAPI runtime
(clnn.nnapi) against the same model on that device's HAL directly, interleaved.

    python3 benchmarks/runtime_ab.py [--models NAME ...] [--built] [--rounds 5]
                                     [--iterations 20] [--device opencl]

Both sides run on one ClDevice. HAL side: ``make_request`` + ``execute_synchronously`` +
``read_outputs`` on the device's prepared model (as ``clnn run`` does). Runtime side: a
Compilation over {DEVICE, reference}, placed by the devices' capabilities (the plan must put
every operation on DEVICE: a model that is not placed wholly there is reported and skipped),
and per run an Execution (``set_input`` / ``set_output`` on NumPy arrays, ``compute``).
Round by round the two sides take turns (the first side alternates), ``--iterations`` timed
runs each per round, after warm-up runs; reported: the median over every run of each side,
their ratio, and the spread of the per-round ratio (the noise), the load average before and
after. MediaPipe models are used only when already in the model cache (never fetched here);
``--built`` adds models built in code (clnn/capabilities_workloads.py). The JSON goes to
benchmarks/results/runtime_ab-<UTC time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DEFAULT_MODELS = ("face_detection_short_range", "iris_landmark")


def cached_models(names):
    """(name, hal model, inputs) of the MediaPipe models already in the cache."""
    from clnn.cli.run import random_inputs
    from clnn.models.mediapipe import _valid, cache_dir
    from clnn.tflite import load

    found, missing = [], []
    for name in names:
        path = os.path.join(cache_dir(), name + ".tflite")
        if not _valid(path, name + ".tflite"):
            missing.append(name)
            continue
        imported = load(path)
        found.append((name, imported.model, random_inputs(imported)))
    return found, missing


def built_models():
    from clnn.capabilities_workloads import block

    out = []
    for name, size in (("built float32 block 112", 112), ("built float32 block 56", 56)):
        model, inputs = block("TENSOR_FLOAT32", size)
        out.append((name, model, inputs))
    return out


def hal_side(device, model, inputs):
    from hal.builder import make_request, read_outputs

    prepared = device.prepare_model(model)

    def run():
        req = make_request(model, inputs)
        r = prepared.execute_synchronously(req)
        assert r.status == 0, r.message
        return read_outputs(model, req, r.output_shapes)
    return run


def runtime_side(nn_device, ref, model, inputs):
    from clnn import nnapi
    from hal.types import NUMPY_DTYPE

    c = nnapi.Compilation.create_for_devices(nnapi.Model.from_hal(model), [nn_device, ref])
    c.finish()
    plan = c.plan()
    on = {plan.device_of(k) for k in range(len(plan.placements))}
    sg = model.main
    outs = [np.empty(sg.operands[i].dimensions, NUMPY_DTYPE[sg.operands[i].type])
            for i in sg.output_indexes]

    def run():
        e = nnapi.Execution(c)
        for k, x in enumerate(inputs):
            e.set_input(k, x)
        for k, o in enumerate(outs):
            e.set_output(k, o)
        e.compute()
        return [o.copy() for o in outs]
    return run, on


def measure(sides: dict, rounds: int, iterations: int, warmup: int) -> dict:
    for fn in sides.values():
        for _ in range(warmup):
            fn()
    times = {k: [] for k in sides}
    per_round = []
    order = list(sides)
    for r in range(rounds):
        medians = {}
        for k in order[r % 2:] + order[: r % 2]:
            ts = []
            for _ in range(iterations):
                t = time.perf_counter()
                sides[k]()
                ts.append(time.perf_counter() - t)
            times[k].extend(ts)
            medians[k] = statistics.median(ts)
        per_round.append(medians["runtime"] / medians["hal"])
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    return {"median_ms": med, "ratio": med["runtime"] / med["hal"],
            "per_round_ratio": per_round,
            "per_round_ratio_spread": (max(per_round) - min(per_round)),
            "runs_per_side": rounds * iterations}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS))
    ap.add_argument("--built", action="store_true", help="also models built in code")
    ap.add_argument("--device", default="opencl")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args(argv)

    from clnn import nnapi
    from clnn.devices import open_device

    device = open_device(args.device)
    nn_device = nnapi.Device(args.device, device)
    ref = nnapi.device_from_spec("reference")
    models, missing = cached_models(args.models)
    if missing:
        print(f"not in the model cache (not fetched): {', '.join(missing)}")
    if args.built or not models:
        models += built_models()
    report = {"device": device.name, "rounds": args.rounds, "iterations": args.iterations,
              "warmup": args.warmup, "missing_models": missing, "models": [],
              "note": "taken on a shared 2-core machine under load (load averages below)"}
    for name, model, inputs in models:
        load_before = os.getloadavg()
        hal_run = hal_side(device, model, inputs)
        rt_run, on = runtime_side(nn_device, ref, model, inputs)
        row = {"model": name, "operations": len(model.main.operations),
               "placed_on": sorted(on), "loadavg_before": [round(x, 2) for x in load_before]}
        if on != {args.device}:
            row["skipped"] = "not placed wholly on the device"
            report["models"].append(row)
            print(f"{name}: placed on {sorted(on)}, not wholly on {args.device}: skipped")
            continue
        a, b = hal_run(), rt_run()
        row["outputs_equal"] = all(np.array_equal(x, y) for x, y in zip(a, b))
        row |= measure({"hal": hal_run, "runtime": rt_run}, args.rounds, args.iterations,
                       args.warmup)
        row["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
        report["models"].append(row)
        m = row["median_ms"]
        print(f"{name}: HAL {m['hal']:.3f} ms, runtime {m['runtime']:.3f} ms, ratio "
              f"{row['ratio']:.3f} (per-round ratios {min(row['per_round_ratio']):.3f}-"
              f"{max(row['per_round_ratio']):.3f}); outputs equal {row['outputs_equal']}; "
              f"load {row['loadavg_before'][0]} -> {row['loadavg_after'][0]}")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = os.path.join(ROOT, "benchmarks", "results", f"runtime_ab-{stamp}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
    print(f"written {os.path.relpath(path, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
