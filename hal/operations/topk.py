"""TOPK_V2: the k largest entries of the last dimension, with their indices.

| input 0 (rank >= 1)                        | input 1 | output 0       | output 1     |
|--------------------------------------------|---------|----------------|--------------|
| F32, F16, INT32, Q8 (1.2); Q8 signed (1.3) | INT32 k | as input 0     | TENSOR_INT32 |

Outputs have the input's shape with the last dimension replaced by k (1 <= k <= last dim).
Values are sorted in descending order; of two equal values the one with the larger index
comes first, as the spec states and the reference's sort of (value, index) pairs does.
Quantized values keep the input's scale and zero point.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_TYPES = [("V1_2", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16"), ("V1_2", "TENSOR_INT32"),
          ("V1_2", "TENSOR_QUANT8_ASYMM"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
SIGNATURES = [sig(v, [t, "INT32"], [t, "TENSOR_INT32"]) for v, t in _TYPES]


def _k(ctx: OperationContext, last: int):
    k = ctx.scalar(1)
    if k is None:
        raise LookupError("TOPK_V2: input 1 (k) is not known before execution")
    ctx.require(k >= 1, f"input 1 (k) must be >= 1, got {k}")
    if last:
        ctx.require(k <= last, f"input 1 (k) must be <= the last input dimension {last}, "
                    f"got {k}")
    return k


def validate(ctx: OperationContext):
    shape = ctx.input_shape(0)
    if ctx.scalar(1) is not None:
        _k(ctx, shape[-1] if shape else 0)
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")


def prepare(ctx: OperationContext):
    shape = ctx.input_shape(0)
    ctx.require(len(shape) >= 1, "input 0 must have rank >= 1")
    out = shape[:-1] + (_k(ctx, shape[-1]),)
    return [out, out]


def execute(ctx: OperationContext):
    x = ctx.input(0)
    k = ctx.outputs[0].shape[-1]
    # Stable ascending sort, reversed: values descending, equal values by descending index.
    order = np.argsort(x, axis=-1, kind="stable")[..., ::-1][..., :k]
    values = np.take_along_axis(x, order, axis=-1)
    return [values.astype(x.dtype), order.astype(np.int32)]


register("TOPK_V2", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="topk")
