"""Winograd F(2x2, 3x3) and F(4x4, 3x3) CONV_2D (clnn/kernels/_winograd.py, conv2d.cl.mako
``wino_in`` / ``wino_out`` around the batched GEMM): the transforms against the correlation
they stand for, every form a layer takes (partial tiles, batches, every channel vector width,
padding of its own and from a PAD fused in, activations, an ADD, PRELU, LOGISTIC and
HARD_SWISH fused into the epilogue) against the reference device with each variant forced, the
layers it does not apply to, the default choice (F(4x4) only for relaxed models) and the
tuner's (measured against the im2col GEMM, cached, reused without measuring; a fast prepare
measures none)."""

from __future__ import annotations

import numpy as np
import pytest

from clnn import tuning
from clnn.kernels import _gemm_variants, _winograd
from clnn.program_cache.rendering import _lookup
from hal.builder import ModelBuilder
from tests.kits.cl_compare import assert_close, outputs_of, run_ref
from tests.kits.devices import open_or_skip


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback and without the layout pass (clnn/layout.py, tested
    in test_cl_layout.py and by the CTS): this module's NCHW cases run the NCHW kernels."""
    return open_or_skip("opencl", fallback=False, nhwc=False)


F32 = "TENSOR_FLOAT32"
F16 = "TENSOR_FLOAT16"


def conv_model(x_shape=(1, 9, 11, 16), o=24, pads=(1, 1, 1, 1), act=0, stride=1, dil=1,
               pad_op=None, residual=False, activation=None, relaxed=False, t=F32,
               nchw=False, seed=0):
    """x -> [PAD] -> CONV_2D 3x3 (explicit pads l r t b, stride, dilation, act) to ``o``
    channels [-> ADD(., r) with RELU] [-> activation operation]; ``x_shape`` is NHWC, the
    tensors NCHW where ``nchw``."""

    def lay(shape):
        n_, h_, w_, c_ = shape
        return [n_, c_, h_, w_] if nchw else [n_, h_, w_, c_]

    rng = np.random.default_rng(seed)
    dt = np.float32 if t == F32 else np.float16
    b = ModelBuilder()
    if relaxed:
        b.relax_computation_float32_to_float16(True)
    x = b.input(t, lay(x_shape))
    n, h, w, c = x_shape
    src = x
    if pad_op is not None:
        h, w = h + pad_op[0] + pad_op[1], w + pad_op[2] + pad_op[3]
        rows = [(0, 0), pad_op[:2], pad_op[2:], (0, 0)]
        spec = np.array([rows[0], rows[3], rows[1], rows[2]] if nchw else rows, np.int32)
        src = b.op("PAD", [x, b.constant(spec)], b.tensor(t, lay((n, h, w, c))))
    left, right, top, bottom = pads
    eff = 2 * dil + 1
    oh, ow = (h + top + bottom - eff) // stride + 1, (w + left + right - eff) // stride + 1
    wt = rng.uniform(-1, 1, (o, 3, 3, c)).astype(dt)
    bias = rng.uniform(-1, 1, o).astype(dt)
    y = b.op("CONV_2D", [src, b.constant(wt, t), b.constant(bias, t),
                         *[b.int32(v) for v in (left, right, top, bottom, stride, stride, act)],
                         b.bool(nchw), b.int32(dil), b.int32(dil)],
             b.tensor(t, lay((n, oh, ow, o))))
    inputs = [rng.uniform(-1, 1, lay(x_shape)).astype(dt)]
    if residual:
        r = b.input(t, lay((n, oh, ow, o)))
        y = b.op("ADD", [y, r, b.int32(1)], b.tensor(t, lay((n, oh, ow, o))))  # RELU
        inputs.append(rng.uniform(-1, 1, lay((n, oh, ow, o))).astype(dt))
    if activation == "PRELU":
        shape = [o, 1, 1] if nchw else [o]
        alpha = b.constant(rng.uniform(0, 0.5, shape).astype(dt), t)
        y = b.op("PRELU", [y, alpha], b.tensor(t, lay((n, oh, ow, o))))
    elif activation is not None:
        y = b.op(activation, [y], b.tensor(t, lay((n, oh, ow, o))))
    b.mark_output(y)
    return b.finish(), inputs


