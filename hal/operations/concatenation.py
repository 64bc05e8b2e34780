"""CONCATENATION: join tensors along an axis.

| input    | meaning                                                                |
|----------|------------------------------------------------------------------------|
| 0 .. n-1 | tensors of one type and rank <= 4, equal except along the axis         |
| n        | INT32 axis in [-rank, rank)                                            |

Zero-sized inputs are allowed since 1.2. Output: the same type, the axis dimension is the
sum of the inputs'. Quantized inputs whose scale or zero point differ from the output's are
requantized (TENSOR_QUANT8_ASYMM since 1.2) the way TFLite's ConcatenationWithScaling does
it: round(q * s_in / s_out - zp_in * s_in / s_out) + zp_out in float32, saturated.

Types: TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM (1.0), TENSOR_FLOAT16 (1.2),
TENSOR_QUANT8_ASYMM_SIGNED (1.3).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import QUANT_RANGE, check_axis, qrange, round_half_away
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_TYPES = [("V1_0", "TENSOR_FLOAT32"), ("V1_0", "TENSOR_QUANT8_ASYMM"),
          ("V1_2", "TENSOR_FLOAT16"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
SIGNATURES = [sig(v, [t, "INT32"], [t], variadic_inputs=True) for v, t in _TYPES]


def _axis(ctx: OperationContext, rank: int) -> int:
    return check_axis(ctx, ctx.num_inputs() - 1, rank)


def _out_shape(ctx: OperationContext, shapes, axis: int):
    out = list(shapes[0])
    for i, s in enumerate(shapes[1:], 1):
        for d, (a, b) in enumerate(zip(shapes[0], s)):
            if d != axis and a and b:
                ctx.require(a == b, f"input {i} dimension {d} is {b}, input 0 has {a}; the "
                                    f"inputs may differ only along axis {axis}")
            if d != axis and not out[d]:
                out[d] = b
        out[axis] = out[axis] + s[axis] if out[axis] and s[axis] else 0
    return tuple(out)


def validate(ctx: OperationContext):
    n = ctx.num_inputs() - 1
    ranks = {ctx.inputs[i].rank for i in range(n)} - {0}
    ctx.require(len(ranks) <= 1, f"inputs 0..{n - 1} must have the same rank, got "
                                 f"{sorted(ranks)}")
    if not ranks:
        return
    rank = ranks.pop()
    ctx.require(rank <= 4, f"the inputs must have rank <= 4, got rank {rank}")
    if ctx.scalar(n) is None:
        return
    axis = _axis(ctx, rank)
    shapes = [ctx.input_shape(i) for i in range(n) if ctx.inputs[i].rank]
    _out_shape(ctx, shapes, axis)


def prepare(ctx: OperationContext):
    n = ctx.num_inputs() - 1
    shapes = [ctx.input_shape(i) for i in range(n)]
    rank = len(shapes[0])
    ctx.require(all(len(s) == rank for s in shapes), "the inputs must have the same rank")
    axis = _axis(ctx, rank)
    out = list(_out_shape(ctx, shapes, axis))
    out[axis] = sum(s[axis] for s in shapes)
    return [tuple(out)]


def _requantize(ctx: OperationContext, i: int, x: np.ndarray) -> np.ndarray:
    src, dst = ctx.inputs[i], ctx.outputs[0]
    if src.scale == dst.scale and src.zero_point == dst.zero_point:
        return x
    scale = np.float32(src.scale) * (np.float32(1.0) / np.float32(dst.scale))
    bias = np.float32(-src.zero_point) * scale
    v = round_half_away(x.astype(np.float32) * scale + bias) + dst.zero_point
    lo, hi = qrange(dst.type)
    return np.clip(v, lo, hi).astype(dst.dtype)


def execute(ctx: OperationContext):
    shape = ctx.outputs[0].shape
    n = ctx.num_inputs() - 1
    axis = _axis(ctx, len(shape))
    xs = [ctx.input(i) for i in range(n)]
    if ctx.outputs[0].type in QUANT_RANGE:
        xs = [_requantize(ctx, i, x) for i, x in enumerate(xs)]
    return [np.concatenate(xs, axis=axis).astype(ctx.outputs[0].dtype, copy=False)]


register("CONCATENATION", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="concatenation")
