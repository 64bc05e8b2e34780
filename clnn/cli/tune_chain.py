"""`clnn tune`'s check of the depthwise -> 1x1 fusions in the model's own runs.

The tuner (clnn/kernels/_dwpw_variants.py) measures a fused layer against its two launches on
scratch buffers (in a chain of the layer's own launches where the device chains:
clnn.tuning.chained_kernels). In a model's run the launches are chained with the model's other
layers (clnn/chain.py): the cores keep their rows from layer to layer, so the two launches lose
less than on a layer's own, and the scratch layer's choice does not always hold there.
Measured on the 2-core Zen 3 VM (chain-profiled, one prepared model with the fusions and one
without, taking turns, before the tuner chained): face_detection_full_range_sparse's 23 fused
layers 2.42 ms fused against 2.05 apart (20 faster apart), face_landmark's 15 1.28 against
1.38 (3 faster apart).

So after a model's layers are tuned, the model is prepared a second time without those
fusions, both run in turns (``ROUNDS`` rounds of ``ITERATIONS`` profiled executions, each
operation timed as `clnn run --profile` times it: chained launches by their chain's cycle
counters), and a fused signature whose layers took longer fused than their depthwise and 1x1
launches apart (summed over the model's layers of that signature, medians over the rounds) gets
the tuning entry ``{"fuse": false}``, with both times (``chain_ms``) and the standalone choice
kept in the entry. A later prepare reads it as any cached choice (the next `clnn tune` does not
revisit it). Models are checked in the order given: a signature set apart by one model is not
fused in the next.
"""

from __future__ import annotations

import numpy as np

#: rounds (each side once per round, the first side alternating) and profiled executions per
#: round and side
ROUNDS = 4
ITERATIONS = 10


def fused_layers(pm, records: list) -> dict[int, tuple[int, object]]:
    """1x1 CONV_2D operation -> (the depthwise operation fused into it, its dwpw signature):
    the layers the tuner chose to fuse (``records``: clnn.tuning.Record of this prepare)."""
    sigs = {r.op_index: r.signature for r in records
            if r.family == "dwpw" and isinstance(r.choice, dict) and r.choice.get("fuse")}
    fused = getattr(pm, "fused_into", {})
    return {j: (k, sigs[j]) for k, j in fused.items() if j in sigs}


def _times(rows: list) -> dict[int, float]:
    return {r["operation"]: r["ms"] for r in rows if r.get("operation") is not None}


def decide(layers: dict, fused_rounds: list[dict], apart_rounds: list[dict]) -> list[dict]:
    """Per signature of ``layers`` (:func:`fused_layers`): the median over the rounds of its
    layers' time fused (the 1x1 operation's row) and apart (the depthwise and 1x1 rows), and
    whether apart was faster. ``*_rounds``: per round, operation -> ms."""
    from clnn.tuning import TuningCache

    by_sig: dict[str, dict] = {}
    for j, (_, sig) in sorted(layers.items()):
        d = by_sig.setdefault(TuningCache.key("dwpw", sig), {"signature": sig, "operations": []})
        d["operations"].append(j)
    out = []
    for d in by_sig.values():
        ops = d["operations"]
        f = [sum(r.get(j, 0.0) for j in ops) for r in fused_rounds]
        a = [sum(r.get(j, 0.0) + r.get(layers[j][0], 0.0) for j in ops) for r in apart_rounds]
        fm, am = float(np.median(f)), float(np.median(a))
        out.append({"signature": d["signature"], "operations": ops, "fused_ms": fm,
                    "apart_ms": am, "apart": am < fm})
    return out


def check(dev, model, pm, records: list, tuner, inputs) -> list[dict]:
    """Check the fusions ``pm`` (``model`` prepared on ``dev`` with ``tuner``) runs, and set
    apart in the tuning cache those faster apart (see the module docstring). Returns
    :func:`decide`'s rows (empty where the model has no fused layer)."""
    from clnn.bench import timing
    from clnn.cli.run import profile_prepared

    layers = fused_layers(pm, records)
    if not layers or tuner.cache is None:
        return []
    apart_pm = dev.with_options(dwpw="off").prepare_model(model)
    values = [np.asarray(x) for x in inputs]
    for p in (pm, apart_pm):
        for _ in range(2):
            p.run(values)
        p.wait_chains()
    fused_rounds, apart_rounds = [], []
    sides = [(pm, fused_rounds), (apart_pm, apart_rounds)]
    for n in range(ROUNDS):
        for p, into in timing.turn(sides, n):
            into.append(_times(profile_prepared(p, model, values, ITERATIONS)))
    rows = decide(layers, fused_rounds, apart_rounds)
    for r in rows:
        if r["apart"]:
            entry = dict(tuner.cache.get("dwpw", r["signature"]) or {})
            entry.update({"choice": {"fuse": False}, "complete": True, "measured_as": "chain",
                          "standalone_choice": entry.get("choice"),
                          "chain_ms": {"fused": r["fused_ms"], "apart": r["apart_ms"]}})
            tuner.cache.put("dwpw", r["signature"], entry)
    if any(r["apart"] for r in rows):
        tuner.cache.save()
    return rows
