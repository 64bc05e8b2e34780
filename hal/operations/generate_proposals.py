"""GENERATE_PROPOSALS: anchors + box deltas -> clipped proposals, top-k, min size, hard NMS (1.2).

| input | operand                                                                           |
|-------|-----------------------------------------------------------------------------------|
| 0     | scores [batches, height, width, num_anchors] (NCHW: [batches, num_anchors, h, w]) |
| 1     | deltas [batches, height, width, num_anchors * 4] (dx, dy, dw, dh) (NCHW likewise) |
| 2     | anchors [num_anchors, 4] (x1, y1, x2, y2)                                         |
| 3     | image info [batches, 2] (height, width)                                           |
| 4, 5  | height stride, width stride (image / feature map)                                 |
| 6     | INT32 pre-NMS top n (<= 0: all)                                                   |
| 7     | INT32 post-NMS top n (<= 0: all)                                                  |
| 8     | IoU threshold of the hard NMS                                                     |
| 9     | min size: boxes narrower or lower than it are dropped                             |
| 10    | BOOL NCHW                                                                         |

Outputs: 0 scores [n], 1 boxes [n, 4], 2 TENSOR_INT32 batch index [n].

Types: TENSOR_FLOAT32 with FLOAT32 scalars, TENSOR_FLOAT16 with FLOAT16 scalars (1.2);
TENSOR_QUANT8_ASYMM (1.2) / TENSOR_QUANT8_ASYMM_SIGNED (1.3) scores and deltas with
TENSOR_QUANT16_SYMM anchors, TENSOR_QUANT16_ASYMM image info and output boxes (scale 0.125,
zero point 0) and FLOAT32 scalars; output scores keep the input scores' scale and zero point.
"""

from __future__ import annotations

import numpy as np

from hal.errors import GeneralFailure
from hal.operations.bbox import (
    F32,
    box_transform,
    check_box_quant,
    from_float32,
    greedy_nms,
    to_float32,
)
from hal.operations.common import QUANT8_TENSORS, check_rank
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_FORMS = [("V1_2", "TENSOR_FLOAT32", "TENSOR_FLOAT32", "TENSOR_FLOAT32", "TENSOR_FLOAT32",
           "FLOAT32"),
          ("V1_2", "TENSOR_FLOAT16", "TENSOR_FLOAT16", "TENSOR_FLOAT16", "TENSOR_FLOAT16",
           "FLOAT16"),
          ("V1_2", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT16_SYMM",
           "TENSOR_QUANT16_ASYMM", "FLOAT32"),
          ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_ASYMM_SIGNED",
           "TENSOR_QUANT16_SYMM", "TENSOR_QUANT16_ASYMM", "FLOAT32")]
SIGNATURES = [sig(v, [s, d, a, i, f, f, "INT32", "INT32", f, f, "BOOL"],
                  [s, i, "TENSOR_INT32"]) for v, s, d, a, i, f in _FORMS]


def validate(ctx: OperationContext):
    for i, r in ((0, 4), (1, 4), (2, 2), (3, 2)):
        check_rank(ctx, i, r)
    scores, deltas, anchors, info = (ctx.inputs[i].shape for i in range(4))
    nchw = ctx.scalar(10)
    if len(anchors) == 2 and anchors[1]:
        ctx.require(anchors[1] == 4, f"input 2 (anchors) must have shape [num_anchors, 4], "
                                     f"got {list(anchors)}")
    if len(info) == 2 and info[1]:
        ctx.require(info[1] == 2, f"input 3 (image info) must have shape [batches, 2], got "
                                  f"{list(info)}")
    if len(scores) == 4 and len(deltas) == 4 and nchw is not None:
        c = 1 if nchw else 3
        sp = [d for k, d in enumerate(scores) if k != c]
        dp = [d for k, d in enumerate(deltas) if k != c]
        ctx.require(all(a == b or 0 in (a, b) for a, b in zip(sp, dp)),
                    f"input 1 (deltas) {list(deltas)} does not match input 0 (scores) "
                    f"{list(scores)}")
        if scores[c] and deltas[c]:
            ctx.require(deltas[c] == scores[c] * 4,
                        f"input 1 (deltas) must have num_anchors * 4 = {scores[c] * 4} "
                        f"channels, got {deltas[c]}")
        if len(anchors) == 2 and scores[c] and anchors[0]:
            ctx.require(anchors[0] == scores[c], f"input 2 (anchors) has {anchors[0]} rows for "
                                                 f"{scores[c]} anchors")
    for i, what in ((4, "height stride"), (5, "width stride")):
        v = ctx.scalar(i)
        ctx.require(v is None or v > 0, f"input {i} ({what}) must be > 0, got {v}")
    for info_, what in ((ctx.inputs[2], "input 2 (anchors)"), (ctx.inputs[3], "input 3 (image "
                        "info)"), (ctx.outputs[1], "output 1 (boxes)")):
        check_box_quant(ctx, info_, what)
    if ctx.inputs[0].type in QUANT8_TENSORS:
        i, o = ctx.inputs[0], ctx.outputs[0]
        ctx.require(i.scale == o.scale and i.zero_point == o.zero_point,
                    "output 0 (scores) must have the scale and zero point of input 0")


