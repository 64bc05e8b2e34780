"""GENERATE_PROPOSALS on OpenCL vs the reference device: every type, NHWC and NCHW, the
pre-NMS top n (bitonic sort, tied scores in index order) or all candidates, post-NMS limits,
min size dropping everything (zero-sized outputs), and a malformed anchor failing the run."""

from __future__ import annotations

import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.cl_compare import check, status_of
from tests.kits.one_op_models import scalar, tensor


@pytest.fixture(params=["serial", "scans"])
def sweep(request, monkeypatch):
    """Both removal sweeps of greedy_nms.mako, whatever the device would choose (one
    work-item's loop on CPU devices, work-group scans elsewhere)."""
    from clnn.kernels import _detect

    monkeypatch.setattr(_detect, "serial_sweep", lambda b: request.param == "serial")
    return request.param


TYPES = [("TENSOR_FLOAT32", "TENSOR_FLOAT32", "TENSOR_FLOAT32", "TENSOR_FLOAT32", "FLOAT32"),
         ("TENSOR_FLOAT16", "TENSOR_FLOAT16", "TENSOR_FLOAT16", "TENSOR_FLOAT16", "FLOAT16"),
         ("TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT16_SYMM",
          "TENSOR_QUANT16_ASYMM", "FLOAT32"),
         ("TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT16_SYMM",
          "TENSOR_QUANT16_ASYMM", "FLOAT32")]
NB, H, W, NA = 2, 4, 5, 3


def _case(form, nchw, pre_n, post_n, min_size=1.0, levels=None, seed=0, anchors=None):
    st, dt, at, it, ft = form
    rng = np.random.default_rng(seed)
    quant = "QUANT" in st
    sq = dict(scale=0.01, zero_point=(0 if st.endswith("ASYMM") else -128)) if quant else {}
    dq = dict(scale=0.02, zero_point=(128 if st.endswith("ASYMM") else 0)) if quant else {}
    bq = dict(scale=0.125) if quant else {}
    s_shape = [NB, NA, H, W] if nchw else [NB, H, W, NA]
    d_shape = [NB, NA * 4, H, W] if nchw else [NB, H, W, NA * 4]
    ins = [tensor(st, s_shape, **sq), tensor(dt, d_shape, **dq), tensor(at, [NA, 4], **bq),
           tensor(it, [NB, 2], **bq), scalar(ft, 4.0), scalar(ft, 4.0), scalar("INT32", pre_n),
           scalar("INT32", post_n), scalar(ft, 0.5), scalar(ft, min_size), scalar("BOOL", nchw)]
    outs = [tensor(st, [0], **sq), tensor(it, [0, 4], **bq), tensor("TENSOR_INT32", [0])]
    s = (rng.integers(0, levels, s_shape) / levels) if levels else rng.uniform(0, 1, s_shape)
    d = rng.uniform(-0.5, 0.5, d_shape)
    a = np.array(anchors if anchors is not None else
                 [[0, 0, 8, 8], [2, 1, 14, 9], [0, 0, 4, 12]], np.float64)
    info = np.array([[20, 24], [18, 30]], np.float64)
    if quant:
        lo = 0 if st.endswith("ASYMM") else -128
        s = (np.round(s * 100) + lo).astype(np.uint8 if lo == 0 else np.int8)
        d = (np.round(d / 0.02) + (128 if lo == 0 else 0)).astype(s.dtype)
        a, info = np.round(a * 8).astype(np.int16), np.round(info * 8).astype(np.uint16)
    else:
        npt = np.float16 if st == "TENSOR_FLOAT16" else np.float32
        s, d, a, info = (v.astype(npt) for v in (s, d, a, info))
    return ins, outs, [s, d, a, info]


KIND = {"TENSOR_FLOAT32": "f32", "TENSOR_FLOAT16": "f16"}


@pytest.mark.parametrize("form", TYPES)
@pytest.mark.parametrize("nchw", [False, True])
def test_generate_proposals_types_layouts(cl_device, form, nchw):
    ins, outs, data = _case(form, nchw, pre_n=20, post_n=8)
    check("GENERATE_PROPOSALS", ins, outs, data, cl_device, kind=KIND.get(form[0], "quant"))


@pytest.mark.parametrize("pre_n,post_n", [(-1, -1), (0, 5), (7, 0), (1000, 3)])
def test_generate_proposals_limits_ties(cl_device, sweep, pre_n, post_n):
    ins, outs, data = _case(TYPES[0], False, pre_n, post_n, levels=3, seed=4)
    check("GENERATE_PROPOSALS", ins, outs, data, cl_device, kind="f32")


def test_generate_proposals_nothing_left(cl_device):
    ins, outs, data = _case(TYPES[0], False, -1, -1, min_size=1000.0)
    got = check("GENERATE_PROPOSALS", ins, outs, data, cl_device)
    assert [g.shape for g in got] == [(0,), (0, 4), (0,)]


def test_generate_proposals_malformed_anchor_fails(cl_device):
    ins, outs, data = _case(TYPES[0], False, -1, -1, anchors=[[0, 0, 8, 8], [5, 1, 4, 9],
                                                               [0, 0, 4, 12]])
    assert status_of("GENERATE_PROPOSALS", ins, outs, data, cl_device) == \
        ErrorStatus.GENERAL_FAILURE


def test_proposals_feed_roi_align_on_opencl(cl_device):
    """GENERATE_PROPOSALS ends its OpenCL partition (its row count is read back); ROI_ALIGN
    on the proposals is planned with that count in the next OpenCL partition."""
    from hal.builder import ModelBuilder, make_request, read_outputs
    from hal.reference import ReferenceDevice

    f = "TENSOR_FLOAT32"
    ins_spec, _, data = _case(TYPES[0], False, pre_n=-1, post_n=6)
    bld = ModelBuilder()
    ins = [bld.input(s.type, s.dims) for s in ins_spec[:4]]
    params = [bld.float32(4.0), bld.float32(4.0), bld.int32(-1), bld.int32(6),
              bld.float32(0.5), bld.float32(1.0), bld.bool(False)]
    scores, boxes, batch = bld.tensor(f, [0]), bld.tensor(f, [0, 4]), \
        bld.tensor("TENSOR_INT32", [0])
    bld.op("GENERATE_PROPOSALS", ins + params, [scores, boxes, batch])
    fmap = bld.input(f, [NB, 8, 8, 2])
    pooled = bld.output(f, [0, 2, 2, 2])
    bld.op("ROI_ALIGN", [fmap, boxes, batch, bld.int32(2), bld.int32(2), bld.float32(4.0),
                         bld.float32(4.0), bld.int32(2), bld.int32(2), bld.bool(False)],
           pooled)
    bld.mark_output(scores)
    model = bld.finish()
    x = np.random.default_rng(8).standard_normal((NB, 8, 8, 2)).astype(np.float32)
    inputs = [*data, x]
    assert cl_device.get_supported_operations(model) == [True, True]
    prepared = cl_device.prepare_model(model)
    results = []
    for p in (prepared, ReferenceDevice().prepare_model(model)):
        req = make_request(model, inputs, [1 << 16] * 2)
        r = p.execute_synchronously(req)
        assert r.status == 0, r
        results.append(read_outputs(model, req, r.output_shapes))
    assert [pt.on_cl for pt in prepared.partitions] == [True, True]
    assert all(pl is not None for pt in prepared.partitions for pl in pt.plans.values())
    for g, w in zip(*results):
        assert g.shape == w.shape and g.shape[0] > 0
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
