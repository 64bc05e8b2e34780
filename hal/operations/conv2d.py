"""CONV_2D, and the helpers every windowed family shares (depthwise, grouped, transpose conv,
pooling): window parameters, padding, layout, im2col and the quantized requantization.

| input | explicit padding form            | implicit padding form               |
|-------|----------------------------------|-------------------------------------|
| 0     | input [batches, h, w, depth_in]  | idem                                |
| 1     | filter [depth_out, fh, fw, depth_in] | idem                            |
| 2     | bias [depth_out]                 | idem                                |
| 3..6  | padding left, right, top, bottom | 3: padding scheme (1 SAME, 2 VALID) |
| 7, 8  | stride width, height             | 4, 5: stride width, height          |
| 9     | fused activation                 | 6: fused activation                 |
| 10    | NCHW layout (BOOL, since 1.2)    | 7: NCHW layout (BOOL, since 1.2)    |
| 11,12 | dilation width, height (1.2)     | 8, 9: dilation width, height (1.2)  |

Types (input, filter, bias, output): FLOAT32 x4 and QUANT8_ASYMM/QUANT8_ASYMM/INT32/QUANT8_ASYMM
(1.0); FLOAT16 x4 and QUANT8_ASYMM with a QUANT8_SYMM_PER_CHANNEL filter (1.2); the same two with
QUANT8_ASYMM_SIGNED (1.3). Quantized bias scale is input_scale * filter_scale (per channel for
per-channel filters, whose channel dimension must be 0).

Quantized results are TFLite's built-in kernels' bits: acc = sum((x - x_zp) * (w - w_zp)) + bias
in integers, then the multiplier input_scale * filter_scale / output_scale (in double, per
output channel; QuantizeMultiplier), plus output zero point, clamped to the activation range.
The multiplication rounds as TFLite's GEMM (ruy) does for CONV_2D and FULLY_CONNECTED:
SaturatingRoundingDoublingHighMul, then a right shift rounding ties upward
(``UPWARD``); DEPTHWISE_CONV_2D's int8 output stage does that on each whole block of 8
channels and gemmlowp's RoundingDivideByPOT (ties away from zero) on the channels left over
(``depthwise_upward``); the others (BATCH_MATMUL included) use RoundingDivideByPOT
throughout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hal.operations.common import (
    INT32_MAX,
    INT32_MIN,
    QUANT_RANGE,
    activation_range_float,
    activation_range_quant,
    check_fused_activation,
    conv_output_size,
    implicit_padding,
    quantize_multiplier,
)
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig
from hal.types import HalVersion, OperandType

OT = OperandType
F32, F16, I32 = OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16, OT.TENSOR_INT32
QA, QS = OT.TENSOR_QUANT8_ASYMM, OT.TENSOR_QUANT8_ASYMM_SIGNED
PC = OT.TENSOR_QUANT8_SYMM_PER_CHANNEL
INT, BOOL = OT.INT32, OT.BOOL

#: (version, input, filter, bias, output) of CONV_2D and DEPTHWISE_CONV_2D
CONV_CONFIGS = [("V1_0", F32, F32, F32, F32), ("V1_0", QA, QA, I32, QA),
                ("V1_2", F16, F16, F16, F16), ("V1_2", QA, PC, I32, QA),
                ("V1_3", QS, QS, I32, QS), ("V1_3", QS, PC, I32, QS)]
#: GROUPED_CONV_2D and TRANSPOSE_CONV_2D appeared in 1.2 with all of their 1.2 types
CONV_CONFIGS_V1_2 = [("V1_2",) + c[1:] if c[0] == "V1_0" else c for c in CONV_CONFIGS]


def conv_signatures(configs, forms):
    """configs: (version, in, filter, bias, out); forms: (version, scalar types after the
    three tensors). A signature's version is the later of its types' and its form's."""
    out = []
    for cv, ti, tf, tb, to in configs:
        for fv, scalars in forms:
            v = max(HalVersion[cv], HalVersion[fv])
            out.append(sig(v, [ti, tf, tb, *scalars], [to]))
    return out


CONV_FORMS = [("V1_0", [INT] * 7), ("V1_2", [INT] * 7 + [BOOL]),
              ("V1_2", [INT] * 7 + [BOOL, INT, INT]),
              ("V1_0", [INT] * 4), ("V1_2", [INT] * 4 + [BOOL]),
              ("V1_2", [INT] * 4 + [BOOL, INT, INT])]
SIGNATURES = conv_signatures(CONV_CONFIGS, CONV_FORMS)


# ----------------------------------------------------------------- window parameters

