"""DEPTH_TO_SPACE, SPACE_TO_DEPTH on OpenCL (NHWC and NCHW): one 6-D strided copy
(strided_copy.cl.mako). Block size and layout must be constants."""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    ANY_STORED,
    launch_strided_copy,
    strides_of,
    types_in,
)


def support(ctx):
    return types_in(ctx, 0, ANY_STORED)


def plan(ctx, b):
    bs = int(ctx.scalar(1))
    nchw = bool(ctx.scalar(2, False))
    x_shape = ctx.inputs[0].shape
    x_st = strides_of(x_shape)
    if ctx.name == "DEPTH_TO_SPACE":
        # iterate over the output in its memory order; read the input with 6-D strides
        if nchw:
            n, c, h, w = x_shape
            co = c // (bs * bs)
            shape = [n, co, h, bs, w, bs]
            xs = [x_st[0], h * w, w, bs * co * h * w, 1, co * h * w]
        else:
            n, h, w, c = x_shape
            co = c // (bs * bs)
            shape = [n, h, bs, w, bs, co]
            xs = [h * w * c, w * c, bs * co, c, co, 1]
        launch_strided_copy(b, In(0), Out(0), shape, xs, strides_of(shape))
        return
    # SPACE_TO_DEPTH: iterate over the input in its memory order; write with 6-D strides
    if nchw:
        n, c, h, w = x_shape
        ho, wo = h // bs, w // bs
        shape = [n, c, ho, bs, wo, bs]
        cs = ho * wo
        ys = [c * bs * bs * cs, cs, wo, bs * c * cs, 1, c * cs]
    else:
        n, h, w, c = x_shape
        ho, wo, co = h // bs, w // bs, c * bs * bs
        shape = [n, ho, bs, wo, bs, c]
        ys = [ho * wo * co, wo * co, bs * c, co, c, 1]
    launch_strided_copy(b, In(0), Out(0), shape, strides_of(shape), ys)


for _op in ("DEPTH_TO_SPACE", "SPACE_TO_DEPTH"):
    register_kernel(_op, family="depth_space", support=support, plan=plan, host_inputs=[1, 2])
