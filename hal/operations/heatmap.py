"""HEATMAP_MAX_KEYPOINT: keypoint location and score from heatmaps, refined by a quadratic
(2nd-order Taylor) fit around the maximum (HAL 1.2).

| input | operand                                                                          |
|-------|----------------------------------------------------------------------------------|
| 0     | heatmaps [num_boxes, size, size, num_keypoints] (NCHW: [num_boxes, k, size, size]),|
|       | size >= 2                                                                        |
| 1     | boxes [num_boxes, 4] (x1, y1, x2, y2)                                            |
| 2     | BOOL NCHW                                                                        |
| out 0 | scores [num_boxes, num_keypoints]                                                |
| out 1 | keypoints [num_boxes, num_keypoints, 2] (x, y)                                   |

Types: TENSOR_FLOAT32, TENSOR_FLOAT16 (1.2); TENSOR_QUANT8_ASYMM (1.2) and
TENSOR_QUANT8_ASYMM_SIGNED (1.3) heatmaps with TENSOR_QUANT16_ASYMM boxes and keypoints
(scale 0.125, zero point 0); the quantized score output has its own scale and zero point.
Computed in float32 in the reference's order of operations.
"""

from __future__ import annotations

import numpy as np

from hal.errors import GeneralFailure
from hal.operations.bbox import F32, check_box_quant, from_float32, to_float32
from hal.operations.common import check_rank
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig
from hal.types import OperandType

_FORMS = [("V1_2", "TENSOR_FLOAT32", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16",
                                                         "TENSOR_FLOAT16"),
          ("V1_2", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT16_ASYMM"),
          ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT16_ASYMM")]
SIGNATURES = [sig(v, [h, b, "BOOL"], [h, b]) for v, h, b in _FORMS]


def _nhwc_shape(ctx: OperationContext):
    shape, nchw = ctx.input_shape(0), ctx.scalar(2)
    if len(shape) != 4 or nchw is None:
        return None
    n, a, b, c = shape
    return (n, b, c, a) if nchw else (n, a, b, c)


def validate(ctx: OperationContext):
    check_rank(ctx, 0, 4)
    check_rank(ctx, 1, 2)
    shape = _nhwc_shape(ctx)
    boxes = ctx.input_shape(1)
    if shape is not None:
        n, h, w, _ = shape
        if h and w:
            ctx.require(h == w, f"input 0 (heatmaps) must be square, got {h}x{w}")
            ctx.require(h >= 2, f"input 0 (heatmaps) size must be >= 2, got {h}")
        if len(boxes) == 2 and n and boxes[0]:
            ctx.require(n == boxes[0], f"input 1 (boxes) has {boxes[0]} rows for {n} heatmaps")
    if len(boxes) == 2 and boxes[1]:
        ctx.require(boxes[1] == 4, f"input 1 (boxes) must have shape [num_boxes, 4], got "
                                   f"{list(boxes)}")
    check_box_quant(ctx, ctx.inputs[1], "input 1 (boxes)")
    check_box_quant(ctx, ctx.outputs[1], "output 1 (keypoints)")


def prepare(ctx: OperationContext):
    shape = _nhwc_shape(ctx)
    if shape is None:
        return None
    n, _, _, k = shape
    return [(n, k), (n, k, 2)]


def _solve(g, atol, rtol, max_score):
    """solveForDelta on [..., 3, 3] float32 grids: (dx, dy, score)."""
    two, four = F32(2), F32(4)
    b0 = -(g[..., 1, 2] - g[..., 1, 0]) / two
    b1 = -(g[..., 2, 1] - g[..., 0, 1]) / two
    a00 = g[..., 1, 0] - two * g[..., 1, 1] + g[..., 1, 2]
    a01 = (g[..., 2, 2] - g[..., 2, 0] - g[..., 0, 2] + g[..., 0, 0]) / four
    a11 = g[..., 0, 1] - two * g[..., 1, 1] + g[..., 2, 1]
    cp1, cp2 = a00 * a11, a01 * a01
    det = cp1 - cp2
    ok = ~(np.abs(det) < F32(atol) + F32(rtol) * cp1)
    safe = np.where(ok, det, F32(1))
    d0 = np.where(ok, (a11 * b0 - a01 * b1) / safe, F32(0))
    d1 = np.where(ok, (a00 * b1 - a01 * b0) / safe, F32(0))
    big = np.maximum(np.abs(d0), np.abs(d1))
    clip = big > F32(1.5)
    scale = np.where(clip, F32(1.5) / np.where(clip, big, F32(1)), F32(1))
    d0, d1 = np.where(clip, d0 * scale, d0), np.where(clip, d1 * scale, d1)
    score = (g[..., 1, 1] - b0 * d0 - b1 * d1
             + ((a00 * d0 + a01 * d1) * d0 + (a01 * d0 + a11 * d1) * d1) / two)
    return d0, d1, np.where(ok, score, max_score).astype(F32)


def execute(ctx: OperationContext):
    heat = to_float32(ctx.inputs[0])
    if ctx.scalar(2):
        heat = heat.transpose(0, 2, 3, 1)
    boxes = to_float32(ctx.inputs[1]).reshape(-1, 4)
    n, s, s2, k = heat.shape
    if s != s2 or s < 2 or boxes.shape[0] != n:
        raise GeneralFailure(f"{ctx.name}: heatmaps {list(heat.shape)} (NHWC) and boxes "
                             f"{list(boxes.shape)} do not fit")
    if np.any(boxes[:, 0] > boxes[:, 2]) or np.any(boxes[:, 1] > boxes[:, 3]):
        raise GeneralFailure(f"{ctx.name}: a box has x2 < x1 or y2 < y1")
    flat = heat.reshape(n, s * s, k)
    idx = np.argmax(flat, axis=1)  # the first maximum, as the reference's strict '<' scan
    max_score = np.take_along_axis(flat, idx[:, None, :], axis=1)[:, 0, :]
    mh, mw = idx // s, idx % s

    def mirror(v):
        return np.where(v < 0, 1, np.where(v >= s, s - 2, v))

    nn, kk = np.meshgrid(np.arange(n), np.arange(k), indexing="ij")
    grid = np.empty((n, k, 3, 3), dtype=F32)
    for dh in (-1, 0, 1):
        for dw in (-1, 0, 1):
            grid[:, :, dh + 1, dw + 1] = heat[nn, mirror(mh + dh), mirror(mw + dw), kk]
    tol = 1e-3 if ctx.inputs[0].type == OperandType.TENSOR_FLOAT16 else 1e-5
    d0, d1, score = _solve(grid, tol, tol, max_score)
    x1, y1, x2, y2 = (boxes[:, i:i + 1] for i in range(4))
    w_rel = (mw.astype(F32) + d0 + F32(0.5)) / F32(s)
    h_rel = (mh.astype(F32) + d1 + F32(0.5)) / F32(s)
    keypoints = np.stack([w_rel * (x2 - x1) + x1, h_rel * (y2 - y1) + y1], axis=-1)
    return [from_float32(score, ctx.outputs[0]), from_float32(keypoints, ctx.outputs[1])]


register("HEATMAP_MAX_KEYPOINT", execute, signatures=SIGNATURES, validate=validate,
         prepare=prepare, family="heatmap")
