"""AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D on OpenCL (pooling.cl.mako): explicit and implicit
padding, NHWC and NCHW, fused activation; float32, float16 and quant8 asymm/signed. Window
parameters are read on the host when the partition is planned. A float NHWC pooling without
padding of its own may read through a PAD fused into it (clnn/fusion/): the kernels then count
the PAD's taps as zeros (``padz``), as the padded tensor would hold them."""

from __future__ import annotations

from clnn.kernels import _defaults
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    FLOAT_QUANT8,
    act_args,
    code,
    first,
    i32,
    no_per_channel,
    row_local_size,
    row_vector,
    strides_of,
    types_in,
    vector_groups,
)
from hal.operations.conv2d import resolve_padding
from hal.operations.pooling import pool_params

#: NCHW float pooling (pool_planes; its vector: the device class's planes_vw): windows of up
#: to this many taps unrolled
_PLANES_TAPS = 49
_KIND = {"AVERAGE_POOL_2D": "AVERAGE", "MAX_POOL_2D": "MAX", "L2_POOL_2D": "L2"}


def support(ctx):
    return first(types_in(ctx, 0, FLOAT_QUANT8), no_per_channel(ctx))


def _nhwc_strides(shape, nchw):
    s = strides_of(shape)
    return [s[0], s[2], s[3], s[1]] if nchw else s


def plan(ctx, b):
    p = pool_params(ctx)
    x, y = ctx.inputs[0], ctx.outputs[0]
    xs, ys = x.shape, y.shape
    if p.nchw:
        n, c, h, w = xs
        oh, ow = ys[2], ys[3]
    else:
        n, h, w, c = xs
        oh, ow = ys[1], ys[2]
    fw, fh = p.extra
    (top, _, left, _), _ = resolve_padding(p, h, w, fh, fw)
    act_index = p.idx["fused activation"]
    extra = {}
    if b.input_pad is not None:  # a PAD fused in (clnn/fusion/): its taps are zeros
        top, left, h, w = b.input_pad.adjust(top, left)
        xs = (n, h, w, c)
        extra = {"padz": True}
    vw = row_vector(c)
    # (8-bit quantized: AVERAGE and MAX of their own padding; the global average pool of the
    # int8 models ran a work-item per channel, one work-group: issue #36)
    quant_vec = code(y) in ("u8", "i8") and ctx.name != "L2_POOL_2D" and not extra
    if not p.nchw and (code(y) == "f32" or quant_vec) and vw:  # contiguous channels
        if code(y) != "f32":
            extra = {"dt": code(y)}
        groups = vector_groups(c, vw)
        local = row_local_size(groups, ow, 64)
        # pixels c channels apart, or a concatenation's where the output is its slot (written
        # in place: no copy into it; ShuffleNet's pooled shortcut)
        ld = b.out_stride(0) or c
        b.launch("pooling", "pool_vec", {"kind": _KIND[ctx.name], "vw": vw, **extra},
                 (groups, ow, n * oh),
                 [In(0), Out(0), *[i32(v) for v in (h, w, c, oh, ow)],
                  *[i32(v) for v in _nhwc_strides(xs, False)[:3]],
                  *[i32(v) for v in (oh * ow * ld, ow * ld, ld)],
                  *[i32(v) for v in (fh, fw, p.stride_h, p.stride_w, top, left)],
                  *act_args(ctx, act_index, y)], local_size=(*local, 1) if local else None)
        return
    if p.nchw and code(y) in ("f32", "f16") and fh * fw <= _PLANES_TAPS and \
            p.stride_w in (1, 2) and not extra:  # NCHW: vectors along the rows
        vw, rows = _defaults.planes_variant(b.device.limits, p.stride_h, p.stride_w)
        b.launch("pooling", "pool_planes", {"kind": _KIND[ctx.name], "dt": code(y), "fh": fh,
                                            "fw": fw, "sw": p.stride_w, "sh": p.stride_h,
                                            "vw": vw, "rows": rows},
                 (-(-ow // vw), -(-oh // rows), n * c),
                 [In(0), Out(0), *[i32(v) for v in (h, w, oh, ow, top, left)],
                  *act_args(ctx, act_index, y), i32(n * c * h * w)], flexible=True)
        return
    local = row_local_size(c, ow)
    b.launch("pooling", "pool", {"kind": _KIND[ctx.name], "dt": code(y), **extra},
             (c, ow, n * oh),
             [In(0), Out(0), *[i32(v) for v in (h, w, c, oh, ow)],
              *[i32(v) for v in _nhwc_strides(xs, p.nchw)],
              *[i32(v) for v in _nhwc_strides(ys, p.nchw)],
              *[i32(v) for v in (fh, fw, p.stride_h, p.stride_w, top, left)],
              *act_args(ctx, act_index, y)], local_size=(*local, 1) if local else None)


for _op in _KIND:
    register_kernel(_op, family="pooling", support=support, plan=plan,
                    host_inputs=list(range(1, 11)))
