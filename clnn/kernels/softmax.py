"""SOFTMAX, LOG_SOFTMAX on OpenCL (softmax.cl.mako), any axis; float32, float16 and quant8
asymm/signed (SOFTMAX). Beta and axis are read on the host when the partition is planned."""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import FLOAT_QUANT8, code, f32, i32, numel, types_in
from hal.operations.common import qrange
from hal.operations.softmax import softmax_axis


def support(ctx):
    return types_in(ctx, 0, FLOAT_QUANT8)


def plan(ctx, b):
    x, y = ctx.inputs[0], ctx.outputs[0]
    shape = x.shape
    axis = softmax_axis(ctx, len(shape))
    length = shape[axis]
    inner = numel(shape[axis + 1:])
    rows = numel(shape) // max(length, 1)
    quant = y.scale > 0
    lo, hi = qrange(y.type) if quant else (0, 0)
    b.launch("softmax", "softmax", {"op": ctx.name, "dt": code(y)}, (rows,),
             [In(0), Out(0), i32(length), i32(max(inner, 1)), f32(ctx.scalar(1)),
              f32(x.scale), i32(y.zero_point), i32(lo), i32(hi)])


for _op in ("SOFTMAX", "LOG_SOFTMAX"):
    register_kernel(_op, family="softmax", support=support, plan=plan, host_inputs=[1, 2])