def launches(pm):
    return [launch for p in pm.partitions for pl in p.plans.values() for launch in pl.launches]


def winograd_m(pm) -> list[int]:
    """The m of every wino_in launch of a prepared model."""
    return [dict(launch.key[2])["m"] for launch in launches(pm)
            if launch.name == "conv2d.wino_in"]


def check(device, model, inputs, m: int | None, kind="f32"):
    pm = device.prepare_model(model)
    for got, want in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(got, want, kind)
    names = [launch.name for launch in launches(pm)]
    assert winograd_m(pm) == ([] if not m else [m]), names
    assert ("conv2d.wino_out" in names) == bool(m), names
    assert gemm_path(pm) != bool(m) or "conv2d.conv_tile" in names, names
    return pm


def gemm_path(pm) -> bool:
    """Whether a prepared model runs a convolution on the GEMM path: an im2col panel, or the
    implicit GEMM on the input (amode "taps")."""
    return any(launch.name == "gemm.im2col_pack" or
               (launch.name == "gemm.gemm" and dict(launch.key[2]).get("amode") == "taps")
               for launch in launches(pm))


def test_transforms_compute_the_correlation():
    """A^T [(G g G^T) * (B^T d B)] A is the 3x3 correlation of each (m + 2)^2 tile, with the
    B^T and A^T the kernels are rendered from and the G the filter is transformed by."""
    module = _lookup().get_template("conv2d.cl.mako").module
    rng = np.random.default_rng(1)
    for m in (2, 4):
        bt, at = np.array(module.WINO_BT[m], float), np.array(module.WINO_AT[m], float)
        g = _winograd.G[m]
        d, f = rng.standard_normal((m + 2, m + 2)), rng.standard_normal((3, 3))
        y = at @ ((g @ f @ g.T) * (bt @ d @ bt.T)) @ at.T
        want = np.array([[np.sum(d[i:i + 3, j:j + 3] * f) for j in range(m)]
                         for i in range(m)])
        np.testing.assert_allclose(y, want, rtol=0, atol=1e-12)
        # transform_filter: U[e, c, o] of an [O, 3, 3, C] filter
        w = rng.standard_normal((5, 3, 3, 2))
        u = _winograd.transform_filter(w, m)
        assert u.shape == ((m + 2) ** 2, 2, 5) and u.dtype == np.float32
        np.testing.assert_allclose(u[:, 1, 3].reshape(m + 2, m + 2), g @ w[3, :, :, 1] @ g.T,
                                   rtol=1e-6, atol=1e-6)


CASES = [
    dict(),                                                     # SAME, partial tiles
    dict(x_shape=(2, 8, 8, 12), o=8, pads=(0, 0, 0, 0)),        # batches, VALID, vectors of 4
    dict(x_shape=(1, 13, 7, 20), o=6),                          # vectors of 4 and 2
    dict(x_shape=(1, 5, 6, 9), o=5, pads=(0, 1, 2, 0)),         # vectors of 1, asymmetric
    dict(x_shape=(1, 10, 10, 32), o=32, act=3),                 # RELU6, vectors of 8
    dict(x_shape=(1, 7, 9, 16), o=16, pads=(0, 0, 0, 0), pad_op=(1, 2, 2, 1)),  # PAD read
    dict(x_shape=(1, 8, 8, 16), o=24, residual=True),           # ADD (RELU) fused
    dict(x_shape=(1, 8, 9, 16), o=16, activation="PRELU"),
    dict(x_shape=(1, 6, 6, 16), o=16, activation="LOGISTIC"),
    dict(x_shape=(1, 6, 6, 16), o=8, activation="HARD_SWISH"),
]