def execute(ctx: OperationContext):
    scores = to_float32(ctx.inputs[0])
    deltas = to_float32(ctx.inputs[1])
    if ctx.scalar(10):
        scores, deltas = scores.transpose(0, 2, 3, 1), deltas.transpose(0, 2, 3, 1)
    anchors = to_float32(ctx.inputs[2]).reshape(-1, 4)
    info = to_float32(ctx.inputs[3]).reshape(-1, 2)
    nb, h, w, na = scores.shape
    if deltas.shape != (nb, h, w, na * 4) or anchors.shape[0] != na or info.shape[0] != nb:
        raise GeneralFailure(f"{ctx.name}: inconsistent shapes: scores {list(scores.shape)}, "
                             f"deltas {list(deltas.shape)}, anchors {list(anchors.shape)}, "
                             f"image info {list(info.shape)} (NHWC)")
    h_stride, w_stride = F32(ctx.scalar(4)), F32(ctx.scalar(5))
    pre_n, post_n = int(ctx.scalar(6)), int(ctx.scalar(7))
    iou_thr, min_size = ctx.scalar(8), F32(ctx.scalar(9))
    hs = np.arange(h, dtype=F32) * h_stride
    ws = np.arange(w, dtype=F32) * w_stride
    shift = np.stack(np.broadcast_arrays(ws[None, :, None], hs[:, None, None],
                                         ws[None, :, None], hs[:, None, None]), axis=-1)
    base = (anchors[None, None, :, :] + shift).reshape(-1, 4).astype(F32)
    if np.any(base[:, 0] > base[:, 2]) or np.any(base[:, 1] > base[:, 3]):
        raise GeneralFailure(f"{ctx.name}: an anchor has x2 < x1 or y2 < y1")
    size = h * w * na
    out_scores, out_boxes, out_batch = [], [], []
    for b in range(nb):
        sc = scores[b].reshape(-1)
        boxes = box_transform(base, deltas[b].reshape(size, 1, 4), np.full(size, info[b, 0]),
                              np.full(size, info[b, 1])).reshape(size, 4)
        select = np.arange(size)
        if 0 < pre_n < size:
            select = np.argsort(-sc, kind="stable")[:pre_n]
        bw = boxes[select, 2] - boxes[select, 0]
        bh = boxes[select, 3] - boxes[select, 1]
        select = select[~((bw < min_size) | (bh < min_size))]
        kept = greedy_nms(select.tolist(), sc, boxes.__getitem__, post_n if post_n > 0 else -1,
                          None, iou_thr)
        out_scores.append(sc[kept])
        out_boxes.append(boxes[kept])
        out_batch.append(np.full(len(kept), b, dtype=np.int32))
    cat = np.concatenate
    return [from_float32(cat(out_scores or [np.zeros(0, F32)]), ctx.outputs[0]),
            from_float32(cat(out_boxes or [np.zeros((0, 4), F32)]).reshape(-1, 4),
                         ctx.outputs[1]),
            cat(out_batch or [np.zeros(0, np.int32)]).astype(np.int32)]


register("GENERATE_PROPOSALS", execute, signatures=SIGNATURES, validate=validate,
         family="generate_proposals")
