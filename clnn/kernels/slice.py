"""SLICE, STRIDED_SLICE on OpenCL: a strided copy (strided_copy.cl.mako). Begin, size, end, strides
and masks must be constants; begin/stride per dimension come from the HAL's own plan."""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    ANY_STORED,
    launch_strided_copy,
    strides_of,
    types_in,
)
from hal.operations.slice import slice_box, strided_plan


def support(ctx):
    return types_in(ctx, 0, ANY_STORED)


def plan(ctx, b):
    st = strides_of(ctx.inputs[0].shape)
    if ctx.name == "SLICE":
        box = [(begin, 1, size) for begin, size in slice_box(ctx)]
    else:
        box = [(begin, stride, size) for begin, stride, size, _ in strided_plan(ctx)]
    shape = [size for _, _, size in box]
    base = sum(begin * s for (begin, _, _), s in zip(box, st))
    launch_strided_copy(b, In(0), Out(0), shape,
                        [stride * s for (_, stride, _), s in zip(box, st)], strides_of(shape),
                        xb=base)


for _op in ("SLICE", "STRIDED_SLICE"):
    register_kernel(_op, family="slice", support=support, plan=plan,
                    host_inputs=[1, 2, 3, 4, 5, 6])
