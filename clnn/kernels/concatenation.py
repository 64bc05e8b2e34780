"""CONCATENATION on OpenCL (strided_copy.cl.mako): one strided copy per input into its slab
of the output; quantized inputs with another scale/zero point than the output are requantized
like the reference (ConcatenationWithScaling). The axis must be a constant. An input the
memory pass placed in its slab (clnn.passes.memory.Slot: its producer wrote it there, the
fire and inception modules' branches) is not copied."""

from __future__ import annotations

import numpy as np

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    ANY_STORED,
    QUANT8,
    code,
    f32,
    i32,
    launch_strided_copy,
    numel,
    strides_of,
    types_in,
)
from hal.operations.common import qrange


def support(ctx):
    return types_in(ctx, 0, ANY_STORED)


def plan(ctx, b):
    n = ctx.num_inputs() - 1
    y = ctx.outputs[0]
    axis = int(ctx.scalar(n)) % len(y.shape)
    ys = strides_of(y.shape)
    offset = 0
    for k in range(n):
        x = ctx.inputs[k]
        if numel(x.shape) == 0:
            continue
        base = offset * ys[axis]
        offset += x.shape[axis]
        if b.in_place(k):
            continue
        if y.type in QUANT8 and (x.scale != y.scale or x.zero_point != y.zero_point):
            scale = np.float32(x.scale) * (np.float32(1.0) / np.float32(y.scale))
            bias = np.float32(-x.zero_point) * scale
            lo, hi = qrange(y.type)
            launch_strided_copy(b, In(k), Out(0), x.shape,
                                strides_of(x.shape), ys, yb=base, name="requant",
                                params={"dt": code(y)},
                                extra=[f32(scale), f32(bias), i32(y.zero_point), i32(lo),
                                       i32(hi)])
        else:
            launch_strided_copy(b, In(k), Out(0), x.shape,
                                strides_of(x.shape), ys, yb=base)


register_kernel("CONCATENATION", family="concatenation", support=support, plan=plan,
                host_inputs=[-1])
