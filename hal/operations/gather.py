"""GATHER: pick slices of a tensor along an axis by index.

| input | meaning                                                        |
|-------|----------------------------------------------------------------|
| 0     | n-D tensor, rank >= 1                                          |
| 1     | INT32 axis in [-n, n)                                          |
| 2     | k-D TENSOR_INT32 indices, each in [0, input0.dimension[axis])  |

Output: input0.dimension[:axis] + indices.dimension + input0.dimension[axis + 1:]
(rank n + k - 1), with input 0's type and quantization. An index out of bounds fails the
execution.
Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32, TENSOR_QUANT8_ASYMM (1.2),
TENSOR_QUANT8_ASYMM_SIGNED (1.3).
"""

from __future__ import annotations

import numpy as np

from hal.errors import GeneralFailure
from hal.operations.common import check_axis, check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_TYPES = [("V1_2", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16"), ("V1_2", "TENSOR_INT32"),
          ("V1_2", "TENSOR_QUANT8_ASYMM"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
SIGNATURES = [sig(v, [t, "INT32", "TENSOR_INT32"], [t]) for v, t in _TYPES]


def _axis(ctx: OperationContext, rank: int) -> int:
    return check_axis(ctx, 1, rank)


def validate(ctx: OperationContext):
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")
    rank = ctx.inputs[0].rank
    if rank and ctx.scalar(1) is not None:
        axis = _axis(ctx, rank)
        dim = ctx.input_shape(0)[axis]
        if dim and ctx.value_known(2):
            idx = ctx.input(2)
            ctx.require(bool(np.all((idx >= 0) & (idx < dim))),
                        f"input 2 (indices) must be in [0, {dim}), got {idx.reshape(-1).tolist()}")


def prepare(ctx: OperationContext):
    shape = ctx.input_shape(0)
    ctx.require(len(shape) >= 1, "input 0 must have rank >= 1")
    axis = _axis(ctx, len(shape))
    return [tuple(shape[:axis]) + tuple(ctx.input_shape(2)) + tuple(shape[axis + 1:])]


def execute(ctx: OperationContext):
    x = ctx.input(0)
    axis = _axis(ctx, x.ndim)
    idx = ctx.input(2)
    if idx.size and (idx.min() < 0 or idx.max() >= x.shape[axis]):
        raise GeneralFailure(f"GATHER: input 2 (indices) holds values outside [0, "
                             f"{x.shape[axis]})")
    return [np.take(x, idx.astype(np.int64), axis=axis)]


register("GATHER", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="gather")
