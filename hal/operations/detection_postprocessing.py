"""DETECTION_POSTPROCESSING: decode anchor boxes, then hard NMS (SSD post-processing, HAL 1.2).

| input | operand                                                                           |
|-------|-----------------------------------------------------------------------------------|
| 0     | scores [batches, num_anchors, num_classes] (class 0 is background)                |
| 1     | deltas [batches, num_anchors, length_box_encoding >= 4] (dy, dx, dh, dw, ...)     |
| 2     | anchors [num_anchors, 4] (ctr_y, ctr_x, h, w)                                     |
| 3..6  | scale of dy, dx, dh, dw (> 0)                                                     |
| 7     | BOOL regular NMS (per class) or fast NMS (on each anchor's best class)            |
| 8     | INT32 max detections (> 0)                                                        |
| 9     | INT32 max classes per detection (fast NMS)                                        |
| 10    | INT32 max detections per class (regular NMS)                                      |
| 11    | score threshold; 12: IoU threshold                                                |
| 13    | BOOL background in label map (class labels start at 1, else at 0)                 |

Outputs: 0 scores [batches, max_detections], 1 boxes [batches, max_detections, 4]
(y1, x1, y2, x2), 2 TENSOR_INT32 classes [batches, max_detections], 3 TENSOR_INT32 number of
detections [batches]; unused slots are 0.

Types: TENSOR_FLOAT32 with FLOAT32 scalars, TENSOR_FLOAT16 with FLOAT16 scalars (1.2).
Computed in float32.
"""

from __future__ import annotations

import numpy as np

from hal.errors import GeneralFailure
from hal.operations.bbox import F32, greedy_nms
from hal.operations.common import check_rank
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

SIGNATURES = [
    sig("V1_2", [t, t, t, f, f, f, f, "BOOL", "INT32", "INT32", "INT32", f, f, "BOOL"],
        [t, t, "TENSOR_INT32", "TENSOR_INT32"])
    for t, f in (("TENSOR_FLOAT32", "FLOAT32"), ("TENSOR_FLOAT16", "FLOAT16"))]


def validate(ctx: OperationContext):
    check_rank(ctx, 0, 3)
    check_rank(ctx, 1, 3)
    check_rank(ctx, 2, 2)
    scores, deltas, anchors = (ctx.inputs[i].shape for i in range(3))
    if len(scores) == 3 and len(deltas) == 3:
        for k, what in ((0, "batches"), (1, "anchors")):
            if scores[k] and deltas[k]:
                ctx.require(scores[k] == deltas[k], f"input 1 (deltas) has {deltas[k]} "
                                                    f"{what}, input 0 (scores) {scores[k]}")
    if len(scores) == 3 and scores[2]:
        ctx.require(scores[2] >= 2, f"input 0 (scores) needs a background and at least one "
                                    f"class, got {scores[2]} classes")
    if len(deltas) == 3 and deltas[2]:
        ctx.require(deltas[2] >= 4, f"input 1 (deltas) box encoding length must be >= 4, got "
                                    f"{deltas[2]}")
    if len(anchors) == 2:
        if anchors[1]:
            ctx.require(anchors[1] == 4, f"input 2 (anchors) must have shape [num_anchors, 4],"
                                         f" got {list(anchors)}")
        if len(scores) == 3 and scores[1] and anchors[0]:
            ctx.require(anchors[0] == scores[1], f"input 2 (anchors) has {anchors[0]} rows for "
                                                 f"{scores[1]} anchors")
    for i, what in ((3, "dy scale"), (4, "dx scale"), (5, "dh scale"), (6, "dw scale")):
        v = ctx.scalar(i)
        ctx.require(v is None or v > 0, f"input {i} ({what}) must be > 0, got {v}")
    v = ctx.scalar(8)
    ctx.require(v is None or v > 0, f"input 8 (max detections) must be > 0, got {v}")
    regular = ctx.scalar(7)
    if regular is not None:
        i, what = (10, "max detections per class") if regular else (9, "max classes per "
                                                                       "detection")
        v = ctx.scalar(i)
        ctx.require(v is None or v > 0, f"input {i} ({what}) must be > 0, got {v}")


