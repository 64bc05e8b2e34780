"""ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT, FLOOR on OpenCL (template unary.cl.mako).

Every type of the HAL signatures runs: float32 (and relaxed), float16 (stored as half, computed
in float32 like the reference) and int32 for ABS / NEG (wrapping at INT32_MIN as in C). Any
rank: the kernels are flat element-wise loops.
"""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import FLOAT, OT, code, numel, types_in

_INT_OPS = ("ABS", "NEG")


def support(ctx):
    allowed = FLOAT | {OT.TENSOR_INT32} if ctx.name in _INT_OPS else FLOAT
    return types_in(ctx, 0, allowed)


def plan(ctx, b):
    y = ctx.outputs[0]
    b.launch("unary", "unary", {"op": ctx.name, "dt": code(y)}, (numel(y.shape),),
             [In(0), Out(0)])


for _op in ("ABS", "EXP", "LOG", "NEG", "RSQRT", "SIN", "SQRT", "FLOOR"):
    register_kernel(_op, family="unary", support=support, plan=plan)