@dataclass
class WindowParams:
    """Scalars of a windowed operation; ``idx`` maps a parameter name to its input index."""
    explicit: bool
    pads: tuple = (0, 0, 0, 0)  # left, right, top, bottom (explicit form)
    scheme: int | None = None
    stride_w: int | None = 1
    stride_h: int | None = 1
    extra: list = field(default_factory=list)
    act: int | None = 0
    nchw: bool = False
    dil_w: int | None = 1
    dil_h: int | None = 1
    idx: dict = field(default_factory=dict)


def parse_window(ctx: OperationContext, first: int, explicit: bool,
                 extra_names=(), dilation=True) -> WindowParams:
    p = WindowParams(explicit)
    i = first
    if explicit:
        p.pads = tuple(ctx.scalar(i + k) for k in range(4))
        for k, n in enumerate(("padding left", "padding right", "padding top", "padding bottom")):
            p.idx[n] = i + k
        i += 4
    else:
        p.scheme = ctx.scalar(i)
        p.idx["padding scheme"] = i
        i += 1
    p.stride_w, p.stride_h = ctx.scalar(i), ctx.scalar(i + 1)
    p.idx["stride width"], p.idx["stride height"] = i, i + 1
    i += 2
    for n in extra_names:
        p.extra.append(ctx.scalar(i))
        p.idx[n] = i
        i += 1
    p.act = ctx.scalar(i)
    p.idx["fused activation"] = i
    i += 1
    if ctx.has_input(i):
        p.nchw = bool(ctx.scalar(i, False))
    i += 1
    if dilation and ctx.has_input(i + 1):
        p.dil_w, p.dil_h = ctx.scalar(i), ctx.scalar(i + 1)
        p.idx["dilation width"], p.idx["dilation height"] = i, i + 1
    return p


def check_window(ctx: OperationContext, p: WindowParams, positive=()):
    """Scalar checks known at build time: paddings >= 0, strides/dilations/extra > 0,
    padding scheme, fused activation."""
    for name, i in p.idx.items():
        v = ctx.scalar(i)
        if v is None:
            continue
        if name.startswith("padding") and name != "padding scheme":
            ctx.require(v >= 0, f"input {i} ({name}) must be >= 0, got {v}")
        elif name.startswith(("stride", "dilation")) or name in positive:
            ctx.require(v > 0, f"input {i} ({name}) must be > 0, got {v}")
    if p.scheme is not None:
        ctx.require(p.scheme in (1, 2),
                    f"input {p.idx['padding scheme']} (padding scheme) must be 1 (SAME) or "
                    f"2 (VALID), got {p.scheme}")
    check_fused_activation(ctx, p.idx["fused activation"])


def nhwc_shape(shape, nchw: bool):
    """(N, H, W, C) of a rank-4 shape in the given layout."""
    if nchw:
        n, c, h, w = shape
        return n, h, w, c
    return tuple(shape)


def layout_shape(n, h, w, c, nchw: bool):
    return (n, c, h, w) if nchw else (n, h, w, c)


def to_nhwc(x, nchw: bool):
    return x.transpose(0, 2, 3, 1) if nchw else x


def from_nhwc(y, nchw: bool):
    return np.ascontiguousarray(y.transpose(0, 3, 1, 2)) if nchw else y


def resolve_padding(p: WindowParams, in_h, in_w, f_h, f_w):
    """(top, bottom, left, right) and the output (height, width); ValueError when empty."""
    if p.explicit:
        left, right, top, bottom = p.pads
    else:
        top, bottom = implicit_padding(p.scheme, in_h, f_h, p.stride_h, p.dil_h)
        left, right = implicit_padding(p.scheme, in_w, f_w, p.stride_w, p.dil_w)
    oh = conv_output_size(in_h, f_h, p.stride_h, top, bottom, p.dil_h)
    ow = conv_output_size(in_w, f_w, p.stride_w, left, right, p.dil_w)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"the window does not fit: output size {oh}x{ow}")
    return (top, bottom, left, right), (oh, ow)


def windows(xp, f_h, f_w, oh, ow, p: WindowParams):
    """Yield (i, j, [N, oh, ow, C] slice) of a padded NHWC input for every filter tap."""
    for i in range(f_h):
        r0 = i * p.dil_h
        for j in range(f_w):
            c0 = j * p.dil_w
            yield i, j, xp[:, r0:r0 + (oh - 1) * p.stride_h + 1:p.stride_h,
                           c0:c0 + (ow - 1) * p.stride_w + 1:p.stride_w, :]


def pad_nhwc(x, pads, value=0):
    top, bottom, left, right = pads
    return np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=value)


