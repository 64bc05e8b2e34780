"""PAD, PAD_V2 on OpenCL (pad.cl.mako), rank <= 4, every type of the signatures. Paddings and
the pad value must be constants; the pad value is passed as its bit pattern."""

from __future__ import annotations

import numpy as np

from clnn.kernels.registry import In, Out, Unplannable, register_kernel
from clnn.kernels.support import (
    ANY_STORED,
    copy_code,
    first,
    i32,
    max_rank,
    numel,
    row_local_size,
    strides_of,
    types_in,
)
from hal.operations.pad import pad_value, paddings_of

_BITS = {1: np.uint8, 2: np.uint16, 4: np.int32}


def support(ctx):
    return first(types_in(ctx, 0, ANY_STORED), max_rank(ctx, 0, 4))


def plan(ctx, b):
    x, y = ctx.inputs[0], ctx.outputs[0]
    rank = len(x.shape)
    if rank > 4:
        raise Unplannable("rank > 4")
    pads = paddings_of(ctx, rank)
    value = np.asarray(pad_value(ctx)).astype(x.dtype)
    bits = _BITS[x.dtype.itemsize]
    value = np.asarray(value).reshape(1).view(bits)[0] if x.dtype.itemsize != 4 else \
        np.asarray(value).reshape(1).view(np.int32)[0]
    lead = 4 - rank
    out = [1] * lead + list(y.shape)
    ins = [1] * lead + list(x.shape)
    before = [0] * lead + [p[0] for p in pads]
    st = [0] * lead + strides_of(x.shape)
    rows = numel(out[:3])
    b.launch("pad", "pad", {"dt": copy_code(x)}, (out[3], rows),
             [In(0), Out(0), *[i32(d) for d in out[1:]], *[i32(d) for d in ins],
              *[i32(p) for p in before], *[i32(s) for s in st], bits(value)],
             local_size=row_local_size(out[3], rows))


for _op in ("PAD", "PAD_V2"):
    register_kernel(_op, family="pad", support=support, plan=plan, host_inputs=[1, 2])
