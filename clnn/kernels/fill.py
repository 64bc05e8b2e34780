"""FILL and RANK on OpenCL (template fill.cl.mako). FILL takes every type of the HAL
signatures (float32, float16, int32); its shape is read on the host at planning, its value is
a kernel argument when known there, else read from the device (RANK feeding FILL in one
partition). RANK of any tensor type writes the rank, known at planning, into its INT32 scalar
output."""

from __future__ import annotations

from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import code, f32, i32, numel


def support(ctx):
    return None  # every signature type runs


def plan_fill(ctx, b):
    need_values(ctx, 0)
    y = ctx.outputs[0]
    value = ctx.scalar(1)
    if value is None:  # computed on the device by an earlier operation of the partition
        b.launch("fill", "fill_from", {"dt": code(y)}, (numel(y.shape),), [In(1), Out(0)])
        return
    v = i32(value) if code(y) == "i32" else f32(value)
    b.launch("fill", "fill", {"dt": code(y)}, (numel(y.shape),), [Out(0), v])


def plan_rank(ctx, b):
    b.launch("fill", "fill", {"dt": "i32"}, (1,), [Out(0), i32(len(ctx.inputs[0].shape))])


register_kernel("FILL", family="fill", support=support, plan=plan_fill, host_inputs=[0])
register_kernel("RANK", family="fill", support=support, plan=plan_rank)