def im2col(xp, f_h, f_w, oh, ow, p: WindowParams):
    """[N, oh, ow, f_h * f_w * C] columns, tap-major then channel (the filter's order)."""
    cols = [s for _, _, s in windows(xp, f_h, f_w, oh, ow, p)]
    return np.concatenate(cols, axis=-1) if cols else xp[:, :oh, :ow, :0]


# ----------------------------------------------------------------- quantization

def is_quant(t) -> bool:
    return t in QUANT_RANGE


def centered(info, x):
    """x - zero_point as float64 (exact for 8-bit data); per-channel filters have zp 0."""
    return x.astype(np.float64) - (info.zero_point if is_quant(info.type) else 0)


def filter_scales(filt, n_out: int) -> np.ndarray:
    if filt.channel_quant is not None:
        return np.asarray(filt.channel_quant.scales, dtype=np.float32)
    return np.full(n_out, np.float32(filt.scale), dtype=np.float32)


def output_multipliers(inp, filt, out, n_out: int):
    """Per output channel (multiplier, shift) of input_scale * filter_scale / output_scale,
    computed in double from the float32 scales (TFLite's PopulateConvolutionQuantizationParams)."""
    prod = np.float64(np.float32(inp.scale)) * filter_scales(filt, n_out).astype(np.float64)
    real = prod / np.float64(np.float32(out.scale))
    qs = [quantize_multiplier(float(r)) for r in real]
    return (np.array([q for q, _ in qs], dtype=np.int64),
            np.array([s for _, s in qs], dtype=np.int64))


#: the rounding of the last right shift: every channel ties upward (TFLite's GEMM)
UPWARD = True


