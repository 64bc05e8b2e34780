"""CHANNEL_SHUFFLE on OpenCL: one strided copy (strided_copy.cl.mako), or on the last axis the
transpose of each pixel's [groups, C / groups] block (transpose.cl.mako: a work-item per pixel
for up to PIXEL_GROUPS groups, else the tiled kernel). Every type
of the HAL signatures, any axis; num_groups and axis are read on the host at planning."""

from __future__ import annotations

from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import ANY_STORED, launch_strided_copy, numel, types_in
from clnn.kernels.transpose import launch_block_swap, launch_pixel_swap

#: the most groups whose last-axis shuffle runs a work-item per pixel (each output group of
#: channels gathered and stored at once); more groups take the tiled transpose of each pixel
PIXEL_GROUPS = 16


def support(ctx):
    return types_in(ctx, 0, ANY_STORED)


def plan(ctx, b):
    need_values(ctx, 1, 2)
    shape = ctx.inputs[0].shape
    groups = int(ctx.scalar(1))
    axis = int(ctx.scalar(2)) % len(shape)
    outer, c, inner = numel(shape[:axis]), int(shape[axis]), numel(shape[axis + 1:])
    size = c // groups
    if inner == 1 and 1 < groups <= PIXEL_GROUPS:  # the last axis (NHWC), few groups: a
        # work-item per pixel gathers each output group (transpose.cl.mako shuffle_pixels)
        launch_pixel_swap(b, outer, groups, size)
        return
    if inner == 1 and groups > 1:  # the last axis (NHWC): per pixel, [groups, size] -> its
        # transpose, by the tiled kernel (faster than a strided element-by-element copy:
        # benchmarks/layout_families.py)
        launch_block_swap(b, outer, groups, size)
        return
    # output channel k * groups + g reads input channel g * size + k: iterate over the output
    # as [outer, size, groups, inner]
    launch_strided_copy(b, In(0), Out(0), [outer, size, groups, inner],
                        [c * inner, inner, size * inner, 1],
                        [c * inner, groups * inner, inner, 1])


register_kernel("CHANNEL_SHUFFLE", family="channel_shuffle", support=support, plan=plan,
                host_inputs=[1, 2])
