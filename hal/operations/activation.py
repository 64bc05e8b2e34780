"""RELU, RELU1, RELU6: clamp activations.

| op    | input 0                          | output 0                   |
|-------|----------------------------------|----------------------------|
| RELU  | tensor of rank <= 4 (any since 1.3) | same type/shape/quant   |
| RELU1 | idem                             | idem                       |
| RELU6 | idem                             | idem                       |

Types: TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM (1.0), TENSOR_FLOAT16 (1.2),
TENSOR_QUANT8_ASYMM_SIGNED (1.3). Quantized outputs have the input's scale and zero point.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import QUANT8_TENSORS, activation_range_quant, check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig
from hal.types import FusedActivation

_TYPES_BY_VERSION = [("V1_0", "TENSOR_FLOAT32"), ("V1_0", "TENSOR_QUANT8_ASYMM"),
                     ("V1_2", "TENSOR_FLOAT16"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
SIGNATURES = [sig(v, [t], [t]) for v, t in _TYPES_BY_VERSION]

_ACT = {"RELU": FusedActivation.RELU, "RELU1": FusedActivation.RELU1,
        "RELU6": FusedActivation.RELU6}
_FLOAT_RANGE = {"RELU": (0.0, np.inf), "RELU1": (-1.0, 1.0), "RELU6": (0.0, 6.0)}


def validate(ctx: OperationContext):
    ctx.require(ctx.inputs[0].rank <= 4 or ctx.inputs[0].rank == 0,
                f"input 0 must have rank <= 4, got {ctx.inputs[0].rank}")
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")


def prepare(ctx: OperationContext):
    return [ctx.input_shape(0)]


def execute(ctx: OperationContext):
    x = ctx.input(0)
    info = ctx.inputs[0]
    if info.type in QUANT8_TENSORS:
        lo, hi = activation_range_quant(_ACT[ctx.name], ctx.outputs[0])
        return [np.clip(x, lo, hi).astype(x.dtype)]
    lo, hi = _FLOAT_RANGE[ctx.name]
    return [np.clip(x, lo, hi).astype(x.dtype)]


for _op in _ACT:
    register(_op, execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
             family="activation")