def depthwise_upward(inp, n_out: int):
    """Which channels TFLite's int8 depthwise output stage rounds upward: those of its whole
    blocks of 8 (vector code), not the ones left over (scalar gemmlowp); uint8: none."""
    if inp.type != OT.TENSOR_QUANT8_ASYMM_SIGNED:
        return False
    return np.arange(n_out) < (n_out // 8) * 8


def multiply_by_quantized_multiplier_pc(x, mult, shift, upward=False):
    """MultiplyByQuantizedMultiplier with per-channel (last axis) multipliers and shifts:
    saturating left shift, SaturatingRoundingDoublingHighMul, then a rounding right shift whose
    ties go away from zero (gemmlowp's RoundingDivideByPOT), or upward where ``upward`` (a
    bool, or one per channel)."""
    x = np.asarray(x, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    x = np.clip(x * (np.int64(1) << left), INT32_MIN, INT32_MAX)
    ab = x * mult
    nudge = np.where(ab >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    s = ab + nudge
    high = np.where(s >= 0, s >> 31, -((-s) >> 31))
    mask = (np.int64(1) << right) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (high < 0)
    away = (high >> right) + (remainder > threshold)
    if upward is False:
        return away
    up = (high + (mask >> 1) + (right > 0)) >> right
    return np.where(upward, up, away)


def finish(acc, bias, act, out, mults=None, upward=False):
    """acc [..., C] (float64) + bias, activation, to the output's type; ``upward``: the
    rounding of multiply_by_quantized_multiplier_pc."""
    if mults is None:
        lo, hi = activation_range_float(act)
        with np.errstate(all="ignore"):
            y = acc + np.asarray(bias, dtype=np.float64)
            return np.clip(y, lo, hi).astype(out.dtype)
    acc = np.rint(acc).astype(np.int64) + np.asarray(bias, dtype=np.int64)
    y = multiply_by_quantized_multiplier_pc(acc, *mults, upward=upward) + out.zero_point
    lo, hi = activation_range_quant(act, out)
    return np.clip(y, lo, hi).astype(out.dtype)


# ----------------------------------------------------------------- validation

def check_conv_tensors(ctx: OperationContext, channel_dim: int, filter_in_channels=True,
                       nchw: bool = False):
    """Ranks, bias size, bias quantization and per-channel axis of input 0/1/2."""
    for i, r in ((0, 4), (1, 4), (2, 1)):
        rank = ctx.inputs[i].rank
        ctx.require(rank in (0, r), f"input {i} must have rank {r}, got rank {rank}")
    inp, filt, bias = ctx.inputs[:3]
    if filt.rank == 4 and bias.rank == 1:
        n_out, nb = filt.shape[channel_dim], bias.shape[0]
        ctx.require(0 in (n_out, nb) or n_out == nb,
                    f"input 2 (bias) has {nb} elements, the filter has {n_out} output channels")
    if filter_in_channels and inp.rank == 4 and filt.rank == 4:
        c_in, fc = nhwc_shape(inp.shape, nchw)[3], filt.shape[3]
        ctx.require(0 in (c_in, fc) or c_in == fc,
                    f"input 1 (filter) depth {fc} does not match input 0 depth {c_in}")
    if filt.type == PC:
        cd = filt.channel_quant.channel_dim
        ctx.require(cd == channel_dim, f"input 1 (per-channel filter) must have channel "
                    f"dimension {channel_dim}, got {cd}")
    elif is_quant(filt.type):
        check_bias_scale(ctx, inp, filt, bias, "filter")


def check_bias_scale(ctx: OperationContext, inp, weights, bias, what: str):
    """A quantized bias has scale input_scale * weights_scale (to float32 precision)."""
    want = np.float32(inp.scale) * np.float32(weights.scale)
    ctx.require(abs(want - bias.scale) <= 1e-6 * min(want, bias.scale),
                f"input 2 (bias) scale {bias.scale} must equal input scale * {what} scale "
                f"{float(want)}")


# ----------------------------------------------------------------- prepare / execute

def check_filter_depth(ctx: OperationContext, c, fc):
    """CONV_2D, TRANSPOSE_CONV_2D: the filter's last dimension is the input depth."""
    if fc != c:
        ctx.fail(f"input 1 (filter) depth {fc} does not match input 0 depth {c}")


def validate_conv(ctx: OperationContext, p: WindowParams, channel_dim: int, check_depth=None,
                  positive=(), filter_in_channels=True):
    """validate() of the convolutions: scalars, tensors (check_conv_tensors) and, where input
    and filter have rank 4, ``check_depth(c, filter_shape)``."""
    check_window(ctx, p, positive=positive)
    check_conv_tensors(ctx, channel_dim, filter_in_channels=filter_in_channels, nchw=p.nchw)
    inp, filt = ctx.inputs[0], ctx.inputs[1]
    if check_depth is not None and inp.rank == 4 and filt.rank == 4:
        check_depth(nhwc_shape(inp.shape, p.nchw)[3], filt.shape)


def prepare_conv(ctx: OperationContext, p: WindowParams, out_dim: int, check_depth,
                 positive=()):
    """prepare() of CONV_2D, DEPTHWISE_CONV_2D and GROUPED_CONV_2D: the scalars checked again
    (they may be model inputs, known only now), ``check_depth(c, filter_shape)``, then the
    [N, oh, ow, filter_shape[out_dim]] output in the operation's layout."""
    check_window(ctx, p, positive=positive)
    n, h, w, c = nhwc_shape(ctx.input_shape(0), p.nchw)
    filter_shape = ctx.input_shape(1)
    _, fh, fw, _ = filter_shape
    check_depth(c, filter_shape)
    _, (oh, ow) = resolve_padding(p, h, w, fh, fw)
    return [layout_shape(n, oh, ow, filter_shape[out_dim], p.nchw)]


def padded_input(ctx: OperationContext, p: WindowParams):
    """execute() of CONV_2D, DEPTHWISE_CONV_2D and GROUPED_CONV_2D: input 0 as centered NHWC
    float64, padded for the window of filter input 1; returns (padded input, (oh, ow))."""
    x = to_nhwc(ctx.input(0), p.nchw)
    _, fh, fw, _ = ctx.inputs[1].shape
    pads, (oh, ow) = resolve_padding(p, x.shape[1], x.shape[2], fh, fw)
    return pad_nhwc(centered(ctx.inputs[0], x), pads), (oh, ow)


def conv_result(ctx: OperationContext, acc, p: WindowParams, upward=False):
    """The output list of a convolution from its float64 NHWC accumulator [N, oh, ow, O]:
    bias, requantization (quantized inputs; ``upward``: see finish), activation, layout."""
    inp, fi, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    mults = output_multipliers(inp, fi, out, acc.shape[-1]) if is_quant(inp.type) else None
    return [from_nhwc(finish(acc, ctx.input(2), p.act, out, mults, upward), p.nchw)]


# ----------------------------------------------------------------- CONV_2D

def conv_params(ctx):
    explicit = ctx.num_inputs() >= 10 and ctx.input_type(7) == INT
    return parse_window(ctx, 3, explicit)


def validate(ctx: OperationContext):
    validate_conv(ctx, conv_params(ctx), 0)


def prepare(ctx: OperationContext):
    return prepare_conv(ctx, conv_params(ctx), 0, lambda c, f: check_filter_depth(ctx, c, f[3]))


def execute(ctx: OperationContext):
    p = conv_params(ctx)
    xp, (oh, ow) = padded_input(ctx, p)
    filt = centered(ctx.inputs[1], ctx.input(1))
    o, fh, fw, c = filt.shape
    cols = im2col(xp, fh, fw, oh, ow, p)
    return conv_result(ctx, cols @ filt.reshape(o, fh * fw * c).T, p, UPWARD)


register("CONV_2D", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="conv2d")
