"""L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, INSTANCE_NORMALIZATION on OpenCL
(template normalization.cl.mako). Scalar parameters (axis, radius, bias, alpha, beta, gamma,
epsilon, layout) are read on the host at planning.

- L2_NORMALIZATION: float32 / float16 in float32 (x / max(norm, 1e-6)), quant8 asymm / signed
  with the reference's integer pipeline (sum of squared differences to the zero point,
  GetInvSqrtQuantizedMultiplierExp, a rounding multiply of 128 * (x - zero point)); any axis,
  one work-item per normalized vector.
- LOCAL_RESPONSE_NORMALIZATION: float32 / float16, any axis, one work-item per element;
  along the last axis (NHWC channels, ONNX LRN after the layout pass) a 2-D launch with the
  window unrolled, in vectors of channels where one divides them (lrn_vec: 1x55x55x96
  0.60 -> 0.09 ms of kernel time); the exponents 0.75 / 0.5 / 1 by square roots or a division
  (exp2 / log2 took 5x as long); along another axis (NCHW channels) a 3-D launch whose
  neighbouring work-items are neighbouring positions, the window unrolled (lrn_planes).
- INSTANCE_NORMALIZATION: float32 / float16; one work-group per (batch, channel) reduces mean
  and variance (two passes) in local memory; NHWC with 16 channels or more: one work-item per
  (batch, channel), neighbouring channels side by side (a work-group per channel strides by C).
"""

from __future__ import annotations

from clnn.kernels import _defaults
from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    FLOAT,
    FLOAT_QUANT8,
    QUANT8,
    code,
    f32,
    i32,
    numel,
    types_in,
)
from hal.operations.common import qrange

#: work-items of one INSTANCE_NORMALIZATION reduction group (fewer where the device allows
#: fewer: a power of two for the tree reduction)
_GROUP = 64


#: NHWC INSTANCE_NORMALIZATION: from this many channels on, a work-item per channel (side by
#: side in memory) instead of a work-group per channel (which strides by C but splits a
#: large H x W of few channels over its work-items)
_CHANNELS_PER_ITEM = 16


def _group_size(b) -> int:
    """The reduction group: at most what the device runs in one work-group (dimension 0) and
    holds in local memory (one float per work-item)."""
    return b.device.limits.pow2_group(_GROUP, local_bytes_per_item=4)


def _axis(ctx, index, rank):
    if ctx.num_inputs() <= index:
        return rank - 1
    return int(ctx.scalar(index, -1)) % rank


def support_l2(ctx):
    return types_in(ctx, 0, FLOAT_QUANT8)


def plan_l2(ctx, b):
    need_values(ctx, 1)
    x, y = ctx.inputs[0], ctx.outputs[0]
    axis = _axis(ctx, 1, len(x.shape))
    n, inner = int(x.shape[axis]), numel(x.shape[axis + 1:])
    quant = x.type in QUANT8
    extra = []
    if quant:
        lo, hi = qrange(y.type)
        extra = [i32(x.zero_point), i32(y.zero_point), i32(lo), i32(hi)]
    b.launch("normalization", "l2_normalization", {"dt": code(x), "quant": quant},
             (numel(x.shape[:axis]) * inner,), [In(0), Out(0), i32(n), i32(inner), *extra])


def support_float(ctx):
    return types_in(ctx, 0, FLOAT)


#: LOCAL_RESPONSE_NORMALIZATION: the window unrolled up to this radius (lrn_vec, lrn_rows,
#: lrn_planes; larger ones loop)
_LRN_UNROLL = 8


def _lrn_pw(beta: float) -> str:
    """The compiled exponent of b^-beta (normalization.cl.mako lrn_scale): "0.75", "0.5" or
    "1" by square roots or a division, "" (exp2 / log2) for the others."""
    return next((k for k in ("0.75", "0.5", "1") if float(beta) == float(k)), "")


def _lrn_vw(b, n: int) -> int | None:
    """The vector of lrn_vec: the widest dividing ``n`` up to the device class's
    ``norm_max_vw`` (clnn/kernels/_defaults.py); None where none does."""
    most = _defaults.defaults(_defaults.traits(b.device.limits)).norm_max_vw
    return next((v for v in (16, 8, 4) if v <= most and n % v == 0), None)


def plan_lrn(ctx, b):
    need_values(ctx, 1, 2, 3, 4, 5)
    x = ctx.inputs[0]
    axis = _axis(ctx, 5, len(x.shape))
    n, inner = int(x.shape[axis]), numel(x.shape[axis + 1:])
    radius, bias, alpha, beta = (ctx.scalar(k) for k in range(1, 5))
    params = {"dt": code(x), "pw": _lrn_pw(beta)}
    scalars = [f32(bias), f32(alpha), f32(beta)]
    if inner == 1 and 0 <= int(radius) <= _LRN_UNROLL and n > 0:
        rows, vw = numel(x.shape) // n, _lrn_vw(b, n)
        name, gsize = ("lrn_vec", (n // vw, rows)) if vw else ("lrn_rows", (n, rows))
        b.launch("normalization", name, {**params, "radius": int(radius), "vw": vw}, gsize,
                 [In(0), Out(0), *scalars], flexible=True)
        return
    if 0 <= int(radius) <= _LRN_UNROLL and n > 0:  # NCHW channels: 0.70 -> 0.06 ms (1x96x55x55)
        b.launch("normalization", "lrn_planes", {**params, "radius": int(radius)},
                 (inner, n, numel(x.shape[:axis])), [In(0), Out(0), *scalars], flexible=True)
        return
    b.launch("normalization", "local_response_normalization", params, (numel(x.shape),),
             [In(0), Out(0), i32(n), i32(inner), i32(radius), *scalars])


def plan_instance(ctx, b):
    need_values(ctx, 1, 2, 3, 4)
    x = ctx.inputs[0]
    gamma, beta, epsilon, nchw = (ctx.scalar(k) for k in range(1, 5))
    if nchw:
        n, c, h, w = (int(d) for d in x.shape)
        batch_stride, channel_stride, step = c * h * w, h * w, 1
    else:
        n, h, w, c = (int(d) for d in x.shape)
        batch_stride, channel_stride, step = h * w * c, 1, c
        if c >= _CHANNELS_PER_ITEM:  # a work-item per channel beats a work-group per
            # channel on wide NHWC tensors (benchmarks/layout_families.py)
            b.launch("normalization", "instance_normalization_nhwc", {"dt": code(x)},
                     (c, n), [In(0), Out(0), i32(c), i32(h * w), f32(gamma), f32(beta),
                              f32(epsilon)])
            return
    group = _group_size(b)
    b.launch("normalization", "instance_normalization", {"dt": code(x), "group": group},
             (n * c * group,), [In(0), Out(0), i32(c), i32(h * w), i32(batch_stride),
                                 i32(channel_stride), i32(step), f32(gamma), f32(beta),
                                 f32(epsilon)],
             local_size=(group,))


register_kernel("L2_NORMALIZATION", family="normalization", support=support_l2,
                plan=plan_l2, host_inputs=[1])
register_kernel("LOCAL_RESPONSE_NORMALIZATION", family="normalization",
                support=support_float, plan=plan_lrn, host_inputs=[1, 2, 3, 4, 5])
register_kernel("INSTANCE_NORMALIZATION", family="normalization", support=support_float,
                plan=plan_instance, host_inputs=[1, 2, 3, 4])
