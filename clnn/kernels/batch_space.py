"""BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND on OpenCL, NHWC and NCHW (a strided copy,
strided_copy.cl.mako; batch_space.cl.mako). Every type of the HAL signatures, copied bit for
bit; block sizes, paddings and layout are read on the host at planning.

BATCH_TO_SPACE_ND is one 6-D strided copy; SPACE_TO_BATCH_ND reads with padding (the zero point
for quantized tensors, as the reference) in its own kernel.
"""

from __future__ import annotations

from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    ANY_STORED,
    QUANT8,
    copy_code,
    i32,
    launch_strided_copy,
    numel,
    strides_of,
    types_in,
)

_LAYOUT_INPUT = {"BATCH_TO_SPACE_ND": 2, "SPACE_TO_BATCH_ND": 3}


def support(ctx):
    return types_in(ctx, 0, ANY_STORED)


def _nhwc_strides(shape, nchw):
    """(dims, strides) of a 4-D tensor in logical NHWC order."""
    st = strides_of(shape)
    if nchw:
        n, c, h, w = shape
        return (n, h, w, c), (st[0], st[2], st[3], st[1])
    return tuple(shape), tuple(st)


def plan(ctx, b):
    need_values(ctx, 1, 2, 3)
    x, y = ctx.inputs[0], ctx.outputs[0]
    nchw = bool(ctx.scalar(_LAYOUT_INPUT[ctx.name], False))
    bh, bw = (int(v) for v in ctx.input(1).reshape(-1))
    (n, h, w, c), _ = _nhwc_strides(x.shape, nchw)
    if ctx.name == "BATCH_TO_SPACE_ND":
        no = n // (bh * bw)
        blk = no * h * w * c  # elements of one (bh, bw) block of input batches
        if nchw:  # iterate over the output [no, c, h, bh, w, bw]
            shape = [no, c, h, bh, w, bw]
            xs = [c * h * w, h * w, w, bw * blk, 1, blk]
        else:  # iterate over the output [no, h, bh, w, bw, c]
            shape = [no, h, bh, w, bw, c]
            xs = [h * w * c, w * c, bw * blk, c, blk, 1]
        launch_strided_copy(b, In(0), Out(0), shape, xs, strides_of(shape))
        return
    (pt, _), (pl, _) = ctx.input(2).reshape(2, 2).tolist()
    (on, oh, ow, oc), ys = _nhwc_strides(y.shape, nchw)
    _, xs = _nhwc_strides(x.shape, nchw)
    pad = x.zero_point if x.type in QUANT8 else 0
    b.launch("batch_space", "space_to_batch", {"dt": copy_code(y)}, (numel(y.shape),),
             [In(0), Out(0), *[i32(v) for v in (oh, ow, oc, n, h, w, bh, bw, pt, pl)],
              *[i32(s) for s in xs], *[i32(s) for s in ys], i32(pad)])


for _op in _LAYOUT_INPUT:
    register_kernel(_op, family="batch_space", support=support, plan=plan,
                    host_inputs=[1, 2, 3])
