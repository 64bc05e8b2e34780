"""ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT, FLOOR: element-wise unary math.

| op    | input 0 | output 0                         |
|-------|---------|----------------------------------|
| any   | tensor  | same type and shape as input 0   |

Types (HAL version that introduced them):
ABS: TENSOR_FLOAT16, TENSOR_FLOAT32 (1.2); TENSOR_INT32 (1.3).
NEG: TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32 (1.2).
EXP, LOG, RSQRT, SIN, SQRT: TENSOR_FLOAT16, TENSOR_FLOAT32 (1.2).
FLOOR: TENSOR_FLOAT32 (1.0, rank <= 4); TENSOR_FLOAT16 (1.2).

Float16 is computed in float32 and rounded back, like the reference. Out-of-domain inputs
(LOG/SQRT of negatives, RSQRT of 0) give NaN/inf as in C, never an error.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_rank
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig
from hal.types import OperandType

F32, F16, I32 = "TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_INT32"
_FLOATS_1_2 = [("V1_2", F16), ("V1_2", F32)]
_TYPES = {
    "ABS": _FLOATS_1_2 + [("V1_3", I32)],
    "NEG": _FLOATS_1_2 + [("V1_2", I32)],
    "EXP": _FLOATS_1_2,
    "LOG": _FLOATS_1_2,
    "RSQRT": _FLOATS_1_2,
    "SIN": _FLOATS_1_2,
    "SQRT": _FLOATS_1_2,
    "FLOOR": [("V1_0", F32), ("V1_2", F16)],
}


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


_FN = {
    "ABS": np.abs, "NEG": np.negative, "EXP": np.exp, "LOG": np.log, "RSQRT": _rsqrt,
    "SIN": np.sin, "SQRT": np.sqrt, "FLOOR": np.floor,
}


def validate(ctx: OperationContext):
    if ctx.name == "FLOOR":
        check_rank(ctx, 0, (1, 4))


def prepare(ctx: OperationContext):
    return [ctx.input_shape(0)]


def execute(ctx: OperationContext):
    x = ctx.input(0)
    if ctx.inputs[0].type == OperandType.TENSOR_INT32:
        # int32 wraps around (abs/neg of INT32_MIN stay INT32_MIN) as in C.
        return [_FN[ctx.name](x).astype(np.int32)]
    with np.errstate(all="ignore"):
        y = _FN[ctx.name](x.astype(np.float32))
    return [y.astype(x.dtype)]


for _op, _types in _TYPES.items():
    register(_op, execute, signatures=[sig(v, [t], [t]) for v, t in _types], validate=validate,
             prepare=prepare, family="unary")
