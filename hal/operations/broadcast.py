"""ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW: element-wise binary ops with broadcasting.

| op              | input 0  | input 1                   | input 2          | output 0        |
|-----------------|----------|---------------------------|------------------|-----------------|
| ADD/SUB/MUL/DIV | tensor   | same type, broadcastable  | INT32 FuseCode   | same type       |
| MAXIMUM/MINIMUM | tensor   | same type, broadcastable  |                  | same type       |
| POW             | base     | exponent, same type       |                  | same type       |

Types (HAL version that introduced them):
ADD, MUL: FLOAT32, QUANT8_ASYMM (1.0); FLOAT16 (1.2); QUANT8_ASYMM_SIGNED, INT32 (1.3).
SUB: FLOAT32 (1.1); FLOAT16, QUANT8_ASYMM (1.2); QUANT8_ASYMM_SIGNED, INT32 (1.3).
DIV: FLOAT32 (1.1); FLOAT16 (1.2); INT32 (1.3, floor division).
MAXIMUM, MINIMUM: FLOAT32, FLOAT16, INT32, QUANT8_ASYMM (1.2); QUANT8_ASYMM_SIGNED (1.3).
POW: FLOAT32, FLOAT16 (1.2).

ADD/SUB/MUL/DIV take rank <= 4; quantized inputs and output may each have their own scale and
zero point. For TENSOR_INT32 the fused activation must be NONE. Quantized ADD/SUB follow the
reference pipeline (inputs shifted left by 20 bits, rescaled to twice the larger input scale,
summed, rescaled to the output); SUB negates the second input's multiplier. Quantized MUL
rescales the product of the offset inputs by input1_scale * input2_scale / output_scale.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import (
    QUANT8_TENSORS,
    activation_range_quant,
    apply_activation_float,
    broadcast_shape,
    check_broadcastable,
    check_fused_activation,
    dequantize,
    multiply_by_quantized_multiplier,
    qrange,
    quantize_multiplier,
    round_half_away,
)
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig
from hal.types import OperandType

OT = OperandType
kInputTensor1, kInputTensor2, kActivationScalar = 0, 1, 2
kOutputTensor = 0

F32, F16, I32 = "TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_INT32"
Q8, QS8 = "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"

_TYPES = {
    "ADD": [("V1_0", F32), ("V1_0", Q8), ("V1_2", F16), ("V1_3", QS8), ("V1_3", I32)],
    "MUL": [("V1_0", F32), ("V1_0", Q8), ("V1_2", F16), ("V1_3", QS8), ("V1_3", I32)],
    "SUB": [("V1_1", F32), ("V1_2", F16), ("V1_2", Q8), ("V1_3", QS8), ("V1_3", I32)],
    "DIV": [("V1_1", F32), ("V1_2", F16), ("V1_3", I32)],
    "MAXIMUM": [("V1_2", F32), ("V1_2", F16), ("V1_2", I32), ("V1_2", Q8), ("V1_3", QS8)],
    "MINIMUM": [("V1_2", F32), ("V1_2", F16), ("V1_2", I32), ("V1_2", Q8), ("V1_3", QS8)],
    "POW": [("V1_2", F32), ("V1_2", F16)],
}
_FUSED = ("ADD", "SUB", "MUL", "DIV")


def signatures(op: str):
    extra = ["INT32"] if op in _FUSED else []
    return [sig(v, [t, t] + extra, [t]) for v, t in _TYPES[op]]


# ------------------------------------------------------------------------------ validation

def validate(ctx: OperationContext):
    fused = ctx.name in _FUSED
    check_broadcastable(ctx, kInputTensor1, kInputTensor2, 4 if fused else None)
    if fused:
        check_fused_activation(ctx, kActivationScalar)
        if ctx.inputs[kInputTensor1].type == OT.TENSOR_INT32:
            act = ctx.scalar(kActivationScalar)
            ctx.require(act in (None, 0), "input 2 (fused activation) must be NONE (0) for "
                        f"TENSOR_INT32 tensors, got {act}")
    if ctx.inputs[kInputTensor1].type in QUANT8_TENSORS:
        for k, info in ((0, ctx.inputs[0]), (1, ctx.inputs[1])):
            ctx.require(info.scale > 0, f"input {k} must have a scale > 0")
        ctx.require(ctx.outputs[0].scale > 0, "output 0 must have a scale > 0")


def prepare(ctx: OperationContext):
    return [broadcast_shape(ctx.input_shape(kInputTensor1), ctx.input_shape(kInputTensor2))]


# ------------------------------------------------------------------------------ execution

def _activation(ctx: OperationContext) -> int:
    return int(ctx.scalar(kActivationScalar, 0)) if ctx.name in _FUSED else 0


_FLOAT_FN = {
    "ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "DIV": np.divide,
    "MAXIMUM": np.maximum, "MINIMUM": np.minimum, "POW": np.power,
}


def _execute_float(ctx: OperationContext, a: np.ndarray, b: np.ndarray):
    out_dtype = a.dtype
    if a.dtype == np.float16:  # the reference computes float16 ops in float32
        a, b = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        r = _FLOAT_FN[ctx.name](a, b)
    r = apply_activation_float(r, _activation(ctx))
    return r.astype(out_dtype, copy=False)


def _execute_int32(ctx: OperationContext, a: np.ndarray, b: np.ndarray):
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    name = ctx.name
    if name == "DIV":
        zero = b64 == 0
        # Division by zero has no defined result; the reference guards it, so do we (0).
        r = np.floor_divide(a64, np.where(zero, 1, b64))
        r = np.where(zero, 0, r)
    else:
        r = _FLOAT_FN[name](a64, b64)
    return r.astype(np.int32)  # int32 arithmetic wraps around like the reference


def _f32(x: float) -> float:
    """Operand scales are C floats in the reference."""
    return float(np.float32(x))


def _add_sub_multipliers(ctx: OperationContext):
    """The reference's (m1, s1, m2, s2, mo, so) of an 8-bit quantized ADD / SUB."""
    in1, in2, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    sa, sb, so = _f32(in1.scale), _f32(in2.scale), _f32(out.scale)
    twice_max_input_scale = 2.0 * max(sa, sb)
    m1, s1 = quantize_multiplier(sa / twice_max_input_scale)
    m2, s2 = quantize_multiplier(sb / twice_max_input_scale)
    mo, so = quantize_multiplier(twice_max_input_scale / ((1 << _ADD_LEFT_SHIFT) * so))
    if ctx.name == "SUB":
        m2 = -m2  # the reference negates the second multiplier and runs the ADD kernel
    return m1, s1, m2, s2, mo, so


