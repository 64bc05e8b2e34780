"""RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR on OpenCL (resize.cl.mako): size and scale forms,
NHWC and NCHW, align_corners and half_pixel_centers; float32, float16, quant8 asymm/signed.
Source index tables come from the HAL's own per-axis functions, so sampling matches the
reference exactly; quantized results are the reference's (TFLite's) bits."""

from __future__ import annotations

import numpy as np

from clnn.kernels import _defaults
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    FLOAT_QUANT8,
    code,
    f32,
    i32,
    numel,
    row_local_size,
    row_vector,
    strides_of,
    types_in,
    vector_groups,
)
from hal.operations.common import activation_range_float
from hal.operations.resize import bilinear_axis, integer_axis, nearest_axis, resize_flags


def support(ctx):
    return types_in(ctx, 0, FLOAT_QUANT8)


def _vec_width(ctx) -> int | None:
    """The channel vector of the NHWC float32 kernel (resize_vec), None where it does not
    apply."""
    nchw, _, _ = resize_flags(ctx)
    y = ctx.outputs[0]
    c = y.shape[1] if nchw else y.shape[3]
    if nchw or code(y) != "f32":
        return None
    return row_vector(c)


def epilogue_residual(ctx, channels: bool = False, clamped: bool = False,
                      pooled: bool = False) -> bool:
    """resize_vec adds an ADD's other operand (of the output's shape) and clamps to its
    activation (clnn/fusion/): the skip connections of the decoders
    (ADD(RESIZE_BILINEAR(x), skip)); a resize has no clamp of its own (``clamped``) and reads
    no pooled residual."""
    if channels or clamped or pooled:
        return False
    try:
        return _vec_width(ctx) is not None
    except Exception:  # an unusual form: no fusion
        return False


