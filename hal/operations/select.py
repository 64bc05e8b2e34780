"""SELECT: output[i] = input0[i] ? input1[i] : input2[i].

| input 0      | input 1 (rank >= 1)                        | input 2      | output 0     |
|--------------|--------------------------------------------|--------------|--------------|
| TENSOR_BOOL8 | F16, F32, INT32, Q8 (1.2); Q8 signed (1.3) | as input 1   | as input 1   |

All four tensors have the same shape (no broadcasting). Quantized inputs may have scales
and zero points different from each other and from the output: each chosen value is
requantized to the output as the reference's requantize() does (through double, rounded
half away from zero, saturated).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import QUANT8_TENSORS, qrange, round_half_away
from hal.operations.context import OperandInfo, OperationContext
from hal.operations.registry import register, sig

_TYPES = [("V1_2", "TENSOR_FLOAT16"), ("V1_2", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_INT32"),
          ("V1_2", "TENSOR_QUANT8_ASYMM"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
SIGNATURES = [sig(v, ["TENSOR_BOOL8", t, t], [t]) for v, t in _TYPES]


def validate(ctx: OperationContext):
    shapes = [ctx.input_shape(i) for i in range(3)] + [ctx.outputs[0].shape]
    known = [s for s in shapes if s]
    for s in known:
        for t in known:
            ctx.require(len(s) == len(t) and all(a == b or 0 in (a, b) for a, b in zip(s, t)),
                        f"input 0, input 1, input 2 and output 0 must have the same shape, "
                        f"got {[list(x) for x in shapes]}")


def prepare(ctx: OperationContext):
    shapes = [ctx.input_shape(i) for i in range(3)]
    ctx.require(shapes[0] == shapes[1] == shapes[2],
                f"input 0, input 1 and input 2 must have the same shape, got "
                f"{[list(x) for x in shapes]}")
    return [shapes[0]]


def _requantize(x: np.ndarray, src: OperandInfo, dst: OperandInfo) -> np.ndarray:
    if src.scale == dst.scale and src.zero_point == dst.zero_point:
        return x
    real = (x.astype(np.float64) - src.zero_point) * float(np.float32(src.scale))
    lo, hi = qrange(dst.type)
    return np.clip(round_half_away(real / float(np.float32(dst.scale)) + dst.zero_point), lo, hi)


def execute(ctx: OperationContext):
    cond, a, b = ctx.input(0), ctx.input(1), ctx.input(2)
    out = ctx.outputs[0]
    if out.type in QUANT8_TENSORS:
        a = _requantize(a, ctx.inputs[1], out)
        b = _requantize(b, ctx.inputs[2], out)
    return [np.where(cond, a, b).astype(out.dtype)]


register("SELECT", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="select")
