"""CAST on OpenCL (template cast.cl.mako): every conversion of the HAL signatures (float32,
float16, int32, quant8 asymm to any of the four) and the identity casts of 1.3 (bool8,
quant16, quant8 signed / symm), any rank.

As the reference: floats convert to integers by truncation toward zero, saturated, NaN to 0
(OpenCL convert_*_sat_rtz); integers to uint8 saturate; scale and zero point are ignored.
"""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import ANY_STORED, code, copy_code, numel, types_in


def support(ctx):
    return types_in(ctx, 0, ANY_STORED)


def plan(ctx, b):
    x, y = ctx.inputs[0], ctx.outputs[0]
    n = numel(y.shape)
    if x.type == y.type:
        dt = copy_code(y)
        b.launch("cast", "cast", {"src": dt, "dst": dt}, (n,), [In(0), Out(0)])
    else:
        b.launch("cast", "cast", {"src": code(x), "dst": code(y)}, (n,), [In(0), Out(0)])


register_kernel("CAST", family="cast", support=support, plan=plan)
