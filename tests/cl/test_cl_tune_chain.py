"""clnn tune's check of the depthwise -> 1x1 fusions in the model's own runs
(clnn/cli/tune_chain.py): the decision per signature, and `clnn tune` on a model whose
cached choice fuses: both ways timed in the model's runs, the entry set apart exactly when
apart measured faster, and the next prepare following it."""

from __future__ import annotations

import json

import numpy as np

from clnn import tuning
from clnn.cli import tune_chain
from clnn.kernels import _dwpw, _dwpw_variants
from tests.kits.tflite_writer import Graph


def test_decide_sums_each_signatures_layers_and_takes_medians():
    a, b = {"sig": "a"}, {"sig": "b"}
    layers = {10: (9, a), 20: (19, a), 30: (29, b)}
    fused = [{10: 1.0, 20: 1.0, 30: 0.5}, {10: 1.1, 20: 0.9, 30: 0.5},
             {10: 9.0, 20: 9.0, 30: 9.0}]  # an outlier round: the median ignores it
    apart = [{9: 0.3, 10: 0.6, 19: 0.3, 20: 0.6, 29: 0.3, 30: 0.4}] * 3
    rows = {r["signature"]["sig"]: r for r in tune_chain.decide(layers, fused, apart)}
    assert rows["a"]["operations"] == [10, 20] and rows["b"]["operations"] == [30]
    assert rows["a"]["fused_ms"] == 2.0 and np.isclose(rows["a"]["apart_ms"], 1.8)
    assert rows["a"]["apart"] and not rows["b"]["apart"]
    assert rows["b"]["fused_ms"] == 0.5 and np.isclose(rows["b"]["apart_ms"], 0.7)


def dw_pw_tflite(path, blocks: int = 4, c: int = 16, hw: int = 24):
    """x -> (DEPTHWISE_CONV_2D 3x3 -> CONV_2D 1x1) x ``blocks``: with the fusion 4 launches,
    apart 8 (a chain)."""
    rng = np.random.default_rng(0)
    g = Graph()
    x = g.tensor([1, hw, hw, c], name="x")
    cur = x
    for _ in range(blocks):
        wd = g.tensor([1, 3, 3, c], data=rng.uniform(-1, 1, (1, 3, 3, c)).astype(np.float32))
        bd = g.tensor([c], data=rng.uniform(-1, 1, c).astype(np.float32))
        d = g.tensor([1, hw, hw, c])
        g.op("DEPTHWISE_CONV_2D", [cur, wd, bd], [d], "DepthwiseConv2DOptions", Padding=0,
             StrideW=1, StrideH=1, DepthMultiplier=1, DilationWFactor=1, DilationHFactor=1)
        wp = g.tensor([c, 1, 1, c], data=rng.uniform(-1, 1, (c, 1, 1, c)).astype(np.float32))
        y = g.tensor([1, hw, hw, c])
        g.op("CONV_2D", [d, wp, -1], [y], "Conv2DOptions", Padding=0, StrideW=1, StrideH=1)
        cur = y
    path.write_bytes(g.write(inputs=[x], outputs=[cur]))
    return path


def test_clnn_tune_checks_the_fusions_in_the_model(cl_device, tmp_path, monkeypatch, capsys):
    from clnn.cli.errors import import_tflite
    from clnn.cli.main import main

    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tune_chain, "ROUNDS", 2)
    monkeypatch.setattr(tune_chain, "ITERATIONS", 3)
    path = dw_pw_tflite(tmp_path / "dwpw.tflite")
    imported = import_tflite(str(path))
    # the signature the fusion asks for, and a cached choice that fuses it (as a standalone
    # measurement may have chosen)
    seen, select = [], _dwpw_variants.select
    monkeypatch.setattr(_dwpw_variants, "select", lambda d, op, sig: seen.append(sig) or
                        select(d, op, sig))
    monkeypatch.setattr(cl_device, "tuner", None, raising=False)
    try:
        tuner = tuning.tuner_for(cl_device, "off")
        cl_device.prepare_model(imported.model)
    finally:
        cl_device.tuner = None
    sig = seen[0]
    assert all(s == sig for s in seen) and len(seen) == 4
    tile = list(_dwpw.fused_tiles(_dwpw._gemm_variants.traits(cl_device.limits), 16, 16,
                                  24 * 24)[0])
    # the CLI (an entry point) keeps its tuning cache under $CLNN_CACHE_DIR
    cache = tuning.TuningCache(tuning.device_identity(cl_device.platform, cl_device.cl_device),
                               tmp_path / "tuning")
    cache.put("dwpw", sig, {"choice": {"fuse": True, "tile": tile}, "complete": True,
                            "measured_as": "chain"})
    cache.save()
    del tuner

    # (--family dwpw: the depthwise and GEMM layers keep their defaults, not measured)
    assert main(["tune", str(path), "--json", "--family", "dwpw"]) == 0
    report = json.loads(capsys.readouterr().out)
    (row,) = report["models"][0]["fusions_in_model"]
    assert row["signature"] == sig and len(row["operations"]) == 4
    assert row["fused_ms"] > 0 and row["apart_ms"] > 0
    assert row["apart"] == (row["apart_ms"] < row["fused_ms"])
    entry = tuning.TuningCache(cache.identity, tmp_path / "tuning").get("dwpw", sig)
    if row["apart"]:  # set apart, with both times and the standalone choice
        assert entry["choice"] == {"fuse": False} and entry["complete"]
        assert entry["standalone_choice"] == {"fuse": True, "tile": tile}
        assert entry["chain_ms"] == {"fused": row["fused_ms"], "apart": row["apart_ms"]}
    else:
        assert entry == {"choice": {"fuse": True, "tile": tile}, "complete": True}
    # the next tune reuses the entry: a layer set apart is not checked again
    assert main(["tune", str(path), "--family", "dwpw"]) == 0
    out = capsys.readouterr().out
    assert ("depthwise -> 1x1 fusions in the model's runs" in out) != row["apart"], out
