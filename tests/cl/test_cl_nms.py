"""BOX_WITH_NMS_LIMIT on OpenCL vs the reference device: every type, the three NMS kernels,
several images (runs of batch indexes, one index in two runs), tied scores, max detections
(positive, zero, negative: unlimited), no detections (zero-sized outputs) and malformed boxes."""

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


TYPES = [("TENSOR_FLOAT32", "TENSOR_FLOAT32", "FLOAT32"),
         ("TENSOR_FLOAT16", "TENSOR_FLOAT16", "FLOAT16"),
         ("TENSOR_QUANT8_ASYMM", "TENSOR_QUANT16_ASYMM", "FLOAT32"),
         ("TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT16_ASYMM", "FLOAT32")]


def specs(st, bt, ft, n, classes, kind=0, max_det=-1, score_thr=0.3, iou=0.4, sigma=0.5,
          nms_thr=0.25):
    sq = dict(scale=0.01, zero_point=(0 if st.endswith("ASYMM") else -128)) if "QUANT" in st \
        else {}
    bq = dict(scale=0.125) if "QUANT" in bt else {}
    ins = [tensor(st, [n, classes], **sq), tensor(bt, [n, classes * 4], **bq),
           tensor("TENSOR_INT32", [n]), scalar(ft, score_thr), scalar("INT32", max_det),
           scalar("INT32", kind), scalar(ft, iou), scalar(ft, sigma), scalar(ft, nms_thr)]
    outs = [tensor(st, [0], **sq), tensor(bt, [0, 4], **bq), tensor("TENSOR_INT32", [0]),
            tensor("TENSOR_INT32", [0])]
    return ins, outs


def data(rng, st, bt, n, classes, batch, levels=None):
    if levels:  # few distinct scores: many ties
        s = rng.integers(0, levels, (n, classes)) / levels
    else:
        s = rng.uniform(0, 1, (n, classes))
    if st == "TENSOR_QUANT8_ASYMM":
        s = np.round(s * 100).astype(np.uint8)
    elif st == "TENSOR_QUANT8_ASYMM_SIGNED":
        s = (np.round(s * 100) - 128).astype(np.int8)
    else:
        s = s.astype(np.float16 if st == "TENSOR_FLOAT16" else np.float32)
    xy = rng.uniform(0, 40, (n, classes, 2))
    wh = rng.uniform(2, 20, (n, classes, 2))
    boxes = np.concatenate([xy, xy + wh], -1).reshape(n, classes * 4)
    if "QUANT" in bt:
        boxes = np.round(boxes * 8).astype(np.uint16)
    else:
        boxes = boxes.astype(s.dtype)
    return [s, boxes, np.asarray(batch, np.int32)]


def _check(device, st, bt, ft, batch, classes, levels=None, seed=0, kind_of="exact", **kw):
    rng = np.random.default_rng(seed)
    n = len(batch)
    ins, outs = specs(st, bt, ft, n, classes, **kw)
    return check("BOX_WITH_NMS_LIMIT", ins, outs, data(rng, st, bt, n, classes, batch, levels),
                 device, kind=kind_of)


@pytest.mark.parametrize("st,bt,ft", TYPES)
@pytest.mark.parametrize("kind", [0, 1, 2])
def test_nms_types_kernels(cl_device, st, bt, ft, kind):
    _check(cl_device, st, bt, ft, [0] * 9 + [1] * 7 + [0] * 4, 4, kind=kind, max_det=6)


@pytest.mark.parametrize("kind", [0, 1, 2])
@pytest.mark.parametrize("max_det", [-1, 0, 1, 5])
def test_nms_ties_max_detections(cl_device, sweep, kind, max_det):
    _check(cl_device, "TENSOR_FLOAT32", "TENSOR_FLOAT32", "FLOAT32", [0] * 30 + [2] * 30, 3,
           levels=4, seed=kind, kind=kind, max_det=max_det, nms_thr=0.0,
           kind_of="f32" if kind == 2 else "exact")  # exp() may differ by an ulp


def test_nms_large_and_empty(cl_device, sweep):
    # more candidates than a work-group: chunked scans and strided rounds
    (scores, *_), = [_check(cl_device, "TENSOR_FLOAT32", "TENSOR_FLOAT32", "FLOAT32",
                            [0] * 400 + [1] * 300, 3, seed=9)]
    assert scores.size > 0
    out = _check(cl_device, "TENSOR_FLOAT32", "TENSOR_FLOAT32", "FLOAT32", [0] * 5, 3,
                 score_thr=2.0)  # no score above the threshold: zero-sized outputs
    assert [o.shape for o in out] == [(0,), (0, 4), (0,), (0,)]


def test_nms_malformed_box_fails(cl_device):
    rng = np.random.default_rng(2)
    ins, outs = specs("TENSOR_FLOAT32", "TENSOR_FLOAT32", "FLOAT32", 3, 2)
    d = data(rng, "TENSOR_FLOAT32", "TENSOR_FLOAT32", 3, 2, [0, 0, 0])
    d[1][0, 0] = d[1][0, 2] + 1  # x1 > x2
    assert status_of("BOX_WITH_NMS_LIMIT", ins, outs, d, cl_device) == \
        ErrorStatus.GENERAL_FAILURE
