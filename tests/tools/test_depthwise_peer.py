"""benchmarks/depthwise_peer.py: the .tflite models it writes of a depthwise layer's copies (they
load, clnn's OpenCL outputs match the reference device's and litert's), the padding it reads
from a layer's geometry, its choice of layers and its per-copy arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import depthwise_peer as peer
from tests.kits.devices import open_or_skip


def sig(h, w, c, f, s, oh=None, ow=None):
    return {"n": 1, "h": h, "w": w, "o": c, "fh": f, "fw": f, "sh": s, "sw": s, "dh": 1, "dw": 1,
            "oh": oh if oh is not None else -(-h // s), "ow": ow if ow is not None else -(-w // s)}


def run(imported, device, x):
    from clnn.cli.run import ClnnRunner

    return ClnnRunner(imported, device).run([x])[0]


@pytest.mark.parametrize("s", [sig(9, 7, 20, 3, 1), sig(9, 8, 16, 5, 2), sig(8, 8, 8, 3, 1, 6, 6)],
                         ids=["3x3 s1 same", "5x5 s2 same", "3x3 s1 valid"])
def test_written_model_loads_and_clnn_matches_the_reference(s):
    from clnn.tflite import load

    cl, ref = open_or_skip("opencl", fallback=False), open_or_skip("reference")
    imported = load(peer.layer_model(s, 3))
    model = imported.model.main
    assert [op.type.name for op in model.operations] == ["DEPTHWISE_CONV_2D"] * 3
    assert len(imported.outputs) == 1
    x = np.random.default_rng(2).uniform(0.5, 1.5, (1, s["h"], s["w"], s["o"])).astype(np.float32)
    got, want = run(imported, cl, x), run(imported, ref, x)
    assert got[0].shape == (1, s["oh"], s["ow"], s["o"])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    # a sequence averages its input, copies reading the input average it once: values near 1
    assert 0.3 < float(want[0].mean()) < 1.5


def test_every_output_only_where_the_copies_read_the_input():
    from clnn.tflite import load

    s1, s2 = sig(8, 8, 16, 3, 1), sig(8, 8, 16, 3, 2)
    assert peer.chained(s1) and not peer.chained(s2)
    assert len(load(peer.layer_model(s2, 4, every_output=True)).outputs) == 4
    assert len(load(peer.layer_model(s2, 4)).outputs) == 1
    assert len(load(peer.layer_model(s1, 4, every_output=True)).outputs) == 1


def test_clnn_matches_litert_on_a_small_layer():
    pytest.importorskip("ai_edge_litert")
    device = open_or_skip("opencl", fallback=False)
    for s in (sig(6, 6, 16, 3, 1), sig(6, 6, 16, 3, 2)):
        import tempfile

        with tempfile.TemporaryDirectory() as where:
            _, _, (got, want) = peer.sides(device, s, where)
        assert got.shape == want.shape == (1, s["oh"], s["ow"], 16)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_padding_from_the_geometry():
    assert peer.padding(sig(12, 12, 8, 3, 2)) == 0  # 6 = ceil(12 / 2)
    assert peer.padding(sig(12, 12, 8, 3, 1, 10, 10)) == 1
    with pytest.raises(ValueError, match="neither SAME nor VALID"):
        peer.padding(sig(12, 12, 8, 3, 1, 11, 11))


def test_select_keeps_the_heaviest_layers_of_each_class():
    rows = [{"class": c, "n": n, "flop": f, "layer": f"{c} {n} {f}"}
            for c, n, f in [("3x3 s1", 1, 10.0), ("3x3 s1", 3, 5.0), ("3x3 s1", 1, 1.0),
                            ("5x5 s2", 1, 2.0), ("1x1 s1", 9, 99.0)]]
    got = [r["layer"] for r in peer.select(rows, 2)]
    assert got == ["3x3 s1 3 5.0", "3x3 s1 1 10.0", "5x5 s2 1 2.0"]
    assert len(peer.select(rows, None)) == 4  # the 1x1 layer in no class


def test_per_copy_is_the_two_depths_difference():
    side = peer.Side("x", None, None)
    side.times = {peer.LO: [3.0, 2.0], peer.HI: [2.0 + 0.5 * (peer.HI - peer.LO), 99.0]}
    assert side.per_copy(min) == pytest.approx(0.5)


def test_merge_takes_each_time_least_and_the_per_copy_from_the_least_two():
    span = peer.HI - peer.LO

    def rec(lo, hi, copy):
        row = {"key": "k", "class": "3x3 s1", "n": 1, "flop": 1.0, "copy_s": copy, "rule_s": 2.0,
               "fma_s": 0.1, "litert_lo_s": lo, "litert_hi_s": hi, "clnn_lo_s": lo,
               "clnn_hi_s": hi}
        return {"rows": [row, {**row, "key": "only here"}], "load": [[1.0, 1.0, 1.0]]}

    a, b = rec(1.0, 1.0 + 4 * span, 3.0), rec(0.5, 2.0 + 4 * span, 1.0)
    b["rows"].pop()
    m = peer.merge([a, b])
    assert [r["key"] for r in m["rows"]] == ["k"]  # a layer one run lacks is left out
    r = m["rows"][0]
    assert r["copy_s"] == 1.0 and r["litert_lo_s"] == 0.5
    assert r["litert_s"] == pytest.approx(4.0 + 0.5 / span)
    assert m["runs"] == 2 and len(m["load"]) == 2
