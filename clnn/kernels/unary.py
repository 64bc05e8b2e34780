"""ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT, FLOOR on OpenCL (unary.cl.mako): float32, float16
(computed in float32) and int32 (ABS, NEG, wrapping like the reference)."""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import FLOAT, code, numel, types_in
from hal.types import OperandType


def support(ctx):
    return types_in(ctx, 0, FLOAT | {OperandType.TENSOR_INT32})


def plan(ctx, b):
    y = ctx.outputs[0]
    b.launch("unary", "unary", {"op": ctx.name, "dt": code(y)}, (numel(y.shape),),
             [In(0), Out(0)])


for _op in ("ABS", "EXP", "LOG", "NEG", "RSQRT", "SIN", "SQRT", "FLOOR"):
    register_kernel(_op, family="unary", support=support, plan=plan)
