"""gemmlowp 16-bit fixed-point math (logistic, tanh) and TFLite's integer LSTM primitives,
as used by the NNAPI reference for QUANTIZED_16BIT_LSTM and QUANTIZED_LSTM.

Values are NumPy int64 arrays holding int16 raw values of FixedPoint<int16, integer_bits>;
``wrap`` reproduces the C++ int16 wraparound of plain adds/subs, ``sat`` its saturations.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import multiply_by_quantized_multiplier, rounding_divide_by_pot

I16_MIN, I16_MAX = -32768, 32767


def wrap(x):
    return ((np.asarray(x, dtype=np.int64) + 32768) & 0xFFFF) - 32768


def sat(x, lo=I16_MIN, hi=I16_MAX):
    return np.clip(np.asarray(x, dtype=np.int64), lo, hi)


def tdiv(n, d: int):
    """C integer division (toward zero)."""
    n = np.asarray(n, dtype=np.int64)
    q = np.abs(n) // d
    return np.where(n < 0, -q, q)


def const16(raw32: int) -> int:
    """GEMMLOWP_CHECKED_FIXEDPOINT_CONSTANT for int16: the int32 constant rounded to 16 bits."""
    return (raw32 + (1 << 15)) >> 16


def mul(a, b):
    """SaturatingRoundingDoublingHighMul on int16."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    res = tdiv(ab + nudge, 1 << 15)
    return np.where((a == I16_MIN) & (b == I16_MIN), I16_MAX, res)


def srmpot(x, exponent: int):
    """SaturatingRoundingMultiplyByPOT on int16."""
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    return sat(np.asarray(x, dtype=np.int64) << exponent)


def _rounding_half_sum(a, b):
    s = np.asarray(a, dtype=np.int64) + b
    return tdiv(s + np.where(s >= 0, 1, -1), 2)


def _exp_on_interval(a):
    """exp(a) for a in [-1/4, 0), F0 -> F0."""
    const_term = const16(1895147668)
    one_third = const16(715827883)
    x = wrap(a + (1 << 12))
    x2 = mul(x, x)
    x3 = mul(x2, x)
    x4 = mul(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(wrap(mul(wrap(x4_over_4 + x3), one_third) + x2), 1)
    return sat(const_term + mul(const_term, wrap(x + poly)))


_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
           (2, 39332535), (3, 720401), (4, 242))


def exp_on_negative_values(a, integer_bits: int):
    """exp(a) for a <= 0, FixedPoint<int16, integer_bits> -> F0."""
    a = np.asarray(a, dtype=np.int64)
    frac = 15 - integer_bits
    quarter = 1 << (frac - 2)
    a_mod = wrap((a & (quarter - 1)) - quarter)
    result = _exp_on_interval(srmpot(a_mod, integer_bits))
    remainder = wrap(a_mod - a)
    for exponent, mult in _BARREL:
        if integer_bits > exponent:
            shift = frac + exponent
            result = np.where(remainder & (1 << shift), mul(result, const16(mult)), result)
    if integer_bits > 5:
        clamp = const16(-(1 << (36 - integer_bits)))
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, I16_MAX, result)


def _newton_reciprocal(half_den):
    """x ~ 1 / half_den in F2 after three Newton-Raphson steps."""
    x = wrap(const16(1515870810) + mul(half_den, const16(-1010580540)))
    for _ in range(3):
        one_minus = wrap((1 << 13) - mul(half_den, x))
        x = wrap(x + srmpot(mul(x, one_minus), 2))
    return x


def one_over_one_plus_x(a):
    return srmpot(_newton_reciprocal(_rounding_half_sum(a, I16_MAX)), 1)


def one_minus_x_over_one_plus_x(a):
    x = _newton_reciprocal(_rounding_half_sum(a, I16_MAX))
    return srmpot(wrap(x - (1 << 13)), 2)


def logistic(a, integer_bits: int):
    """gemmlowp::logistic: FixedPoint<int16, integer_bits> -> F0 raw."""
    a = np.asarray(a, dtype=np.int64)
    pos = a > 0
    abs_a = np.where(pos, a, wrap(-a))
    r_pos = one_over_one_plus_x(exp_on_negative_values(wrap(-abs_a), integer_bits))
    r_neg = wrap(I16_MAX - r_pos)
    return np.where(a == 0, 1 << 14, np.where(pos, r_pos, r_neg))


def tanh(a, integer_bits: int):
    """gemmlowp::tanh: FixedPoint<int16, integer_bits> -> F0 raw."""
    a = np.asarray(a, dtype=np.int64)
    neg = a < 0
    n = np.where(neg, a, wrap(-a))
    t = one_minus_x_over_one_plus_x(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(neg, wrap(-t), t))


# --------------------------------------------------------------- TFLite integer primitives

def _srdhm32(a: int, b: int) -> int:
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    ab = a * b
    n = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
    return n // (1 << 31) if n >= 0 else -((-n) // (1 << 31))


def _srmpot32(x: int, e: int) -> int:
    if e < 0:
        return int(rounding_divide_by_pot(np.int64(x), -e))
    return max(-(1 << 31), min((1 << 31) - 1, x << e))


def inv_sqrt_multiplier(value: int) -> tuple[int, int]:
    """GetInvSqrtQuantizedMultiplierExp(value, reverse_shift=-1): (multiplier, left shift)."""
    if value <= 1:
        return (1 << 31) - 1, 0
    shift = 11
    while value >= (1 << 29):
        value //= 4
        shift += 1
    clz = 32 - int(value).bit_length()
    pairs = (clz - 1) // 2 - 1
    shift -= pairs
    value <<= 2 * pairs
    half_input = _srmpot32(value >> 1, -1)
    half_three = (1 << 28) + (1 << 27)
    x = 1 << 28
    for _ in range(5):
        x3 = _srmpot32(_srdhm32(_srdhm32(x, x), x), 6)
        diff = _srdhm32(half_three, x) - _srdhm32(half_input, x3)
        diff = ((diff + (1 << 31)) % (1 << 32)) - (1 << 31)
        x = _srmpot32(diff, 3)
    x = _srdhm32(x, 1518500250)
    if shift < 0:
        x <<= -shift
        shift = 0
    return x, -shift


def mbqm(x, multiplier: int, shift: int):
    return multiply_by_quantized_multiplier(x, multiplier, shift)


def layer_norm(x, weights, bias, scale_a: int, scale_b: int, variance_limit: int):
    """ApplyLayerNorm of the TFLite integer LSTM: int16 [batch, n] -> int16 (as int64)."""
    x = np.asarray(x, dtype=np.int64)
    n = x.shape[1]
    out = np.zeros_like(x)
    w = np.asarray(weights, dtype=np.int64)
    b = np.asarray(bias, dtype=np.int64)
    for i in range(x.shape[0]):
        row = x[i]
        mean = int(tdiv(int(row.sum()) * 1024, n))
        variance = int((row * row).sum()) * ((1 << 20) // n) - mean * mean
        var2 = int(tdiv(variance, 1 << 20))
        if var2 < 1:
            var2 = variance_limit
        inv_a, inv_b = inv_sqrt_multiplier(var2)
        rescaled = mbqm(1024 * row - mean, inv_a, inv_b)
        val3 = rescaled * w + b
        val4 = tdiv(np.where(val3 > 0, val3 + 512, val3 - 512), 1024)
        out[i] = sat(mbqm(val4, scale_a, scale_b + 12))
    return out
