"""RESHAPE, SQUEEZE, EXPAND_DIMS on OpenCL: a contiguous copy (strided_copy.cl.mako).

Every stored type runs; the target shape / axes must be constants (the output shape must be
known before the execution to plan buffers).
"""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    ANY_STORED,
    launch_strided_copy,
    numel,
    types_in,
)


def support(ctx):
    return types_in(ctx, 0, ANY_STORED)


def plan(ctx, b):
    n = numel(ctx.outputs[0].shape)
    launch_strided_copy(b, In(0), Out(0), [n], [1], [1])


for _op in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS"):
    register_kernel(_op, family="reshape", support=support, plan=plan, host_inputs=[1])
