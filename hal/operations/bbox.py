"""AXIS_ALIGNED_BBOX_TRANSFORM, and the box helpers the detection families share (HAL 1.2).

| input | operand                                                                          |
|-------|----------------------------------------------------------------------------------|
| 0     | rois [num_rois, 4] (x1, y1, x2, y2)                                              |
| 1     | deltas [num_rois, num_classes * 4] (dx, dy, dw, dh)                              |
| 2     | TENSOR_INT32 batch index [num_rois]                                              |
| 3     | image info [batches, 2] (height, width)                                          |
| out 0 | boxes [num_rois, num_classes * 4] (x1, y1, x2, y2), clipped to the image         |

Types: TENSOR_FLOAT32 and TENSOR_FLOAT16 (all of 0, 1, 3 and output), or rois, image info and
output TENSOR_QUANT16_ASYMM (scale 0.125, zero point 0) with deltas TENSOR_QUANT8_ASYMM (1.2) or
TENSOR_QUANT8_ASYMM_SIGNED (1.3). Zero rois give a zero-sized output.
"""

from __future__ import annotations

import numpy as np

from hal.errors import GeneralFailure
from hal.operations.common import QUANT_RANGE, check_rank, qrange
from hal.operations.context import OperandInfo, OperationContext
from hal.operations.registry import register, sig
from hal.types import OperandType

OT = OperandType
F32 = np.float32

SIGNATURES = [
    sig("V1_2", ["TENSOR_FLOAT32", "TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_FLOAT32"],
        ["TENSOR_FLOAT32"]),
    sig("V1_2", ["TENSOR_FLOAT16", "TENSOR_FLOAT16", "TENSOR_INT32", "TENSOR_FLOAT16"],
        ["TENSOR_FLOAT16"]),
    sig("V1_2", ["TENSOR_QUANT16_ASYMM", "TENSOR_QUANT8_ASYMM", "TENSOR_INT32",
                 "TENSOR_QUANT16_ASYMM"], ["TENSOR_QUANT16_ASYMM"]),
    sig("V1_3", ["TENSOR_QUANT16_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_INT32",
                 "TENSOR_QUANT16_ASYMM"], ["TENSOR_QUANT16_ASYMM"]),
]


# ----------------------------------------------------------------------------- shared helpers

def to_float32(info: OperandInfo, values: np.ndarray | None = None) -> np.ndarray:
    """convertQuantToFloat32 (or a plain cast): float32 real values of an operand."""
    v = info.value if values is None else values
    if info.type in QUANT_RANGE:
        return (v.astype(F32) - F32(info.zero_point)) * F32(info.scale)
    return np.asarray(v).astype(F32)


def from_float32(values: np.ndarray, info: OperandInfo) -> np.ndarray:
    """convertFloat32ToQuant (round half away from zero, saturate) or a cast to the float type."""
    if info.type in QUANT_RANGE:
        lo, hi = qrange(info.type)
        with np.errstate(all="ignore"):
            q = np.asarray(values, dtype=F32) / F32(info.scale)
            q = np.sign(q) * np.floor(np.abs(q) + F32(0.5)) + info.zero_point
        return np.clip(np.nan_to_num(q), lo, hi).astype(info.dtype)
    return np.asarray(values).astype(info.dtype)


def check_box_quant(ctx: OperationContext, info: OperandInfo, what: str):
    """Quantized boxes are TENSOR_QUANT16_ASYMM with scale 0.125 and zero point 0."""
    if info.type in (OT.TENSOR_QUANT16_ASYMM, OT.TENSOR_QUANT16_SYMM):
        ctx.require(info.scale == 0.125 and info.zero_point == 0,
                    f"{what} ({info.type.name}) must have scale 0.125 and zero point 0, got "
                    f"{info.scale} and {info.zero_point}")


def box_transform(rois: np.ndarray, deltas: np.ndarray, heights: np.ndarray,
                  widths: np.ndarray) -> np.ndarray:
    """Apply [R, C, 4] deltas (dx, dy, dw, dh) to [R, 4] corner boxes; clip to per-roi image
    sizes [R]. All float32, in the order of operations of the reference."""
    x1, y1, x2, y2 = (rois[:, k:k + 1] for k in range(4))
    w, h = x2 - x1, y2 - y1
    cx, cy = x1 + w / F32(2), y1 + h / F32(2)
    ncx = cx + w * deltas[..., 0]
    ncy = cy + h * deltas[..., 1]
    with np.errstate(over="ignore"):
        nw = w * np.exp(deltas[..., 2])
        nh = h * np.exp(deltas[..., 3])
    out = np.stack([ncx - nw / F32(2), ncy - nh / F32(2), ncx + nw / F32(2),
                    ncy + nh / F32(2)], axis=-1)
    hi = np.stack([widths, heights, widths, heights], axis=-1)[:, None, :]
    return np.maximum(F32(0), np.minimum(out, hi)).astype(F32)


