"""The depthwise -> pointwise fusion against the two launches, inside the models' chains.

    python3 benchmarks/dwpw_chain.py MODEL.tflite... [--rounds 4] [--iterations 10]
                                     [--wall 20] [--dwpw all|on] [--json]

Each model is prepared twice on the OpenCL device, with the fusion wherever a tile fits
(``dwpw`` "all"; ``--dwpw on``: where the device plans it, untuned the class rule) and never
(``dwpw`` "off"), both warmed and chained (``wait_chains``); then
they take turns (clnn.bench.timing.turn), ``--rounds`` rounds of ``--iterations`` profiled
executions each (clnn.cli.run.profile_prepared: chained launches timed by their chain's cycle
counters, as `clnn run --profile` times them; 0: none) and ``--wall`` plain executions timed
end to end.
Per fused layer: its signature (clnn/fusion's dwpw signature), the 1x1 operation's time
fused and the depthwise and 1x1 operations' times apart (medians over the rounds); per model:
the sums and the whole execution's median either way. This is clnn/cli/tune_chain.py's check
over every layer a tile fits, for the device class's rule (clnn/kernels/_defaults.py
``dwpw_rule``), rather than one tuning run's layers.
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


def prepare(device, model, sigs: dict):
    """``model`` prepared on ``device``, the dwpw signatures it fused recorded into ``sigs``
    (1x1 operation -> signature)."""
    from clnn.passes import select

    call = select.DwpwChoices.__call__

    def record(self, op, sig):
        tile = call(self, op, sig)
        if tile is not None:
            sigs[op] = dict(sig, tile=list(tile))
        return tile

    select.DwpwChoices.__call__ = record
    try:
        return device.prepare_model(model)
    finally:
        select.DwpwChoices.__call__ = call


def wall_ms(pm, values, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        pm.run(values)
        out.append((time.perf_counter() - t) * 1e3)
    return out


def measure(path: str, rounds: int, iterations: int, wall: int, mode: str = "all") -> dict:
    from clnn.bench import timing
    from clnn.cli.onnx_run import import_model
    from clnn.cli.run import profile_prepared, random_inputs
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions

    imported = import_model(path)
    model = imported.model
    values = [np.asarray(x) for x in random_inputs(imported)]
    sigs: dict = {}
    base = ClDevice(None, profiling=True, options=DeviceOptions(dwpw=mode))
    fused_pm = prepare(base, model, sigs)
    apart_pm = base.with_options(dwpw="off").prepare_model(model)
    for p in (fused_pm, apart_pm):
        for _ in range(2):
            p.run(values)
        p.wait_chains()
    layers = {j: k for k, j in getattr(fused_pm, "fused_into", {}).items() if j in sigs}
    prof = {"fused": [], "apart": []}
    walls = {"fused": [], "apart": []}
    sides = [("fused", fused_pm), ("apart", apart_pm)]
    for n in range(rounds):
        for name, p in timing.turn(sides, n):
            rows = profile_prepared(p, model, values, iterations) if iterations else []
            prof[name].append({r["operation"]: r["ms"] for r in rows
                               if r.get("operation") is not None})
            walls[name] += wall_ms(p, values, wall)
    out = []
    for j, k in sorted(layers.items()):
        f = statistics.median(r.get(j, 0.0) for r in prof["fused"])
        a = statistics.median(r.get(j, 0.0) + r.get(k, 0.0) for r in prof["apart"])
        dwa = statistics.median(r.get(k, 0.0) for r in prof["apart"])
        out.append({"conv_op": j, "dw_op": k, "signature": sigs[j], "fused_ms": f,
                    "apart_ms": a, "apart_dw_ms": dwa})
    return {"model": os.path.basename(path), "layers": out,
            "wall_ms": {s: statistics.median(v) if v else None for s, v in walls.items()},
            "wall_min_ms": {s: min(v) if v else None for s, v in walls.items()},
            "load": os.getloadavg()}


def describe(s: dict) -> str:
    return (f"{s['h']}x{s['w']}x{s['c']} {s['fh']}x{s['fw']} s{s['sh']} -> {s['N']} "
            f"tile {s['tile']}")


def report(res: list[dict]) -> str:
    out = []
    for m in res:
        f = sum(r["fused_ms"] for r in m["layers"])
        a = sum(r["apart_ms"] for r in m["layers"])
        out.append(f"{m['model']}: {len(m['layers'])} fused layers, fused {f:.3f} ms, apart "
                   f"{a:.3f} ms; execution median fused {m['wall_ms']['fused']:.3f} apart "
                   f"{m['wall_ms']['apart']:.3f} (least {m['wall_min_ms']['fused']:.3f} / "
                   f"{m['wall_min_ms']['apart']:.3f}); load {m['load'][0]:.2f}")
        for r in m["layers"]:
            ratio = r["fused_ms"] / max(r["apart_ms"], 1e-9)
            out.append(f"  op {r['conv_op']:<4} {describe(r['signature']):<44} fused "
                       f"{r['fused_ms']:.4f} apart {r['apart_ms']:.4f} (dw "
                       f"{r['apart_dw_ms']:.4f}) ratio {ratio:.2f}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--wall", type=int, default=20)
    ap.add_argument("--dwpw", default="all", choices=("all", "on"),
                    help="the fused side: the fusion wherever it fits, or as the device plans "
                         "it untuned (the class rule)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = []
    for p in args.models:
        res.append(measure(p, args.rounds, args.iterations, args.wall, args.dwpw))
        print(report(res[-1:]), file=sys.stderr, flush=True)
        print("JSON " + json.dumps(res[-1]), file=sys.stderr, flush=True)
    print(json.dumps(res, indent=1) if args.json else report(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
