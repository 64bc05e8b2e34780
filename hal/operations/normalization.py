"""L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, INSTANCE_NORMALIZATION.

| op                           | input 0               | other inputs                         |
|------------------------------|-----------------------|--------------------------------------|
| L2_NORMALIZATION             | F32 (1.0); F16, Q8    | 1: INT32 axis, optional (1.2),       |
|                              | (1.2); Q8 signed (1.3)| default -1                           |
| LOCAL_RESPONSE_NORMALIZATION | F32 (1.0); F16 (1.2)  | 1: INT32 radius, 2-4: bias, alpha,   |
|                              |                       | beta (FLOAT32, FLOAT16 for F16),     |
|                              |                       | 5: INT32 axis, optional (1.2)        |
| INSTANCE_NORMALIZATION       | F32, F16 (1.2), rank 4| 1-3: gamma, beta, epsilon (FLOAT32,  |
|                              |                       | FLOAT16 for F16), 4: BOOL NCHW       |

Output 0 has input 0's type and shape. Ranks: up to 4 (rank 4 only before 1.2 for L2 and
LRN). The quantized L2_NORMALIZATION output has scale 1/128 and zero point 128
(QUANT8_ASYMM) or 0 (QUANT8_ASYMM_SIGNED); it follows the reference's integer pipeline:
sum of squared differences to the zero point, TFLite's GetInvSqrtQuantizedMultiplierExp and
a rounding multiply of 128 * (x - zero point) (QUANT8_ASYMM_SIGNED: TFLite's int8 kernel's
MultiplyByQuantizedMultiplier(x - zero point, multiplier, 7 - shift), the 128 in the shift).
All-zero vectors normalize to zero (1.3).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import (
    QUANT8_TENSORS,
    check_axis,
    check_fixed_output_quant,
    check_rank,
    qrange,
)
from hal.operations.common import rounding_divide_by_pot_array as _rdbpot
from hal.operations.common import saturating_rounding_doubling_high_mul as _srdhm
from hal.operations.common import saturating_shift_left as _sat_shift_left
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig
from hal.types import OperandType

OT = OperandType

_L2_TYPES = [("V1_0", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16"),
             ("V1_2", "TENSOR_QUANT8_ASYMM"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
L2_SIGNATURES = [sig(v, [t], [t]) for v, t in _L2_TYPES] + [
    sig("V1_2" if v == "V1_0" else v, [t, "INT32"], [t]) for v, t in _L2_TYPES]

_F_TYPES = [("V1_0", "TENSOR_FLOAT32", "FLOAT32"), ("V1_2", "TENSOR_FLOAT16", "FLOAT16")]
LRN_SIGNATURES = [sig(v, [t, "INT32", s, s, s], [t]) for v, t, s in _F_TYPES] + [
    sig("V1_2", [t, "INT32", s, s, s, "INT32"], [t]) for _, t, s in _F_TYPES]
INSTANCE_SIGNATURES = [sig("V1_2", [t, s, s, s, "BOOL"], [t]) for _, t, s in _F_TYPES]

_L2_OUT_ZERO_POINT = {OT.TENSOR_QUANT8_ASYMM: 128, OT.TENSOR_QUANT8_ASYMM_SIGNED: 0}
_AXIS_INPUT = {"L2_NORMALIZATION": 1, "LOCAL_RESPONSE_NORMALIZATION": 5}


def _axis(ctx: OperationContext, rank: int) -> int:
    index = _AXIS_INPUT[ctx.name]
    axis = ctx.scalar(index, -1) if ctx.num_inputs() > index else -1
    if axis is None:
        raise LookupError(f"{ctx.name}: input {index} (axis) is not known before execution")
    return check_axis(ctx, index, rank, axis)


def validate(ctx: OperationContext):
    rank = ctx.inputs[0].rank
    if ctx.name == "INSTANCE_NORMALIZATION":
        check_rank(ctx, 0, 4)
        return
    check_rank(ctx, 0, (1, 4))
    index = _AXIS_INPUT[ctx.name]
    if rank and (ctx.num_inputs() <= index or ctx.value_known(index)):
        _axis(ctx, rank)
    out = ctx.outputs[0]
    if ctx.name == "L2_NORMALIZATION" and out.type in QUANT8_TENSORS:
        check_fixed_output_quant(ctx, 1 / 128, _L2_OUT_ZERO_POINT[out.type])


def prepare(ctx: OperationContext):
    return [ctx.input_shape(0)]


# ----------------------------------------------------------------- L2_NORMALIZATION

def _inv_sqrt_multiplier(s):
    """GetInvSqrtQuantizedMultiplierExp(s, reverse_shift=-1) on an int array: (multiplier,
    right shift) with 1/sqrt(s) ~ multiplier * 2^(-31 - shift)."""
    small = s <= 1
    s = np.where(small, 4, s).astype(np.int64)
    shift = np.full(s.shape, 11, dtype=np.int64)
    while np.any(big := s >= (1 << 29)):
        s = np.where(big, s // 4, s)
        shift += big
    clz = 32 - np.frexp(s.astype(np.float64))[1].astype(np.int64)
    pairs = (clz - 1) // 2 - 1
    shift -= pairs
    s = s << (2 * pairs)
    half_input = _rdbpot(s >> 1, 1)
    x = np.full(s.shape, 1 << 28, dtype=np.int64)  # 1.0 in Q3.28
    for _ in range(5):
        x3 = _sat_shift_left(_srdhm(_srdhm(x, x), x), 6)
        x = _sat_shift_left(_srdhm(x, (1 << 28) + (1 << 27)) - _srdhm(half_input, x3), 3)
    x = _srdhm(x, 1518500250)
    x = np.where(shift < 0, x << np.maximum(-shift, 0), x)
    shift = np.maximum(shift, 0)
    return np.where(small, 2**31 - 1, x), np.where(small, 0, shift)


def _l2_quant(ctx: OperationContext, x: np.ndarray) -> np.ndarray:
    out = ctx.outputs[0]
    diff = x.astype(np.int64) - ctx.inputs[0].zero_point
    total = np.sum(diff * diff, axis=-1, keepdims=True)
    multiplier, shift = _inv_sqrt_multiplier(total)
    if out.type == OT.TENSOR_QUANT8_ASYMM_SIGNED:
        # TFLite's int8 kernel folds the 128 into MultiplyByQuantizedMultiplier's shift
        s = 7 - shift
        x = np.clip(diff << np.maximum(s, 0), -(1 << 31), (1 << 31) - 1)
        scaled = _rdbpot(_srdhm(x, multiplier), np.maximum(-s, 0))
    else:
        scaled = _rdbpot(_srdhm(diff * 128, multiplier), shift)
    lo, hi = qrange(out.type)
    return np.clip(scaled + out.zero_point, lo, hi).astype(out.dtype)


def _l2(ctx: OperationContext, x: np.ndarray) -> np.ndarray:
    if ctx.inputs[0].type in QUANT8_TENSORS:
        return _l2_quant(ctx, x)
    xf = x.astype(np.float64)
    norm = np.sqrt(np.sum(xf * xf, axis=-1, keepdims=True))
    return xf / np.maximum(norm, 1e-6)


# ----------------------------------------------------------------- LRN, instance norm

def _lrn(ctx: OperationContext, x: np.ndarray) -> np.ndarray:
    radius, bias, alpha, beta = (ctx.scalar(i) for i in range(1, 5))
    xf = x.astype(np.float64)
    n = x.shape[-1]
    csum = np.concatenate([np.zeros(x.shape[:-1] + (1,)), np.cumsum(xf * xf, axis=-1)], -1)
    i = np.arange(n)
    begin = np.clip(i - radius, 0, n)
    end = np.clip(i + radius + 1, 0, n)
    window = np.where(end > begin, csum[..., end] - csum[..., begin], 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return xf * np.power(float(bias) + float(alpha) * window, -float(beta))


def _instance_norm(ctx: OperationContext, x: np.ndarray) -> np.ndarray:
    gamma, beta, epsilon, nchw = (ctx.scalar(i) for i in range(1, 5))
    axes = (2, 3) if nchw else (1, 2)
    xf = x.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.mean(xf, axis=axes, keepdims=True)
        var = np.mean((xf - mean) ** 2, axis=axes, keepdims=True)
        return (xf - mean) * float(gamma) / np.sqrt(var + float(epsilon)) + float(beta)


def execute(ctx: OperationContext):
    x = ctx.input(0)
    out = ctx.outputs[0]
    if x.size == 0:
        return [np.zeros(x.shape, dtype=out.dtype)]
    if ctx.name == "INSTANCE_NORMALIZATION":
        return [_instance_norm(ctx, x).astype(out.dtype)]
    axis = _axis(ctx, x.ndim)
    f = _l2 if ctx.name == "L2_NORMALIZATION" else _lrn
    y = f(ctx, np.moveaxis(x, axis, -1))
    return [np.moveaxis(y.astype(out.dtype), -1, axis)]


register("L2_NORMALIZATION", execute, signatures=L2_SIGNATURES, validate=validate,
         prepare=prepare, family="normalization")
register("LOCAL_RESPONSE_NORMALIZATION", execute, signatures=LRN_SIGNATURES, validate=validate,
         prepare=prepare, family="normalization")
register("INSTANCE_NORMALIZATION", execute, signatures=INSTANCE_SIGNATURES, validate=validate,
         prepare=prepare, family="normalization")
