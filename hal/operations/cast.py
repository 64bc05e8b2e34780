"""CAST: converts the stored values of a tensor to another type.

| input 0 (rank >= 1)                       | output 0                                    |
|-------------------------------------------|---------------------------------------------|
| F16, F32, INT32, Q8 (1.2)                 | F16, F32, INT32, Q8 (1.2), any of the four  |
| BOOL8, QUANT16_ASYMM, QUANT16_SYMM,       | the same type (1.3)                         |
| Q8 signed, QUANT8_SYMM (1.3)              |                                             |

Scale and zero point are ignored: a QUANT8_ASYMM tensor is a tensor of uint8 values.
Conversions to QUANT8_ASYMM saturate to [0, 255]; floats convert to integers by truncation
toward zero (static_cast), saturating at the int32 limits instead of overflowing.
The output has the input's shape.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_same_shape
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_V1_2 = ["TENSOR_FLOAT16", "TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM"]
_V1_3_IDENTITY = ["TENSOR_BOOL8", "TENSOR_QUANT16_ASYMM", "TENSOR_QUANT16_SYMM",
                  "TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_SYMM"]
SIGNATURES = [sig("V1_2", [a], [b]) for a in _V1_2 for b in _V1_2] + [
    sig("V1_3", [t], [t]) for t in _V1_3_IDENTITY]


def validate(ctx: OperationContext):
    check_same_shape(ctx)


def prepare(ctx: OperationContext):
    return [ctx.input_shape(0)]


def execute(ctx: OperationContext):
    x = ctx.input(0)
    dtype = ctx.outputs[0].dtype
    if x.dtype == dtype:
        return [x.copy()]
    if dtype.kind in "iu" and x.dtype.kind == "f":
        info = np.iinfo(dtype)
        with np.errstate(invalid="ignore"):
            v = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
        return [np.clip(v, info.min, info.max).astype(dtype)]
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return [np.clip(x.astype(np.int64), info.min, info.max).astype(dtype)]
    with np.errstate(over="ignore"):
        return [x.astype(dtype)]


register("CAST", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="cast")
