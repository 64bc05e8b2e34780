"""HEATMAP_MAX_KEYPOINT on OpenCL vs the reference device: every type, NHWC and NCHW, ties of
the maximum (the first wins), maxima on the border (mirrored grid), flat heatmaps (singular
fit), heatmaps larger than a work-group, and a malformed box failing the run."""

from __future__ import annotations

import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.cl_compare import check, status_of
from tests.kits.one_op_models import scalar, tensor

TYPES = [("TENSOR_FLOAT32", "f32"), ("TENSOR_FLOAT16", "f16"),
         ("TENSOR_QUANT8_ASYMM", "quant"), ("TENSOR_QUANT8_ASYMM_SIGNED", "quant")]


def _run(device, t, kind, heat, nchw, boxes=None):
    quant = "QUANT" in t
    n = heat.shape[0]
    k = heat.shape[1] if nchw else heat.shape[3]
    bt = "TENSOR_QUANT16_ASYMM" if quant else t
    hq = dict(scale=0.1, zero_point=(5 if t.endswith("ASYMM") else -2)) if quant else {}
    sq = dict(scale=0.02, zero_point=(7 if t.endswith("ASYMM") else 1)) if quant else {}
    bq = dict(scale=0.125) if quant else {}
    if boxes is None:
        boxes = np.array([[1, 2, 30, 40], [0, 0, 8, 8], [5, 5, 6, 9]][:n] * (n // 3 + 1))[:n]
    boxes = np.round(np.asarray(boxes) * 8).astype(np.uint16) if quant else \
        np.asarray(boxes).astype(heat.dtype)
    return check("HEATMAP_MAX_KEYPOINT",
                 [tensor(t, heat.shape, **hq), tensor(bt, [n, 4], **bq), scalar("BOOL", nchw)],
                 [tensor(t, [n, k], **sq), tensor(bt, [n, k, 2], **bq)], [heat, boxes], device,
                 kind=kind)


def _heat(t, shape, rng, levels=None):
    if t == "TENSOR_QUANT8_ASYMM":
        return rng.integers(0, levels or 256, shape).astype(np.uint8)
    if t == "TENSOR_QUANT8_ASYMM_SIGNED":
        return rng.integers(-128, -128 + (levels or 256), shape).astype(np.int8)
    dt = np.float16 if t == "TENSOR_FLOAT16" else np.float32
    if levels:
        return rng.integers(0, levels, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


@pytest.mark.parametrize("t,kind", TYPES)
@pytest.mark.parametrize("nchw", [False, True])
def test_heatmap_types_layouts(cl_device, t, kind, nchw):
    rng = np.random.default_rng(11)
    shape = (3, 2, 6, 6) if nchw else (3, 6, 6, 2)
    _run(cl_device, t, kind, _heat(t, shape, rng), nchw)


@pytest.mark.parametrize("t,kind", TYPES)
def test_heatmap_ties_borders_large(cl_device, t, kind):
    rng = np.random.default_rng(12)
    _run(cl_device, t, kind, _heat(t, (3, 20, 20, 3), rng, levels=3), False)  # many ties
    flat = np.zeros((3, 2, 2, 1), _heat(t, (1,), rng).dtype)  # singular fit, corner max
    _run(cl_device, t, kind, flat, False)


def test_heatmap_malformed_box_fails(cl_device):
    heat = np.zeros((1, 4, 4, 1), np.float32)
    boxes = np.array([[5, 0, 4, 4]], np.float32)
    status = status_of("HEATMAP_MAX_KEYPOINT",
                       [tensor("TENSOR_FLOAT32", [1, 4, 4, 1]), tensor("TENSOR_FLOAT32", [1, 4]),
                        scalar("BOOL", False)],
                       [tensor("TENSOR_FLOAT32", [1, 1]), tensor("TENSOR_FLOAT32", [1, 1, 2])],
                       [heat, boxes], cl_device)
    assert status == ErrorStatus.GENERAL_FAILURE
