"""SPLIT on OpenCL: one strided copy per output (strided_copy.cl.mako). Every type of the
HAL signatures, any rank; axis and num_splits are read on the host at planning."""

from __future__ import annotations

from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import ANY_STORED, launch_strided_copy, numel, types_in


def support(ctx):
    return types_in(ctx, 0, ANY_STORED)


def plan(ctx, b):
    need_values(ctx, 1, 2)
    shape = ctx.inputs[0].shape
    axis = int(ctx.scalar(1)) % len(shape)
    num = len(ctx.outputs)
    outer, inner = numel(shape[:axis]), numel(shape[axis + 1:])
    part = int(shape[axis]) // num
    for k in range(num):
        launch_strided_copy(b, In(0), Out(k), [outer, part, inner],
                            [int(shape[axis]) * inner, inner, 1], [part * inner, inner, 1],
                            xb=k * part * inner)


register_kernel("SPLIT", family="split", support=support, plan=plan, host_inputs=[1, 2])