@pytest.mark.parametrize("nchw", [False, True], ids=["nhwc", "nchw"])
@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_f2x2_matches_reference(cl_device, case, nchw):
    pm = check(cl_device.with_options(winograd=2), *conv_model(**case, nchw=nchw), m=2)
    if not nchw and (case.get("pad_op") or case.get("residual") or case.get("activation")):
        assert len({launch.op_index for launch in launches(pm)}) == 1  # fused in


@pytest.mark.parametrize("nchw", [False, True], ids=["nhwc", "nchw"])
@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_f4x4_matches_reference_within_the_relaxed_tolerance(cl_device, case, nchw):
    # F(4x4, 3x3) is chosen for relaxed models only: their tolerance (CTS: float16's)
    model, inputs = conv_model(**case, relaxed=True, nchw=nchw)
    check(cl_device.with_options(winograd=4), model, inputs, m=4, kind="f16")


@pytest.mark.parametrize("kw", [dict(stride=2), dict(dil=2), dict(x_shape=(1, 8, 8, 8)),
                                dict(t=F16)])
def test_layers_it_does_not_apply_to(cl_device, kw):
    """Strided, dilated, few input channels (the direct kernel's) and float16."""
    model, inputs = conv_model(**kw)
    check(cl_device.with_options(winograd=2), model, inputs, m=None,
          kind="f16" if kw.get("t") == F16 else "f32")


def test_heuristic():
    def sig(oh, ow, relaxed=False):
        return _winograd.signature(1, oh, ow, 16, 16, oh, ow, 1, 1, relaxed)

    assert [_winograd.heuristic(None, sig(*s)) for s in ((3, 8), (8, 3), (4, 4), (56, 56))] \
        == [0, 0, 2, 2]
    assert [_winograd.heuristic(None, sig(*s, relaxed=True))
            for s in ((3, 3), (4, 8), (8, 8), (28, 28))] == [0, 2, 4, 4]
    # NCHW: from 64 channels in and out
    assert [_winograd.heuristic(None, _winograd.signature(1, 8, 8, c, o, 8, 8, 1, 1, False,
                                                          True))
            for c, o in ((32, 64), (64, 32), (64, 64))] == [0, 0, 2]


def untuned(device, monkeypatch):
    monkeypatch.setattr(device, "tuner", None, raising=False)
    return tuning.tuner_for(device, "off")


@pytest.mark.parametrize("relaxed,shape,m", [(False, (1, 16, 16, 16), 2),
                                             (True, (1, 16, 16, 16), 4),
                                             (False, (1, 5, 5, 16), 0)])
def test_default_choice(cl_device, monkeypatch, relaxed, shape, m):
    untuned(cl_device, monkeypatch)
    try:
        model, inputs = conv_model(x_shape=shape, o=16, pads=(0, 0, 0, 0), relaxed=relaxed)
        check(cl_device, model, inputs, m=m, kind="f16" if relaxed else "f32")
    finally:
        cl_device.tuner = None


@pytest.mark.parametrize("relaxed", [False, True])
def test_tuner_measures_the_paths_and_the_next_prepare_reuses(cl_device, tmp_path,
                                                              monkeypatch, relaxed):
    cl_device = cl_device.with_options(cache_dir=str(tmp_path))
    monkeypatch.setattr(cl_device, "tuner", None, raising=False)
    # (the 3x3 paths measured; the GEMM of the im2col path keeps its default)
    tuner = tuning.tuner_for(cl_device, "full", unbounded=True, families=frozenset({"winograd"}))
    try:
        model, inputs = conv_model(x_shape=(1, 24, 24, 32), o=32, relaxed=relaxed)
        pm = cl_device.prepare_model(model)
        recs = [r for r in tuner.records if r.family == "winograd"]
        assert len(recs) == 1 and not recs[0].cached, tuner.records
        entry = tuner.cache.get("winograd", recs[0].signature)
        assert set(entry["times_ms"]) == {tuning._key({"m": m})
                                          for m in ((0, 2, 4) if relaxed else (0, 2))}
        chosen = recs[0].choice["m"]
        assert winograd_m(pm) == ([chosen] if chosen else [])
        for got, want in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
            assert_close(got, want, "f16" if relaxed else "f32")
        measured = tuner.measured
        cl_device.prepare_model(model)
        assert tuner.measured == measured  # reused from the cache
        assert [r.cached for r in tuner.records if r.family == "winograd"][-1]
    finally:
        cl_device.tuner = None


