"""org.clnn.onnx CONV_CHUNKED on OpenCL (onnx_conv_chunked.cl.mako): one work-item per output
element, its terms in the operation's order with OpenCL C's correctly rounded ``fma``, so the
bits equal the reference's (hal/operations/onnx_conv_chunked.py)."""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import i32, numel
from hal.operations.onnx_conv_chunked import CONV_CHUNKED, geometry


def support(ctx):
    return None  # the one signature runs


def plan(ctx, b):
    _, c, h, w = ctx.inputs[0].shape
    o, _, kh, kw = ctx.inputs[1].shape
    y = ctx.outputs[0]
    (pt, pl, _, _), (sh, sw), (dh, dw) = geometry(ctx)
    b.launch("onnx_conv_chunked", "conv_chunked", {}, (numel(y.shape),),
             [In(0), In(1), In(2), In(3), Out(0),
              *(i32(v) for v in (c, h, w, kh, kw, y.shape[2], y.shape[3], o, pt, pl, sh, sw,
                                 dh, dw))])


register_kernel(CONV_CHUNKED, family="onnx_conv_chunked", support=support, plan=plan)
