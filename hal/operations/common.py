"""Helpers shared by the op families: quantization arithmetic of the NNAPI reference,
fused activations, padding, broadcasting and the usual validation checks."""

from __future__ import annotations

import math

import numpy as np

from hal.operations.context import OperandInfo, OperationContext
from hal.types import FusedActivation, OperandType, PaddingScheme

OT = OperandType

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

QUANT_RANGE = {
    OT.TENSOR_QUANT8_ASYMM: (0, 255),
    OT.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    OT.TENSOR_QUANT8_SYMM: (-127, 127),
    OT.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-127, 127),
    OT.TENSOR_QUANT16_ASYMM: (0, 65535),
    OT.TENSOR_QUANT16_SYMM: (-32768, 32767),
}

QUANT8_TENSORS = (OT.TENSOR_QUANT8_ASYMM, OT.TENSOR_QUANT8_ASYMM_SIGNED)


def qrange(t: OperandType) -> tuple[int, int]:
    return QUANT_RANGE[OT(t)]


# ----------------------------------------------------------------- fixed-point (gemmlowp)

def quantize_multiplier(m: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: m = q * 2^(shift - 31), q an int32 in [2^30, 2^31)."""
    if m == 0.0:
        return 0, 0
    frac, shift = math.frexp(m)
    q = int(round(frac * (1 << 31)))
    if q == (1 << 31):
        q //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q, shift


def saturating_rounding_doubling_high_mul(a, b):
    a = np.asarray(a, dtype=np.int64)
    b = np.int64(b)
    ab = a * b
    nudge = np.where(ab >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    s = ab + nudge
    res = np.where(s >= 0, s >> 31, -((-s) >> 31))
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, INT32_MAX, res).astype(np.int64)


def rounding_divide_by_pot(x, exponent: int):
    x = np.asarray(x, dtype=np.int64)
    if exponent <= 0:
        return x
    mask = np.int64((1 << exponent) - 1)
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0).astype(np.int64)
    return (x >> exponent) + (remainder > threshold).astype(np.int64)


def multiply_by_quantized_multiplier(x, multiplier: int, shift: int):
    """x * multiplier * 2^(shift - 31) with the rounding of the NNAPI/TFLite reference."""
    left = max(shift, 0)
    right = max(-shift, 0)
    x = np.asarray(x, dtype=np.int64) * (1 << left)
    x = np.clip(x, INT32_MIN, INT32_MAX)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), right)


# ----------------------------------------------------------------- (de)quantization

def round_half_away(x):
    """std::round: halves away from zero (NumPy's round goes to even)."""
    x = np.asarray(x)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def dequantize(info: OperandInfo, values: np.ndarray | None = None) -> np.ndarray:
    """Real values of a quantized (or float) tensor as float32."""
    v = info.value if values is None else values
    if info.type in QUANT_RANGE:
        if info.channel_quant is not None:
            scales = np.asarray(info.channel_quant.scales, dtype=np.float32)
            shape = [1] * v.ndim
            shape[info.channel_quant.channel_dim] = -1
            return v.astype(np.float32) * scales.reshape(shape)
        return (v.astype(np.float32) - np.float32(info.zero_point)) * np.float32(info.scale)
    return np.asarray(v, dtype=np.float32)


def quantize(real: np.ndarray, info: OperandInfo) -> np.ndarray:
    """Quantize real values to the operand's type: zero_point + round(x / scale), saturated."""
    lo, hi = qrange(info.type)
    q = round_half_away(np.asarray(real, dtype=np.float64) / info.scale) + info.zero_point
    return np.clip(q, lo, hi).astype(info.dtype)


# ----------------------------------------------------------------- fused activations

#: (lo, hi) real clamp of each fused activation code
ACTIVATION_CLAMP = {
    FusedActivation.NONE: (-math.inf, math.inf),
    FusedActivation.RELU: (0.0, math.inf),
    FusedActivation.RELU1: (-1.0, 1.0),
    FusedActivation.RELU6: (0.0, 6.0),
}
#: the operations that are a fused activation's clamp, with its code
CLAMP_OPERATIONS = {"RELU": FusedActivation.RELU, "RELU1": FusedActivation.RELU1,
                    "RELU6": FusedActivation.RELU6}


def activation_code(op_name: str) -> FusedActivation:
    """The fused activation an operation named ``op_name`` is (NONE: not a clamp)."""
    return CLAMP_OPERATIONS.get(op_name, FusedActivation.NONE)


def activation_range_float(act: int) -> tuple[float, float]:
    return ACTIVATION_CLAMP[FusedActivation(act)]


def apply_activation_float(x: np.ndarray, act: int) -> np.ndarray:
    lo, hi = activation_range_float(act)
    if lo == -math.inf and hi == math.inf:
        return x
    return np.clip(x, lo, hi).astype(x.dtype, copy=False)


def activation_range_quant(act: int, info: OperandInfo) -> tuple[int, int]:
    """CalculateActivationRangeUint8/Int8 of the reference."""
    lo, hi = qrange(info.type)
    lo_f, hi_f = activation_range_float(act)

    def q(f):
        return info.zero_point + int(round_half_away(f / info.scale))

    if lo_f != -math.inf:
        lo = max(lo, q(lo_f))
    if hi_f != math.inf:
        hi = min(hi, q(hi_f))
    return lo, hi


# ----------------------------------------------------------------- padding

def same_padding(in_size: int, filter_size: int, stride: int, dilation: int = 1):
    """(head, tail) for PaddingScheme.SAME."""
    out = (in_size + stride - 1) // stride
    eff = (filter_size - 1) * dilation + 1
    needed = max(0, (out - 1) * stride + eff - in_size)
    return needed // 2, needed - needed // 2


def implicit_padding(scheme: int, in_size: int, filter_size: int, stride: int, dilation: int = 1):
    if PaddingScheme(scheme) == PaddingScheme.SAME:
        return same_padding(in_size, filter_size, stride, dilation)
    return 0, 0


def conv_output_size(in_size, filter_size, stride, pad_head, pad_tail, dilation=1) -> int:
    eff = (filter_size - 1) * dilation + 1
    return (in_size - eff + stride + pad_head + pad_tail) // stride


# ----------------------------------------------------------------- broadcasting & checks

def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError as e:
        raise ValueError(f"shapes {list(a)} and {list(b)} cannot be broadcast") from e


def check_fused_activation(ctx: OperationContext, index: int):
    v = ctx.scalar(index)
    if v is not None:
        ctx.require(v in (0, 1, 2, 3),
                    f"input {index} (fused activation) must be 0..3, got {v}")


def check_rank(ctx: OperationContext, index: int, ranks, what: str = "input"):
    """ranks: an int, or a (min, max) range inclusive. Unknown rank (shape ()) is skipped."""
    info = ctx.inputs[index]
    r = info.rank
    if r == 0:  # unknown rank at validation time
        return
    lo, hi = (ranks, ranks) if isinstance(ranks, int) else ranks
    ctx.require(lo <= r <= hi, f"{what} {index} must have rank {ranks}, got rank {r}")


def check_same_quant(ctx: OperationContext, a: OperandInfo, b: OperandInfo, what: str):
    if a.type in QUANT_RANGE:
        ctx.require(a.scale == b.scale and a.zero_point == b.zero_point,
                    f"{what} must have the same scale and zero point")


def check_broadcastable(ctx: OperationContext, i: int, j: int, max_rank: int | None = None):
    """Inputs i and j broadcast NumPy-style; dims that are 0 (unknown at validation) and
    unknown ranks are not held against them."""
    a, b = ctx.inputs[i].shape, ctx.inputs[j].shape
    if max_rank is not None:
        for k, s in ((i, a), (j, b)):
            ctx.require(len(s) <= max_rank,
                        f"input {k} must have rank <= {max_rank}, got rank {len(s)}")
    for da, db in zip(reversed(a), reversed(b)):
        ctx.require(da == db or 1 in (da, db) or 0 in (da, db),
                    f"input {i} shape {list(a)} and input {j} shape {list(b)} "
                    "cannot be broadcast")


def check_axis(ctx: OperationContext, index: int, rank: int, axis=None, name: str = "axis"):
    """The axis scalar of input ``index`` (or ``axis`` when given) in [-rank, rank), as a
    non-negative axis; INVALID_ARGUMENT naming the input otherwise."""
    if axis is None:
        axis = ctx.scalar(index)
    ctx.require(-rank <= axis < rank,
                f"input {index} ({name}) must be in [{-rank}, {rank}), got {axis}")
    return axis % rank


def check_same_shape(ctx: OperationContext, in_index: int = 0, out_index: int = 0):
    """Output ``out_index`` has the shape of input ``in_index``, where both are known (a 0
    dimension or an unknown rank is not held against them)."""
    shape_in, shape_out = ctx.input_shape(in_index), ctx.outputs[out_index].shape
    if shape_in and shape_out:
        ctx.require(len(shape_in) == len(shape_out)
                    and all(a == b or 0 in (a, b) for a, b in zip(shape_in, shape_out)),
                    f"output {out_index} shape {list(shape_out)} differs from input "
                    f"{in_index} shape {list(shape_in)}")


def check_fixed_output_quant(ctx: OperationContext, scale: float, zero_point: int,
                             what: str = "output 0"):
    """Ops whose quantized output 0 has a fixed scale and zero point (SOFTMAX 1/256,
    L2_NORMALIZATION 1/128, LOGISTIC, TANH)."""
    out = ctx.outputs[0]
    ctx.require(np.float32(out.scale) == np.float32(scale) and out.zero_point == zero_point,
                f"{what} must have scale 1/{round(1 / scale)} and zero point {zero_point}, "
                f"got scale {out.scale} and zero point {out.zero_point}")


# ----------------------------------------------------------------- fixed point on arrays
# Raw int32 values held in int64 arrays (gemmlowp's FixedPoint on vectors).

def rounding_divide_by_pot_array(x, exponent):
    """RoundingDivideByPOT with an exponent that may be an array (>= 0)."""
    exponent = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


def saturating_shift_left(x, e):
    """SaturatingRoundingMultiplyByPOT<e> for e > 0: x * 2^e saturated to int32."""
    return np.clip(x << e, INT32_MIN, INT32_MAX)


def input_dim(ctx: OperationContext, index: int, k: int) -> int:
    """Dimension k of input ``index``; 0 when the input is omitted or the dimension unknown."""
    s = ctx.inputs[index].shape
    return s[k] if ctx.has_input(index) and k < len(s) else 0