def iou_with(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Intersection over union (float32) of one [4] box with [K, 4] boxes."""
    area1 = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    area2 = (box[2] - box[0]) * (box[3] - box[1])
    w = np.maximum(np.minimum(boxes[:, 2], box[2]) - np.maximum(boxes[:, 0], box[0]), F32(0))
    h = np.maximum(np.minimum(boxes[:, 3], box[3]) - np.maximum(boxes[:, 1], box[1]), F32(0))
    inter = w * h
    with np.errstate(all="ignore"):
        return (inter / (area1 + area2 - inter)).astype(F32)


def greedy_nms(select: list[int], scores: np.ndarray, boxes_of, max_out: int,
               kernel=None, score_threshold: float = 0.0) -> list[int]:
    """The reference's in-place greedy NMS over candidate indexes ``select``.

    Each round moves the first highest-scoring candidate to the front and discards (by swapping
    to the end, as the reference does, which decides later ties) the rest whose IoU with it
    reaches the threshold (hard: ``kernel`` None, ``score_threshold`` the IoU threshold) or,
    with a soft kernel, whose rescored value falls below ``score_threshold`` (``scores`` is
    updated in place). Returns the kept indexes in selection order.
    """
    sel = list(select)
    start, end = 0, len(sel)
    if max_out < 0:
        max_out = len(sel)
    while start < end and start < max_out:
        best = start
        for i in range(start + 1, end):
            if scores[sel[i]] > scores[sel[best]]:
                best = i
        sel[start], sel[best] = sel[best], sel[start]
        top = sel[start]
        rest = np.asarray(sel[start + 1:end], dtype=np.int64)
        if rest.size:
            iou = iou_with(boxes_of(np.array([top]))[0], boxes_of(rest))
            if kernel is None:
                drop = dict(zip(rest.tolist(), (iou >= F32(score_threshold)).tolist()))
            else:
                scores[rest] = (scores[rest] * kernel(iou)).astype(scores.dtype)
                drop = dict(zip(rest.tolist(), (scores[rest] < F32(score_threshold)).tolist()))
            i = start + 1
            while i < end:
                if drop[sel[i]]:
                    end -= 1
                    sel[i], sel[end] = sel[end], sel[i]
                else:
                    i += 1
        start += 1
    return sel[:start]


# ----------------------------------------------------------------------------- the operation

def validate(ctx: OperationContext):
    for i in range(4):
        check_rank(ctx, i, 1 if i == 2 else 2)
    rois, deltas, batch, info = (ctx.inputs[i].shape for i in range(4))
    if len(rois) == 2 and rois[1]:
        ctx.require(rois[1] == 4, f"input 0 (rois) must have shape [num_rois, 4], got "
                                  f"{list(rois)}")
    if len(deltas) == 2 and deltas[1]:
        ctx.require(deltas[1] % 4 == 0, f"input 1 (deltas) dimension 1 must be a multiple of "
                                        f"4, got {deltas[1]}")
    if len(rois) == 2 and len(deltas) == 2 and rois[0] and deltas[0]:
        ctx.require(rois[0] == deltas[0], f"input 1 (deltas) has {deltas[0]} rows for "
                                          f"{rois[0]} rois")
    if len(rois) == 2 and len(batch) == 1 and rois[0] and batch[0]:
        ctx.require(rois[0] == batch[0], f"input 2 (batch indexes) has {batch[0]} entries for "
                                         f"{rois[0]} rois")
    if len(info) == 2 and info[1]:
        ctx.require(info[1] == 2, f"input 3 (image info) must have shape [batches, 2], got "
                                  f"{list(info)}")
    check_box_quant(ctx, ctx.inputs[0], "input 0 (rois)")
    check_box_quant(ctx, ctx.inputs[3], "input 3 (image info)")
    check_box_quant(ctx, ctx.outputs[0], "output 0")


def prepare(ctx: OperationContext):
    return [ctx.input_shape(1)]


def execute(ctx: OperationContext):
    rois = to_float32(ctx.inputs[0]).reshape(-1, 4)
    deltas = to_float32(ctx.inputs[1])
    n = rois.shape[0]
    if deltas.ndim != 2 or deltas.shape[0] != n or deltas.shape[1] % 4:
        raise GeneralFailure(f"{ctx.name}: deltas {list(deltas.shape)} do not match {n} rois")
    deltas = deltas.reshape(n, deltas.shape[1] // 4, 4)
    batch = ctx.input(2).reshape(-1).astype(np.int64)
    info = to_float32(ctx.inputs[3]).reshape(-1, 2)
    if batch.size != n:
        raise GeneralFailure(f"{ctx.name}: {n} rois and {batch.size} batch indexes")
    if n and (batch.min() < 0 or batch.max() >= info.shape[0]):
        raise GeneralFailure(f"{ctx.name}: a batch index is outside [0, {info.shape[0]})")
    if np.any(rois[:, 0] > rois[:, 2]) or np.any(rois[:, 1] > rois[:, 3]):
        raise GeneralFailure(f"{ctx.name}: a roi has x2 < x1 or y2 < y1")
    boxes = box_transform(rois, deltas, info[batch, 0], info[batch, 1])
    return [from_float32(boxes.reshape(n, deltas.shape[1] * 4), ctx.outputs[0])]


register("AXIS_ALIGNED_BBOX_TRANSFORM", execute, signatures=SIGNATURES, validate=validate,
         prepare=prepare, family="bbox")
