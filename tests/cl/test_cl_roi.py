"""ROI_ALIGN and ROI_POOLING on OpenCL vs the reference device: every type (float32, float16
with half coordinates, quant8 asymm / signed with quant16 rois), NHWC and NCHW, fixed and
adaptive sampling ratios, rois on the feature map's edge, malformed rois failing the run."""

from __future__ import annotations

import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.cl_compare import check, status_of
from tests.kits.one_op_models import scalar, tensor

TYPES = [("TENSOR_FLOAT32", "f32"), ("TENSOR_FLOAT16", "f16"),
         ("TENSOR_QUANT8_ASYMM", "quant"), ("TENSOR_QUANT8_ASYMM_SIGNED", "quant")]


def _model(op, t, nchw, n_rois, ratio=(2, 2), out_scale=None):
    quant = "QUANT" in t
    rt = "TENSOR_QUANT16_ASYMM" if quant else t
    ft = "FLOAT16" if t == "TENSOR_FLOAT16" else "FLOAT32"
    xq = dict(scale=0.25, zero_point=10 if t.endswith("ASYMM") else -3) if quant else {}
    yq = dict(xq)
    if quant and out_scale:
        yq["scale"] = out_scale
    shape = [2, 3, 9, 10] if nchw else [2, 9, 10, 3]
    out = [n_rois, 3, 4, 5] if nchw else [n_rois, 4, 5, 3]
    ins = [tensor(t, shape, **xq), tensor(rt, [n_rois, 4], **({"scale": 0.125} if quant else {})),
           tensor("TENSOR_INT32", [n_rois]), scalar("INT32", 4), scalar("INT32", 5),
           scalar(ft, 2.0), scalar(ft, 1.5)]
    if op == "ROI_ALIGN":
        ins += [scalar("INT32", ratio[0]), scalar("INT32", ratio[1])]
    ins.append(scalar("BOOL", nchw))
    return ins, [tensor(t, out, **yq)]


def _data(t, nchw, rois):
    rng = np.random.default_rng(5)
    shape = (2, 3, 9, 10) if nchw else (2, 9, 10, 3)
    if t == "TENSOR_QUANT8_ASYMM":
        x = rng.integers(0, 256, shape).astype(np.uint8)
    elif t == "TENSOR_QUANT8_ASYMM_SIGNED":
        x = rng.integers(-128, 128, shape).astype(np.int8)
    else:
        x = rng.standard_normal(shape).astype(np.float16 if t == "TENSOR_FLOAT16" else np.float32)
    r = np.array(rois, np.float64)
    if "QUANT" in t:
        r = np.round(r * 8).astype(np.uint16)
    else:
        r = r.astype(np.float16 if t == "TENSOR_FLOAT16" else np.float32)
    return [x, r, np.array([i % 2 for i in range(len(rois))], np.int32)]


ROIS = [[0, 0, 15, 18], [2.5, 1, 7, 6.25], [3, 3, 3, 3], [10.125, 4, 14, 17.75]]


@pytest.mark.parametrize("op", ["ROI_ALIGN", "ROI_POOLING"])
@pytest.mark.parametrize("t,kind", TYPES)
@pytest.mark.parametrize("nchw", [False, True])
def test_roi_types_layouts(cl_device, op, t, kind, nchw):
    ins, outs = _model(op, t, nchw, len(ROIS))
    check(op, ins, outs, _data(t, nchw, ROIS), cl_device,
          kind="exact" if op == "ROI_POOLING" else kind)


@pytest.mark.parametrize("ratio", [(0, 0), (1, 3)])
def test_roi_align_ratios_requant(cl_device, ratio):
    for t, kind in TYPES:
        ins, outs = _model("ROI_ALIGN", t, False, len(ROIS), ratio, out_scale=0.1)
        check("ROI_ALIGN", ins, outs, _data(t, False, ROIS), cl_device, kind=kind)


@pytest.mark.parametrize("op", ["ROI_ALIGN", "ROI_POOLING"])
@pytest.mark.parametrize("roi,batch", [([0, 0, 25, 4], 0), ([5, 0, 4, 4], 0), ([0, 0, 4, 4], 2)])
def test_roi_malformed_fails(cl_device, op, roi, batch):
    ins, outs = _model(op, "TENSOR_FLOAT32", False, 1)
    data = _data("TENSOR_FLOAT32", False, [roi])
    data[2][0] = batch
    assert status_of(op, ins, outs, data, cl_device) == ErrorStatus.GENERAL_FAILURE


def test_roi_align_without_fp64(cl_device, monkeypatch):
    """A device without cl_khr_fp64 accumulates in float: still within the CTS tolerance."""
    from clnn.kernels import roi

    monkeypatch.setattr(roi, "_has_fp64", lambda device: False)
    for t, kind in TYPES:
        ins, outs = _model("ROI_ALIGN", t, False, len(ROIS), (0, 0), out_scale=0.1)
        check("ROI_ALIGN", ins, outs, _data(t, False, ROIS), cl_device, kind=kind)