def prepare(ctx: OperationContext):
    n = ctx.input_shape(0)[0] if ctx.inputs[0].rank == 3 else 0
    d = ctx.scalar(8)
    if d is None:
        return None
    return [(n, d), (n, d, 4), (n, d), (n,)]


def _decode(deltas, anchors, sy, sx, sh, sw):
    """[A, 4] boxes (y1, x1, y2, x2) from deltas and (ctr_y, ctr_x, h, w) anchors, float32."""
    ay, ax, ah, aw = (anchors[:, k] for k in range(4))
    y = ay + ah * deltas[:, 0] / sy
    x = ax + aw * deltas[:, 1] / sx
    with np.errstate(over="ignore"):
        h_half = ah * np.exp(deltas[:, 2] / sh) * F32(0.5)
        w_half = aw * np.exp(deltas[:, 3] / sw) * F32(0.5)
    return np.stack([y - h_half, x - w_half, y + h_half, x + w_half], axis=-1).astype(F32)


def execute(ctx: OperationContext):
    scores = ctx.input(0).astype(F32)
    deltas = ctx.input(1).astype(F32)
    anchors = ctx.input(2).astype(F32).reshape(-1, 4)
    nb, na, nc = scores.shape
    if deltas.shape[:2] != (nb, na) or deltas.shape[2] < 4 or anchors.shape[0] != na:
        raise GeneralFailure(f"{ctx.name}: scores {list(scores.shape)}, deltas "
                             f"{list(deltas.shape)} and anchors {list(anchors.shape)} do not fit")
    sy, sx, sh, sw = (F32(ctx.scalar(i)) for i in range(3, 7))
    regular = bool(ctx.scalar(7))
    max_det, max_cls, max_per_cls = (int(ctx.scalar(i)) for i in (8, 9, 10))
    score_thr, iou_thr = F32(ctx.scalar(11)), ctx.scalar(12)
    label_shift = 0 if ctx.scalar(13) else 1
    out_scores = np.zeros((nb, max_det), F32)
    out_boxes = np.zeros((nb, max_det, 4), F32)
    out_classes = np.zeros((nb, max_det), np.int32)
    out_count = np.zeros(nb, np.int32)
    for b in range(nb):
        boxes = _decode(deltas[b], anchors, sy, sx, sh, sw)
        sc = scores[b].reshape(-1)
        if regular:
            per_anchor = boxes[np.arange(na * nc) // nc]
            select = []
            for c in range(1, nc):
                cand = [a * nc + c for a in range(na) if sc[a * nc + c] > score_thr]
                select += greedy_nms(cand, sc, per_anchor.__getitem__, max_per_cls,
                                     None, iou_thr)
            select.sort(key=lambda i: -sc[i])
            dets = [(i // nc, i % nc) for i in select[:max_det]]
        else:
            cls_scores = scores[b][:, 1:]
            best = cls_scores.max(axis=1) if nc > 1 else np.zeros(na, F32)
            cand = [a for a in range(na) if best[a] > score_thr]
            kept = greedy_nms(cand, best.copy(), boxes.__getitem__, max_det, None, iou_thr)
            dets = []
            for a in kept:
                order = np.argsort(-cls_scores[a], kind="stable")[:max_cls]
                dets += [(a, int(c) + 1) for c in order]
            dets = dets[:max_det]
        for k, (a, c) in enumerate(dets):
            out_scores[b, k] = scores[b, a, c]
            out_boxes[b, k] = boxes[a]
            out_classes[b, k] = c - label_shift
        out_count[b] = len(dets)
    dt = ctx.outputs[0].dtype
    return [out_scores.astype(dt), out_boxes.astype(dt), out_classes, out_count]


register("DETECTION_POSTPROCESSING", execute, signatures=SIGNATURES, validate=validate,
         prepare=prepare, family="detection_postprocessing")
