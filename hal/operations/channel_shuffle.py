"""CHANNEL_SHUFFLE: interleave the channel groups of a tensor.

| input | meaning                                                    |
|-------|------------------------------------------------------------|
| 0     | n-D tensor, rank <= 4                                      |
| 1     | INT32 num_groups, > 0, dividing the channel dimension      |
| 2     | INT32 axis (the channel dimension) in [-n, n)              |

output_channel[k * num_groups + g] = input_channel[g * group_size + k], group_size =
channels / num_groups. Output 0 has input 0's type, shape and quantization.
Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM (1.2),
TENSOR_QUANT8_ASYMM_SIGNED (1.3).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_axis, check_rank, check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_TYPES = [("V1_2", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16"),
          ("V1_2", "TENSOR_QUANT8_ASYMM"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
SIGNATURES = [sig(v, [t, "INT32", "INT32"], [t]) for v, t in _TYPES]


def _params(ctx: OperationContext, shape):
    """(groups, axis); either None while not known."""
    groups, axis = ctx.scalar(1), ctx.scalar(2)
    if groups is not None:
        ctx.require(groups > 0, f"input 1 (num_groups) must be > 0, got {groups}")
    rank = len(shape)
    if axis is None or not rank:
        return groups, None
    axis = check_axis(ctx, 2, rank, axis)
    if groups is not None and shape[axis]:
        ctx.require(shape[axis] % groups == 0, f"input 1 (num_groups) {groups} must divide "
                                               f"the {shape[axis]} channels of axis {axis}")
    return groups, axis


def validate(ctx: OperationContext):
    check_rank(ctx, 0, (1, 4))
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")
    _params(ctx, ctx.input_shape(0))


def prepare(ctx: OperationContext):
    _params(ctx, ctx.input_shape(0))
    return [tuple(ctx.input_shape(0))]


def execute(ctx: OperationContext):
    x = ctx.input(0)
    groups, axis = _params(ctx, x.shape)
    y = np.moveaxis(x, axis, -1)
    c = y.shape[-1]
    y = y.reshape(y.shape[:-1] + (groups, c // groups)).swapaxes(-1, -2).reshape(y.shape)
    return [np.ascontiguousarray(np.moveaxis(y, -1, axis))]


register("CHANNEL_SHUFFLE", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="channel_shuffle")