_ADD_LEFT_SHIFT = 20


def _add_sub_quant(ctx: OperationContext, a: np.ndarray, b: np.ndarray):
    in1, in2, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    m1, s1, m2, s2, mo, so = _add_sub_multipliers(ctx)
    x1 = (a.astype(np.int64) - in1.zero_point) * (1 << _ADD_LEFT_SHIFT)
    x2 = (b.astype(np.int64) - in2.zero_point) * (1 << _ADD_LEFT_SHIFT)
    y1 = multiply_by_quantized_multiplier(x1, m1, s1)
    y2 = multiply_by_quantized_multiplier(x2, m2, s2)
    raw = multiply_by_quantized_multiplier(y1 + y2, mo, so) + out.zero_point
    return raw


def quant_add_params(ctx: OperationContext) -> list[int]:
    """The 8-bit quantized ADD / SUB of ``ctx`` as the reference computes it, in integers:
    [z1, m1, s1, z2, m2, s2, mo, so, zo, lo, hi] (each input's zero point, multiplier and
    shift, the output's, its zero point and clamp), for a driver that recomputes the
    fixed-point pipeline: clip(MBQM(MBQM((a - z1) << 20, m1, s1) + MBQM((b - z2) << 20, m2,
    s2), mo, so) + zo, lo, hi), MBQM :func:`multiply_by_quantized_multiplier`."""
    m1, s1, m2, s2, mo, so = _add_sub_multipliers(ctx)
    in1, in2, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    lo, hi = activation_range_quant(_activation(ctx), out)
    lo, hi = max(lo, qrange(out.type)[0]), min(hi, qrange(out.type)[1])
    return [int(v) for v in (in1.zero_point, m1, s1, in2.zero_point, m2, s2, mo, so,
                             out.zero_point, lo, hi)]


def _mul_quant(ctx: OperationContext, a: np.ndarray, b: np.ndarray):
    in1, in2, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    # The reference multiplies the float scales in float, then divides in double.
    product_scale = float(np.float32(in1.scale) * np.float32(in2.scale))
    m, s = quantize_multiplier(product_scale / _f32(out.scale))
    prod = (a.astype(np.int64) - in1.zero_point) * (b.astype(np.int64) - in2.zero_point)
    return multiply_by_quantized_multiplier(prod, m, s) + out.zero_point


def _requantize(q: np.ndarray, info, out) -> np.ndarray:
    """The reference's requantize(): round((q - zp) * scale / out_scale + out_zp), saturated."""
    real = dequantize(info, q).astype(np.float64)
    lo, hi = qrange(out.type)
    return np.clip(round_half_away(real / _f32(out.scale) + out.zero_point), lo, hi)


def quant_table(ctx: OperationContext) -> np.ndarray:
    """The 8-bit quantized ADD / SUB / MUL / MAXIMUM / MINIMUM of ``ctx`` as a table of its
    every result: out[(a byte) * 256 + (b byte)] for the operands' bytes (their storage bits),
    the reference's own arithmetic and clamp (a driver may look results up instead of
    recomputing the fixed-point pipeline)."""
    dt = ctx.inputs[kInputTensor1].dtype
    vals = np.arange(256, dtype=np.uint8).view(dt)
    return _execute_quant(ctx, np.repeat(vals, 256), np.tile(vals, 256))


def _execute_quant(ctx: OperationContext, a: np.ndarray, b: np.ndarray):
    out = ctx.outputs[0]
    name = ctx.name
    if name in ("MAXIMUM", "MINIMUM"):
        ra, rb = _requantize(a, ctx.inputs[0], out), _requantize(b, ctx.inputs[1], out)
        return _FLOAT_FN[name](ra, rb).astype(out.dtype)
    raw = _add_sub_quant(ctx, a, b) if name in ("ADD", "SUB") else _mul_quant(ctx, a, b)
    lo, hi = activation_range_quant(_activation(ctx), out)
    lo, hi = max(lo, qrange(out.type)[0]), min(hi, qrange(out.type)[1])
    return np.clip(raw, lo, hi).astype(out.dtype)


def execute(ctx: OperationContext):
    a, b = ctx.input(kInputTensor1), ctx.input(kInputTensor2)
    t = ctx.inputs[kInputTensor1].type
    if t in (OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16):
        r = _execute_float(ctx, a, b)
    elif t == OT.TENSOR_INT32:
        ctx.require(_activation(ctx) == 0, "input 2 (fused activation) must be NONE (0) for "
                    "TENSOR_INT32 tensors")
        r = _execute_int32(ctx, a, b)
    else:
        r = _execute_quant(ctx, a, b)
    return [np.asarray(r).reshape(ctx.outputs[0].shape)]


for _op in _TYPES:
    register(_op, execute, signatures=signatures(_op), validate=validate, prepare=prepare,
             family="broadcast")
