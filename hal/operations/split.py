"""SPLIT: split a tensor along an axis into equal parts.

| input | meaning                                                        |
|-------|----------------------------------------------------------------|
| 0     | n-D tensor, rank >= 1                                          |
| 1     | INT32 axis in [-n, n)                                          |
| 2     | INT32 num_splits, > 0, dividing the axis dimension; = the number of outputs |

Outputs 0 .. num_splits-1: the parts, of input 0's type and quantization.
Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32, TENSOR_QUANT8_ASYMM (1.2),
TENSOR_QUANT8_ASYMM_SIGNED (1.3).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_axis, check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_TYPES = [("V1_2", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16"), ("V1_2", "TENSOR_INT32"),
          ("V1_2", "TENSOR_QUANT8_ASYMM"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
SIGNATURES = [sig(v, [t, "INT32", "INT32"], [t], variadic_outputs=True) for v, t in _TYPES]


def _params(ctx: OperationContext, shape):
    rank = len(shape)
    axis, num = ctx.scalar(1), ctx.scalar(2)
    if num is not None:
        ctx.require(num > 0, f"input 2 (num_splits) must be > 0, got {num}")
        ctx.require(num == len(ctx.outputs), f"input 2 (num_splits) is {num}, but the "
                                             f"operation has {len(ctx.outputs)} outputs")
    if axis is None or not rank:
        return None, num
    axis = check_axis(ctx, 1, rank, axis)
    if num is not None and shape[axis]:
        ctx.require(shape[axis] % num == 0, f"input 2 (num_splits) {num} must divide the size "
                                            f"{shape[axis]} of axis {axis}")
    return axis, num


def validate(ctx: OperationContext):
    for k, out in enumerate(ctx.outputs):
        check_same_quant(ctx, ctx.inputs[0], out, f"input 0 and output {k}")
    _params(ctx, ctx.input_shape(0))


def prepare(ctx: OperationContext):
    shape = ctx.input_shape(0)
    ctx.require(len(shape) >= 1, "input 0 must have rank >= 1")
    axis, num = _params(ctx, shape)
    out = list(shape)
    out[axis] = shape[axis] // num
    return [tuple(out)] * num


def execute(ctx: OperationContext):
    x = ctx.input(0)
    axis, num = _params(ctx, x.shape)
    return [np.ascontiguousarray(p) for p in np.split(x, num, axis=axis)]


register("SPLIT", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="split")