def repeating_columns(op: str, w: int, ow: int, align: bool, half: bool):
    """(f, d0, d1, a, b) where a float NCHW resize of a row of ``w`` to ``ow`` runs resize_rep:
    the output row is a whole factor f (dividing 16) of the input row and the source columns
    (the reference's tables) of outputs a <= ox < b are ox // f + d[ox % f] (d0 of the first
    column, d1 of the second; offsets of at most 2, comma-separated) clamped to the row
    (the tables' edges: the kernel clamps a vector that crosses the row's end), b - a at least
    half the row; None otherwise. (clnn/layout.py: such a RESIZE_BILINEAR is an island too.)"""
    if w <= 0 or ow % w or 16 % (ow // w):
        return None
    if op == "RESIZE_NEAREST_NEIGHBOR":
        c0 = c1 = nearest_axis(w, ow, align, half)
    else:
        c0, c1, _ = bilinear_axis(w, ow, align, half)
    f = ow // w
    ox = np.arange(ow)
    offs = []
    for t in (c0, c1):
        d = np.asarray(t, np.int64) - ox // f
        mid = d[(ow // 2) // f * f:(ow // 2) // f * f + f]
        if len(mid) < f or np.abs(mid).max() > 2:
            return None
        offs.append(mid)
    ok = np.all([np.asarray(t, np.int64) == np.clip(ox // f + np.tile(m, w), 0, w - 1)
                 for t, m in zip((c0, c1), offs)], axis=0)
    good = np.flatnonzero(ok)
    a, b = int(good[0]), int(good[-1]) + 1
    if not ok[a:b].all() or b - a < ow // 2:
        return None
    return (f, ",".join(str(int(v)) for v in offs[0]), ",".join(str(int(v)) for v in offs[1]),
            a, b)


def _nhwc_strides(shape, nchw):
    s = strides_of(shape)
    return [s[0], s[2], s[3], s[1]] if nchw else s


def plan(ctx, b):
    nchw, align, half = resize_flags(ctx)
    x, y = ctx.inputs[0], ctx.outputs[0]
    if nchw:
        _, c, h, w = x.shape
        oh, ow = y.shape[2], y.shape[3]
    else:
        _, h, w, c = x.shape
        oh, ow = y.shape[1], y.shape[2]
    if ctx.name == "RESIZE_NEAREST_NEIGHBOR":
        r0 = r1 = nearest_axis(h, oh, align, half)
        c0 = c1 = nearest_axis(w, ow, align, half)
        fr, fc = np.zeros(oh, np.float32), np.zeros(ow, np.float32)
    elif code(y) == "i8":  # ResizeBilinearInteger's fixed-point fractions and neighbours
        fr, r0, r1 = integer_axis(h, oh, align, half)
        fc, c0, c1 = integer_axis(w, ow, align, half)
    else:
        r0, r1, fr = bilinear_axis(h, oh, align, half)
        c0, c1, fc = bilinear_axis(w, ow, align, half)
    tables = [b.buffer(np.asarray(t, np.int32)) for t in (r0, r1)] + \
        [b.buffer(np.asarray(fr, np.float32))] + \
        [b.buffer(np.asarray(t, np.int32)) for t in (c0, c1)] + \
        [b.buffer(np.asarray(fc, np.float32))]
    n = numel(y.shape) // max(c * oh * ow, 1)
    vw = _vec_width(ctx)
    if vw:  # NHWC float32: vectors of contiguous channels
        xs, ys = _nhwc_strides(x.shape, nchw), _nhwc_strides(y.shape, nchw)
        groups = vector_groups(c, vw)
        local = row_local_size(groups, ow, 64)
        # an ADD fused in (clnn/fusion/): its other operand (laid out like the output) and
        # its activation's clamp; else a null buffer the kernel never reads
        f = b.residual
        res = list(b.tensor(f.other)) if f is not None else [None, i32(0)]
        lo, hi = activation_range_float(f.activation) if f is not None else (-np.inf, np.inf)
        b.launch("resize", "resize_vec", {"op": ctx.name, "vw": vw}, (groups, ow, n * oh),
                 [In(0), Out(0), *res, *tables, i32(c), i32(oh), i32(ow),
                  *[i32(v) for v in (*xs[:3], *ys[:3])], f32(lo), f32(hi),
                  i32(f is not None)],
                 local_size=(*local, 1) if local else None)
        return
    rep = repeating_columns(ctx.name, w, ow, align, half) \
        if nchw and code(y) in ("f32", "f16") else None
    if rep is not None:  # NCHW float, a whole factor along the rows: vectors of a row
        f, d0, d1, lo, hi = rep
        rows = _defaults.defaults(_defaults.traits(b.device.limits)).resize_rows
        b.launch("resize", "resize_rep", {"op": ctx.name, "dt": code(y), "f": f, "d0": d0,
                                          "d1": d1, "rows": rows},
                 (-(-ow // 16), -(-oh // rows), n * c),
                 [In(0), Out(0), *tables,
                  *[i32(v) for v in (h, w, oh, ow, lo, hi, n * c * h * w)]],
                 flexible=True)
        return
    if nchw and code(y) in ("f32", "f16"):  # NCHW float: work-items along the rows
        b.launch("resize", "resize_row", {"op": ctx.name, "dt": code(y)}, (ow, oh, n * c),
                 [In(0), Out(0), *tables, *[i32(v) for v in (h, w, oh, ow)]], flexible=True)
        return
    local = row_local_size(c, ow)
    b.launch("resize", "resize", {"op": ctx.name, "dt": code(y)}, (c, ow, n * oh),
             [In(0), Out(0), *tables, i32(c), i32(oh), i32(ow),
              *[i32(v) for v in _nhwc_strides(x.shape, nchw)],
              *[i32(v) for v in _nhwc_strides(y.shape, nchw)]],
             local_size=(*local, 1) if local else None)


for _op in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"):
    register_kernel(_op, family="resize", support=support, plan=plan,
                    host_inputs=[1, 2, 3, 4, 5], epilogue_residual=epilogue_residual)
