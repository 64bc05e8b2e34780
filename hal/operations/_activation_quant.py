"""Integer pipelines of the reference for quantized PRELU and HARD_SWISH (helpers of
activation.py; not an op family). All arithmetic is vectorized in int64 holding the
int16/int32 values the reference computes with."""

from __future__ import annotations

import numpy as np

from hal.operations.common import (
    multiply_by_quantized_multiplier,
    qrange,
    quantize_multiplier,
    rounding_divide_by_pot,
)
from hal.operations.context import OperandInfo

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1


def _f32(x: float) -> np.float32:
    return np.float32(x)


# ------------------------------------------------------------------ PRELU

def prelu_quant(x: np.ndarray, alpha: np.ndarray, xi: OperandInfo, ai: OperandInfo,
                out: OperandInfo) -> np.ndarray:
    """x >= 0: x * (s_in / s_out); x < 0: x * alpha * (s_in * s_alpha / s_out), offsets
    removed first, each through its own fixed-point multiplier."""
    s_in, s_alpha, s_out = _f32(xi.scale), _f32(ai.scale), _f32(out.scale)
    # as in the reference: float products/quotients of the float scales, widened to double
    m_pos, sh_pos = quantize_multiplier(float(s_in / s_out))
    m_neg, sh_neg = quantize_multiplier(float(s_in * s_alpha) / float(s_out))
    xv = x.astype(np.int64) - xi.zero_point
    av = alpha.astype(np.int64) - ai.zero_point
    pos = multiply_by_quantized_multiplier(xv, m_pos, sh_pos)
    neg = multiply_by_quantized_multiplier(xv * av, m_neg, sh_neg)
    y = np.where(xv >= 0, pos, neg) + out.zero_point
    lo, hi = qrange(out.type)
    return np.clip(y, lo, hi).astype(out.dtype)


# ------------------------------------------------------------------ HARD_SWISH (int16 fixed point)

def downscale_to_int16_multiplier(m32: int) -> int:
    """DownScaleInt32ToInt16Multiplier: round a Q31 multiplier to Q15."""
    if m32 >= (1 << 31) - 1 - (1 << 15):
        return INT16_MAX
    return (m32 + (1 << 15)) >> 16


def _srdhm16(a, b: int):
    """SaturatingRoundingDoublingHighMul on int16."""
    ab = np.asarray(a, dtype=np.int64) * np.int64(b)
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    s = ab + nudge
    r = np.where(s >= 0, s >> 15, -((-s) >> 15))  # C division truncates toward zero
    return np.where((np.asarray(a) == INT16_MIN) & (b == INT16_MIN), INT16_MAX, r)


def _sdhm16(a, b):
    """SaturatingDoublingHighMul on int16 (no rounding nudge)."""
    ab = np.asarray(a, dtype=np.int64) * np.asarray(b, dtype=np.int64)
    r = np.where(ab >= 0, ab >> 15, -((-ab) >> 15))
    return np.where((np.asarray(a) == INT16_MIN) & (np.asarray(b) == INT16_MIN), INT16_MAX, r)


def _saturating_left_shift16(x, amount: int):
    return np.clip(np.asarray(x, dtype=np.int64) * (1 << amount), INT16_MIN, INT16_MAX)


def hard_swish_quant(x: np.ndarray, xi: OperandInfo, out: OperandInfo) -> np.ndarray:
    """The reference HardSwish kernel: x on a 'hires' scale (x 128), a relu-ish factor in
    [0, 1] as Q15, both multipliers rounded to int16."""
    hires_input_scale = _f32(1.0 / 128.0) * _f32(xi.scale)
    reluish_scale = _f32(3.0 / 32768.0)
    reluish_multiplier = float(hires_input_scale / reluish_scale)
    output_multiplier = float(hires_input_scale / _f32(out.scale))
    rm32, r_exp = quantize_multiplier(reluish_multiplier)
    om32, o_exp = quantize_multiplier(output_multiplier)
    rm16 = downscale_to_int16_multiplier(rm32)
    om16 = downscale_to_int16_multiplier(om32)

    v = x.astype(np.int64) - xi.zero_point
    v_hires = v * (1 << 7)
    v_preshift_out = _srdhm16(v_hires, om16)
    reluish = v_hires
    if r_exp > 0:
        reluish = _saturating_left_shift16(reluish, r_exp - 1)
    reluish = _srdhm16(reluish, rm16)
    if r_exp > 0:
        reluish = _saturating_left_shift16(reluish, 1)
    if r_exp < 0:
        reluish = rounding_divide_by_pot(reluish, -r_exp)
    reluish = (reluish + (1 << 15)) >> 1
    preshift = _sdhm16(reluish, v_preshift_out)
    if o_exp > 0:  # output scale < input scale / 128: the reference asserts; scale up instead
        y = _saturating_left_shift16(preshift, o_exp)
    else:
        y = rounding_divide_by_pot(preshift, -o_exp)
    y = y + out.zero_point
    lo, hi = qrange(out.type)
    return np.clip(y, lo, hi).astype(out.dtype)