def test_a_fast_prepare_measures_no_path_and_follows_the_cache(cl_device, tmp_path,
                                                               monkeypatch):
    cl_device = cl_device.with_options(cache_dir=str(tmp_path))
    monkeypatch.setattr(cl_device, "tuner", None, raising=False)
    cl_device = cl_device.with_options(tune_budget_s=1000)
    # (the GEMM of the im2col path is not measured: only whether the 3x3 path is)
    tuner = tuning.tuner_for(cl_device, "fast", families=frozenset({"winograd"}))
    try:
        model, inputs = conv_model(x_shape=(1, 24, 24, 32), o=32)
        check(cl_device, model, inputs, m=2)  # the heuristic's
        sig = _winograd.signature(1, 24, 24, 32, 32, 24, 24, 1, 1)
        assert tuner.cache.get("winograd", sig) is None
        # a cached choice (clnn tune's) is followed
        tuner.cache.put("winograd", sig, {"choice": {"m": 0}, "complete": True,
                                          "measured_as": "chain"})
        check(cl_device, model, inputs, m=0)
    finally:
        cl_device.tuner = None


def test_vector_widths():
    cpu8 = _gemm_variants.Traits(True, 4096, (4096,) * 3, 1 << 16, 8)
    cpu4 = _gemm_variants.Traits(True, 4096, (4096,) * 3, 1 << 16, 4)
    gpu = _gemm_variants.Traits(False, 256, (256,) * 3, 1 << 15, 1)
    assert [_winograd.vector_width(n, cpu8) for n in (64, 12, 6, 5)] == [8, 4, 2, 1]
    assert [_winograd.vector_width(n, cpu4) for n in (64, 6)] == [4, 2]
    assert [_winograd.vector_width(n, gpu) for n in (64, 6)] == [4, 2]


def test_tune_report_formats_the_path():
    from clnn.cli.tune import _sig, _variant

    assert [_variant({"m": m}) for m in (0, 2, 4)] == \
        ["im2col GEMM", "Winograd F(2x2,3x3)", "Winograd F(4x4,3x3)"]
    assert _sig(_winograd.signature(1, 30, 30, 64, 96, 28, 28, 0, 0)) == \
        "conv 3x3/1 30x30x64 -> 96"


def test_clnn_tune_takes_an_onnx_model(tmp_path, monkeypatch, capsys):
    """clnn tune on an .onnx file: its 3x3 layer (NCHW in the file, NHWC once prepared)
    measured both ways, the report naming the paths."""
    import json

    from clnn.cli.main import main
    from tests.onnx.kit import f32, graph, node

    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path))
    model = graph([node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
                  [("x", (1, 64, 12, 12))], [("y", (1, 64, 12, 12))],
                  [("w", f32(64, 64, 3, 3)), ("b", f32(64))])
    path = tmp_path / "conv.onnx"
    path.write_bytes(model.SerializeToString())
    # (--family: the GEMM of the im2col path keeps its default, only the paths are measured)
    assert main(["tune", str(path), "--fast", "--json", "--family", "winograd"]) == 0
    report = json.loads(capsys.readouterr().out)
    (layer,) = report["models"][0]["layers"]
    assert layer["family"] == "winograd"
    # the layer is NCHW in the file; prepare runs it NHWC (the layout pass, clnn/layout.py)
    assert not layer["signature"]["nchw"] and layer["default"] == {"m": 2}
    assert layer["choice"] in ({"m": 0}, {"m": 2}) and layer["best_ms"] > 0
    assert main(["tune", str(path), "--fast", "--family", "winograd"]) == 0
    out = capsys.readouterr().out
    assert "conv 3x3/1 12x12x64 -> 64" in out and "Winograd F(2x2,3x3)" in out
