"""SOFTMAX, LOG_SOFTMAX along one axis.

| op          | input 0                       | input 1 (beta > 0)   | input 2 (axis)   | output 0 |
|-------------|-------------------------------|----------------------|------------------|----------|
| SOFTMAX     | F32, Q8 (1.0); F16 (1.2);     | FLOAT32 (FLOAT16     | INT32, optional  | as input |
|             | Q8 signed (1.3); rank <= 4    | for F16)             | (1.2), default -1|          |
| LOG_SOFTMAX | F32, F16 (1.2); rank >= 1     | idem                 | INT32 (required) | as input |

SOFTMAX takes tensors of rank 2 or 4 since 1.0 and of rank 1..4 since 1.2 (zero-sized
inputs allowed since 1.2). Its quantized output has scale 1/256 and zero point 0 (QUANT8_ASYMM)
or -128 (QUANT8_ASYMM_SIGNED); it is computed with the reference's gemmlowp fixed-point
pipeline: the beta-scaled differences to the row maximum in Q5.26, exp_on_negative_values,
a Q12.19 sum of exponentials and its reciprocal by Newton-Raphson.
Float16 is computed in float32 and cast.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import (
    QUANT8_TENSORS,
    check_axis,
    check_fixed_output_quant,
    qrange,
    quantize_multiplier,
)
from hal.operations.common import rounding_divide_by_pot_array as _rdbpot
from hal.operations.common import saturating_rounding_doubling_high_mul as _srdhm
from hal.operations.common import saturating_shift_left as _sat_shift_left
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig
from hal.types import OperandType

OT = OperandType

_SOFTMAX_TYPES = [("V1_0", "TENSOR_FLOAT32", "FLOAT32"), ("V1_0", "TENSOR_QUANT8_ASYMM", "FLOAT32"),
                  ("V1_2", "TENSOR_FLOAT16", "FLOAT16"),
                  ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED", "FLOAT32")]
SOFTMAX_SIGNATURES = [sig(v, [t, b], [t]) for v, t, b in _SOFTMAX_TYPES] + [
    sig("V1_2" if v == "V1_0" else v, [t, b, "INT32"], [t]) for v, t, b in _SOFTMAX_TYPES]
LOG_SOFTMAX_SIGNATURES = [sig("V1_2", [t, b, "INT32"], [t]) for t, b in [
    ("TENSOR_FLOAT32", "FLOAT32"), ("TENSOR_FLOAT16", "FLOAT16")]]

_OUT_ZERO_POINT = {OT.TENSOR_QUANT8_ASYMM: 0, OT.TENSOR_QUANT8_ASYMM_SIGNED: -128}


def softmax_axis(ctx: OperationContext, rank: int):
    axis = ctx.scalar(2, -1) if ctx.num_inputs() > 2 else -1
    if axis is None:
        raise LookupError(f"{ctx.name}: input 2 (axis) is not known before execution")
    return check_axis(ctx, 2, rank, axis)


def validate(ctx: OperationContext):
    rank = ctx.inputs[0].rank
    if ctx.name == "SOFTMAX":
        ctx.require(rank <= 4, f"input 0 must have rank <= 4, got rank {rank}")
    beta = ctx.scalar(1)
    if beta is not None:
        ctx.require(beta > 0, f"input 1 (beta) must be > 0, got {beta}")
    if rank and (ctx.num_inputs() == 2 or ctx.value_known(2)):
        softmax_axis(ctx, rank)
    out = ctx.outputs[0]
    if out.type in QUANT8_TENSORS:
        check_fixed_output_quant(ctx, 1 / 256, _OUT_ZERO_POINT[out.type])


def prepare(ctx: OperationContext):
    return [ctx.input_shape(0)]


# ----------------------------------------------------------------- gemmlowp fixed point
# Raw int32 values are held in int64 arrays; products go through SRDHM like gemmlowp's.

def _exp_on_interval_minus_quarter_to_0(a):
    """exp(a) for a in [-1/4, 0), Q0.31 in and out."""
    x = a + (1 << 28)
    x2 = _srdhm(x, x)
    x3 = _srdhm(x2, x)
    x4 = _srdhm(x2, x2)
    x4_over_4 = _rdbpot(x4, 2)
    poly = _rdbpot(_srdhm(x4_over_4 + x3, 715827883) + x2, 1)
    return 1895147668 + _srdhm(np.int64(1895147668), x + poly)


_BARREL = [(-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
           (3, 720401), (4, 242)]


def _exp_on_negative_values(a, integer_bits=5):
    """exp(a) for a <= 0 in Q(integer_bits).(31 - integer_bits); result in Q0.31."""
    frac_bits = 31 - integer_bits
    quarter = np.int64(1) << (frac_bits - 2)
    a_mod_quarter_minus_quarter = (a & (quarter - 1)) - quarter
    result = _exp_on_interval_minus_quarter_to_0(
        _sat_shift_left(a_mod_quarter_minus_quarter, integer_bits))
    remainder = a_mod_quarter_minus_quarter - a
    for exponent, multiplier in _BARREL:
        if integer_bits > exponent:
            bit = np.int64(1) << (frac_bits + exponent)
            result = np.where(remainder & bit, _srdhm(result, multiplier), result)
    return np.where(a == 0, 2**31 - 1, result)


def _one_over_one_plus_x(a):
    """1 / (1 + a) for a in [0, 1), Q0.31 in and out (Newton-Raphson in Q2.29)."""
    s = a + (2**31 - 1)
    half_denominator = np.where(s >= 0, (s + 1) // 2, -((-(s - 1)) // 2))
    x = 1515870810 + _srdhm(half_denominator, -1010580540)
    for _ in range(3):
        one_minus = (1 << 29) - _srdhm(half_denominator, x)
        x = x + _sat_shift_left(_srdhm(x, one_minus), 2)
    return _sat_shift_left(x, 1)


def _softmax_quant(ctx: OperationContext, x: np.ndarray, beta: float) -> np.ndarray:
    info, out = ctx.inputs[0], ctx.outputs[0]
    real = min(float(beta) * float(np.float32(info.scale)) * (1 << 26), 2.0**31 - 1)
    multiplier, left_shift = quantize_multiplier(real)
    diff_min = -int(np.floor(31.0 * (1 << 26) / (1 << left_shift)))
    xi = x.astype(np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    used = diff >= diff_min
    scaled = _srdhm(np.clip(diff * (1 << left_shift), -(2**31), 2**31 - 1), multiplier)
    exps = _exp_on_negative_values(np.where(used, scaled, 0))
    total = np.sum(np.where(used, _rdbpot(exps, 12), 0), axis=-1, keepdims=True)
    bits = np.frexp(total.astype(np.float64))[1].astype(np.int64)  # bit length of the sum
    headroom_plus_one = 32 - bits
    num_bits_over_unit = 12 - headroom_plus_one
    shifted_sum_minus_one = ((total << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)
    shifted_scale = _one_over_one_plus_x(shifted_sum_minus_one)
    q = _rdbpot(_srdhm(shifted_scale, exps), num_bits_over_unit + 31 - 8)
    lo, hi = qrange(out.type)
    q = np.where(used, q + _OUT_ZERO_POINT[out.type], lo)
    return np.clip(q, lo, hi).astype(out.dtype)


def execute(ctx: OperationContext):
    x = ctx.input(0)
    beta = ctx.scalar(1)
    axis = softmax_axis(ctx, x.ndim)
    out = ctx.outputs[0]
    if x.size == 0:
        return [np.zeros(x.shape, dtype=out.dtype)]
    xm = np.moveaxis(x, axis, -1)
    if ctx.inputs[0].type in QUANT8_TENSORS:
        y = _softmax_quant(ctx, xm, beta)
    else:
        xf = xm.astype(np.float64)
        z = (xf - xf.max(axis=-1, keepdims=True)) * float(beta)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if ctx.name == "SOFTMAX":
                e = np.exp(z)
                y = e / e.sum(axis=-1, keepdims=True)
            else:
                y = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
        y = y.astype(out.dtype)
    return [np.moveaxis(y, -1, axis)]


register("SOFTMAX", execute, signatures=SOFTMAX_SIGNATURES, validate=validate, prepare=prepare,
         family="softmax")
register("LOG_SOFTMAX", execute, signatures=LOG_SOFTMAX_SIGNATURES, validate=validate,
         prepare=prepare, family="softmax")
