"""ARGMAX, ARGMIN: index of the largest / smallest element along one axis.

| op     | input 0 (rank >= 1)                         | input 1      | output 0            |
|--------|---------------------------------------------|--------------|---------------------|
| ARGMAX | F32, F16, INT32, Q8 (1.2); Q8 signed (1.3)  | INT32 axis   | TENSOR_INT32        |
| ARGMIN | idem                                        | idem         | TENSOR_INT32        |

The axis lies in [-n, n). The output drops the axis dimension; a 1-D input gives shape [1].
Ties resolve to the lowest index (the reference keeps the first extremum it meets).
Quantized inputs compare their stored values (scale > 0 keeps the order).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_axis
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_TYPES = [("V1_2", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16"), ("V1_2", "TENSOR_INT32"),
          ("V1_2", "TENSOR_QUANT8_ASYMM"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
SIGNATURES = [sig(v, [t, "INT32"], ["TENSOR_INT32"]) for v, t in _TYPES]


def _axis(ctx: OperationContext, rank: int):
    axis = ctx.scalar(1)
    if axis is None:
        raise LookupError(f"{ctx.name}: input 1 (axis) is not known before execution")
    return check_axis(ctx, 1, rank, axis)


def validate(ctx: OperationContext):
    rank = ctx.inputs[0].rank
    if rank and ctx.scalar(1) is not None:
        _axis(ctx, rank)


def prepare(ctx: OperationContext):
    shape = ctx.input_shape(0)
    axis = _axis(ctx, len(shape))
    out = shape[:axis] + shape[axis + 1:]
    return [out if out else (1,)]


def execute(ctx: OperationContext):
    x = ctx.input(0)
    out_shape = ctx.outputs[0].shape
    axis = _axis(ctx, x.ndim)
    if x.shape[axis] == 0:
        raise ValueError(f"input 0 is empty along axis {axis}")
    f = np.argmax if ctx.name == "ARGMAX" else np.argmin
    return [f(x, axis=axis).astype(np.int32).reshape(out_shape)]


for _op in ("ARGMAX", "ARGMIN"):
    register(_op, execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
             family="argminmax")
