"""TILE on OpenCL (template tile.cl.mako): every type of the HAL signatures, copied bit for
bit, rank <= 6; the multiples are read on the host at planning (they fix the output shape)."""

from __future__ import annotations

from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, Unplannable, register_kernel
from clnn.kernels.support import (
    ANY_STORED,
    copy_code,
    first,
    i32,
    max_rank,
    numel,
    strides_of,
    types_in,
)

_RANK = 6


def support(ctx):
    return first(types_in(ctx, 0, ANY_STORED), max_rank(ctx, 0, _RANK))


def plan(ctx, b):
    need_values(ctx, 1)
    x, y = ctx.inputs[0], ctx.outputs[0]
    if len(x.shape) > _RANK:
        raise Unplannable("rank > 6")
    pad = _RANK - len(x.shape)
    x_shape = [1] * pad + [int(d) for d in x.shape]
    y_shape = [1] * pad + [int(d) for d in y.shape]
    b.launch("tile", "tile", {"dt": copy_code(y)}, (numel(y_shape),),
             [In(0), Out(0), *[i32(d) for d in y_shape[1:]], *[i32(d) for d in x_shape],
              *[i32(s) for s in strides_of(x_shape)]])


register_kernel("TILE", family="tile", support=support, plan=plan, host_inputs=[1])
