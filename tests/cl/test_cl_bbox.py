"""AXIS_ALIGNED_BBOX_TRANSFORM on OpenCL vs the reference device: float32, float16, the
quantized forms (quant16 boxes with quant8 asymm / signed deltas), clipping to the image, and
malformed rois / batch indexes failing the execution (status word read back)."""

from __future__ import annotations

import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.cl_compare import check, status_of
from tests.kits.one_op_models import tensor

FORMS = [("TENSOR_FLOAT32", "TENSOR_FLOAT32", "f32"), ("TENSOR_FLOAT16", "TENSOR_FLOAT16", "f16"),
         ("TENSOR_QUANT16_ASYMM", "TENSOR_QUANT8_ASYMM", "quant"),
         ("TENSOR_QUANT16_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED", "quant")]


def _specs(bt, dt, n, classes, batches):
    bq = dict(scale=0.125) if "QUANT" in bt else {}
    dq = dict(scale=0.05, zero_point=(128 if dt.endswith("ASYMM") else 0)) if "QUANT" in dt \
        else {}
    return ([tensor(bt, [n, 4], **bq), tensor(dt, [n, classes * 4], **dq),
             tensor("TENSOR_INT32", [n]), tensor(bt, [batches, 2], **bq)],
            [tensor(bt, [n, classes * 4], **bq)])


def _data(rng, bt, dt, n, classes, batches):
    x1 = rng.uniform(0, 40, n)
    y1 = rng.uniform(0, 40, n)
    rois = np.stack([x1, y1, x1 + rng.uniform(0, 30, n), y1 + rng.uniform(0, 30, n)], 1)
    info = np.array([[50, 60], [64, 48]][:batches], np.float64)
    if bt == "TENSOR_QUANT16_ASYMM":
        rois, info = np.round(rois * 8).astype(np.uint16), (info * 8).astype(np.uint16)
    else:
        rois, info = rois.astype(np.float32), info.astype(np.float32)
    deltas = rng.uniform(-1, 1, (n, classes * 4))
    if dt == "TENSOR_QUANT8_ASYMM":
        deltas = rng.integers(0, 256, deltas.shape).astype(np.uint8)
    elif dt == "TENSOR_QUANT8_ASYMM_SIGNED":
        deltas = rng.integers(-128, 128, deltas.shape).astype(np.int8)
    npt = np.float16 if bt == "TENSOR_FLOAT16" else None
    if npt:
        rois, info, deltas = rois.astype(npt), info.astype(npt), deltas.astype(npt)
    elif bt == "TENSOR_FLOAT32":
        deltas = deltas.astype(np.float32)
    batch = rng.integers(0, batches, n).astype(np.int32)
    return [rois, deltas, batch, info]


@pytest.mark.parametrize("bt,dt,kind", FORMS)
def test_bbox_forms(cl_device, bt, dt, kind):
    rng = np.random.default_rng(3)
    ins, outs = _specs(bt, dt, 7, 3, 2)
    check("AXIS_ALIGNED_BBOX_TRANSFORM", ins, outs, _data(rng, bt, dt, 7, 3, 2), cl_device,
          kind=kind)


@pytest.mark.parametrize("bad", ["roi", "batch"])
def test_bbox_malformed_fails(cl_device, bad):
    rng = np.random.default_rng(4)
    ins, outs = _specs("TENSOR_FLOAT32", "TENSOR_FLOAT32", 3, 1, 1)
    data = _data(rng, "TENSOR_FLOAT32", "TENSOR_FLOAT32", 3, 1, 1)
    if bad == "roi":
        data[0][1, 0] = data[0][1, 2] + 1  # x1 > x2
    else:
        data[2][2] = 1  # one image only
    status = status_of("AXIS_ALIGNED_BBOX_TRANSFORM", ins, outs, data, cl_device)
    assert status == ErrorStatus.GENERAL_FAILURE
