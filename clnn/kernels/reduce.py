"""MEAN, REDUCE_SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ALL, REDUCE_ANY on OpenCL
(reduce.cl.mako), rank <= 4, every type of the signatures. Axes and keep_dims are read on the
host when the partition is planned. Float32 MEAN / SUM / MAX / MIN over one block of
dimensions whose inner dimensions are kept (MEAN over height and width of NHWC) take
reduce_rows: vectors of the contiguous inner elements, four accumulators. Quantized MEAN
gives the reference's (TFLite's) bits: MultiplyByQuantizedMultiplier(sum - subtracted) + added
with hal.operations.reduce.mean_requant's integers."""

from __future__ import annotations

import numpy as np

from clnn.kernels.registry import In, Out, Unplannable, register_kernel
from clnn.kernels.support import (
    ANY_STORED,
    code,
    f32,
    first,
    i32,
    max_rank,
    numel,
    row_vector,
    strides_of,
    types_in,
    vector_groups,
)
from hal.operations.common import QUANT_RANGE, qrange
from hal.operations.reduce import mean_requant, resolve_axes, spatial_mean

_OPS = ("MEAN", "REDUCE_SUM", "REDUCE_PROD", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_ALL",
        "REDUCE_ANY")


def support(ctx):
    return first(types_in(ctx, 0, ANY_STORED), max_rank(ctx, 0, 4))


def _pad4(dims, strides):
    lead = 4 - len(dims)
    return [1] * lead + list(dims), [0] * lead + list(strides)


#: the reductions reduce_rows runs (float32)
_ROWS_OPS = ("MEAN", "REDUCE_SUM", "REDUCE_MAX", "REDUCE_MIN")


def rows_form(shape, axes) -> tuple[int, int, int, int] | None:
    """(outer, R, inner, vw) where the axes are one block of dimensions, the dimensions after
    it (kept, contiguous) hold 4 elements or more and the block is not empty: the input seen
    as [outer, R, inner] reduced over R, vw the vector of inner elements (16, 8 or 4,
    support.row_vector)."""
    if not axes or axes != list(range(axes[0], axes[-1] + 1)):
        return None
    outer = numel(shape[:axes[0]])
    r = numel(shape[axes[0]:axes[-1] + 1])
    inner = numel(shape[axes[-1] + 1:])
    vw = row_vector(inner)
    if vw is None or r == 0 or outer == 0:
        return None
    return outer, r, inner, vw


def plan(ctx, b):
    x, y = ctx.inputs[0], ctx.outputs[0]
    shape = x.shape
    if len(shape) > 4:
        raise Unplannable("rank > 4")
    axes = sorted(resolve_axes(ctx, ctx.input(1), len(shape)))
    form = rows_form(shape, axes) if ctx.name in _ROWS_OPS and code(y) == "f32" else None
    if form is not None:  # a block of middle dimensions, contiguous inner ones: vectors
        outer, r, inner, vw = form
        init = np.finfo(np.float32).min if ctx.name == "REDUCE_MAX" else \
            np.finfo(np.float32).max
        b.launch("reduce", "reduce_rows", {"op": ctx.name, "vw": vw},
                 (vector_groups(inner, vw), outer),
                 [In(0), Out(0), i32(r), i32(inner), f32(init)])
        return
    st = strides_of(shape)
    kept = [d for d in range(len(shape)) if d not in axes]
    od, os_ = _pad4([shape[d] for d in kept], [st[d] for d in kept])
    rd, rs = _pad4([shape[d] for d in axes], [st[d] for d in axes])
    count = numel(rd)
    quant = y.type in QUANT_RANGE
    if ctx.name == "MEAN" and quant and count == 0:
        raise Unplannable("quantized MEAN over an empty dimension")  # the reference fails
    requant = (0, 0, 0, 0)
    if ctx.name == "MEAN" and quant:
        requant = mean_requant(x, y, count, spatial_mean(ctx, len(shape)))
    lo, hi = qrange(y.type) if quant else (0, 0)
    if x.dtype.kind == "f":
        init = np.finfo(x.dtype).min if ctx.name == "REDUCE_MAX" else np.finfo(x.dtype).max
    elif x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        init = info.min if ctx.name == "REDUCE_MAX" else info.max
    else:
        init = 0
    b.launch("reduce", "reduce", {"op": ctx.name, "dt": code(y)}, (numel(y.shape),),
             [In(0), Out(0), *[i32(v) for v in od[1:]], *[i32(v) for v in os_],
              *[i32(v) for v in rd[1:]], *[i32(v) for v in rs], i32(count),
              *[i32(v) for v in requant], i32(lo), i32(hi), f32(init)])


for _op in _OPS:
    register_kernel(_op, family="reduce", support=support, plan=plan, host_inputs=[1, 2])
