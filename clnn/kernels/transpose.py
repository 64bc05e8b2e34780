"""TRANSPOSE on OpenCL: a strided copy (strided_copy.cl.mako). The permutation must be a
constant (or omitted)."""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    ANY_STORED,
    launch_strided_copy,
    strides_of,
    types_in,
)
from hal.operations.transpose import transpose_perm


def support(ctx):
    return types_in(ctx, 0, ANY_STORED)


def plan(ctx, b):
    shape = ctx.inputs[0].shape
    perm = transpose_perm(ctx, len(shape))
    st = strides_of(shape)
    out = ctx.outputs[0].shape
    launch_strided_copy(b, In(0), Out(0), out, [st[p] for p in perm],
                        strides_of(out))


register_kernel("TRANSPOSE", family="transpose", support=support, plan=plan, host_inputs=[1])
