"""BOX_WITH_NMS_LIMIT: per-class greedy non-maximum suppression (hard, linear, gaussian; 1.2).

| input | operand                                                                         |
|-------|---------------------------------------------------------------------------------|
| 0     | scores [num_rois, num_classes] (class 0 is background and never selected)       |
| 1     | boxes [num_rois, num_classes * 4] (x1, y1, x2, y2)                              |
| 2     | TENSOR_INT32 batch index [num_rois]; a batch's rois are consecutive             |
| 3     | score_threshold: candidates need a score > it                                   |
| 4     | INT32 max detections per image (negative: unlimited)                            |
| 5     | INT32 kernel: 0 hard, 1 linear, 2 gaussian                                      |
| 6, 7  | IoU threshold (hard, linear), sigma (gaussian)                                  |
| 8     | nms_score_threshold: soft-NMS drops boxes whose rescored value is below it      |

Outputs: 0 scores [n], 1 boxes [n, 4], 2 TENSOR_INT32 classes [n], 3 TENSOR_INT32 batch
indexes [n]; per image sorted by class, then by descending score. No detections give
zero-sized outputs.

Types: TENSOR_FLOAT32 with FLOAT32 scalars, TENSOR_FLOAT16 with FLOAT16 scalars (1.2);
TENSOR_QUANT8_ASYMM (1.2) / TENSOR_QUANT8_ASYMM_SIGNED (1.3) scores with TENSOR_QUANT16_ASYMM
boxes (scale 0.125, zero point 0) and FLOAT32 scalars; quantized output scores keep the input's
scale and zero point. Computed in float32 like the reference.
"""

from __future__ import annotations

import numpy as np

from hal.errors import GeneralFailure
from hal.operations.bbox import F32, check_box_quant, from_float32, greedy_nms, to_float32
from hal.operations.common import QUANT8_TENSORS, check_rank
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_FORMS = [("V1_2", "TENSOR_FLOAT32", "TENSOR_FLOAT32", "FLOAT32"),
          ("V1_2", "TENSOR_FLOAT16", "TENSOR_FLOAT16", "FLOAT16"),
          ("V1_2", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT16_ASYMM", "FLOAT32"),
          ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT16_ASYMM", "FLOAT32")]
SIGNATURES = [sig(v, [s, b, "TENSOR_INT32", f, "INT32", "INT32", f, f, f],
                  [s, b, "TENSOR_INT32", "TENSOR_INT32"]) for v, s, b, f in _FORMS]

HARD, LINEAR, GAUSSIAN = 0, 1, 2


def validate(ctx: OperationContext):
    check_rank(ctx, 0, 2)
    check_rank(ctx, 1, 2)
    check_rank(ctx, 2, 1)
    scores, boxes, batch = (ctx.inputs[i].shape for i in range(3))
    if len(scores) == 2 and len(boxes) == 2:
        if scores[1] and boxes[1]:
            ctx.require(boxes[1] == scores[1] * 4,
                        f"input 1 (boxes) must have num_classes * 4 = {scores[1] * 4} columns, "
                        f"got {boxes[1]}")
        if scores[0] and boxes[0]:
            ctx.require(scores[0] == boxes[0], f"input 1 (boxes) has {boxes[0]} rows for "
                                               f"{scores[0]} rois")
    if len(scores) == 2 and len(batch) == 1 and scores[0] and batch[0]:
        ctx.require(scores[0] == batch[0], f"input 2 (batch indexes) has {batch[0]} entries "
                                           f"for {scores[0]} rois")
    kernel = ctx.scalar(5)
    ctx.require(kernel is None or kernel in (HARD, LINEAR, GAUSSIAN),
                f"input 5 (NMS kernel) must be 0 (hard), 1 (linear) or 2 (gaussian), got "
                f"{kernel}")
    sigma = ctx.scalar(7)
    if kernel == GAUSSIAN:
        ctx.require(sigma is None or sigma > 0,
                    f"input 7 (sigma) must be > 0 for the gaussian kernel, got {sigma}")
    check_box_quant(ctx, ctx.inputs[1], "input 1 (boxes)")
    check_box_quant(ctx, ctx.outputs[1], "output 1 (boxes)")
    if ctx.inputs[0].type in QUANT8_TENSORS:
        i, o = ctx.inputs[0], ctx.outputs[0]
        ctx.require(i.scale == o.scale and i.zero_point == o.zero_point,
                    "output 0 (scores) must have the scale and zero point of input 0")


def _kernel(kind: int, iou_threshold: float, sigma: float):
    thr = F32(iou_threshold)
    if kind == HARD:
        return lambda iou: np.where(iou < thr, F32(1), F32(0))
    if kind == LINEAR:
        return lambda iou: np.where(iou < thr, F32(1), F32(1) - iou)
    with np.errstate(all="ignore"):
        neg_sigma = F32(sigma)
        return lambda iou: np.exp(F32(-1) * iou * iou / neg_sigma).astype(F32)


def batch_runs(batch: np.ndarray) -> list[tuple[int, int, int]]:
    """(batch index, first roi, count) for each run of equal consecutive batch indexes."""
    runs = []
    for i, b in enumerate(batch.tolist()):
        if runs and runs[-1][0] == b:
            runs[-1][2] += 1
        else:
            runs.append([b, i, 1])
    return [tuple(r) for r in runs]


def execute(ctx: OperationContext):
    scores = to_float32(ctx.inputs[0])
    n, c = scores.shape
    boxes = to_float32(ctx.inputs[1]).reshape(n, c, 4)
    batch = ctx.input(2).reshape(-1)
    if batch.size != n:
        raise GeneralFailure(f"{ctx.name}: {batch.size} batch indexes for {n} rois")
    score_thr = ctx.scalar(3)
    max_det = int(ctx.scalar(4))
    kernel = _kernel(int(ctx.scalar(5)), ctx.scalar(6), ctx.scalar(7))
    nms_thr = ctx.scalar(8)
    chosen = []  # (roi, class, score, batch)
    for b, first, count in batch_runs(batch):
        sc = scores[first:first + count].reshape(-1).copy()
        bx = boxes[first:first + count].reshape(-1, 4)
        head = bx[:count]  # the rows the reference checks
        if np.any(head[:, 0] > head[:, 2]) or np.any(head[:, 1] > head[:, 3]):
            raise GeneralFailure(f"{ctx.name} (operation {ctx.op_index}): a box of batch {b} "
                                 "has x2 < x1 or y2 < y1")
        result = []
        for cls in range(1, c):
            cand = [r * c + cls for r in range(count) if sc[r * c + cls] > F32(score_thr)]
            result += greedy_nms(cand, sc, bx.__getitem__, max_det, kernel, nms_thr)
        result.sort(key=lambda i: -sc[i])
        if 0 <= max_det < len(result):
            result = result[:max_det]
        result.sort(key=lambda i: (i % c, -sc[i]))
        chosen += [(first + i // c, i % c, sc[i], b) for i in result]
    k = len(chosen)
    out_scores = np.array([s for _, _, s, _ in chosen], dtype=F32)
    out_boxes = np.array([boxes[r, cls] for r, cls, _, _ in chosen], dtype=F32).reshape(k, 4)
    classes = np.array([cls for _, cls, _, _ in chosen], dtype=np.int32)
    batches = np.array([b for _, _, _, b in chosen], dtype=np.int32)
    return [from_float32(out_scores, ctx.outputs[0]), from_float32(out_boxes, ctx.outputs[1]),
            classes, batches]


register("BOX_WITH_NMS_LIMIT", execute, signatures=SIGNATURES, validate=validate, family="nms")
