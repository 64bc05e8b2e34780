"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL, LOGICAL_AND, LOGICAL_OR,
LOGICAL_NOT on OpenCL (template comparison.cl.mako).

Comparisons take every type of the HAL signatures (bool8, float32, float16, int32, quant8 asymm
and signed) with 4-D broadcasting. Quantized inputs may have different scales and zero points:
like the reference, the kernel compares them rescaled in integers as TFLite does. Bool8 inputs
count any non-zero byte as true; outputs are 0 / 1.
"""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    FLOAT_QUANT8_INT32,
    OT,
    QUANT8,
    bcast_args,
    code,
    first,
    i32,
    max_rank,
    numel,
    types_in,
)
from hal.operations.comparison import comparison_multipliers

_COMPARE = ("EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL")


def support_binary(ctx):
    return first(types_in(ctx, 0, FLOAT_QUANT8_INT32 | {OT.TENSOR_BOOL8}),
                 max_rank(ctx, 0, 4), max_rank(ctx, 1, 4))


def plan_binary(ctx, b):
    a, bb, y = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    bcast, shape_args = bcast_args(a.shape, bb.shape, y.shape)
    quant = a.type in QUANT8
    extra = []
    if quant:  # the reference's (TFLite's) integer rescaling
        (ma, sa), (mb, sb) = comparison_multipliers(a, bb)
        extra = [i32(v) for v in (a.zero_point, ma, sa, bb.zero_point, mb, sb)]
    b.launch("comparison", "binary", {"op": ctx.name, "dt": code(a), "bcast": bcast,
                                      "quant": quant},
             (numel(y.shape),), [In(0), In(1), Out(0), *shape_args, *extra])


def support_not(ctx):
    return None  # the signature allows TENSOR_BOOL8 only, of any rank


def plan_not(ctx, b):
    b.launch("comparison", "logical_not", {}, (numel(ctx.outputs[0].shape),), [In(0), Out(0)])


for _op in (*_COMPARE, "LOGICAL_AND", "LOGICAL_OR"):
    register_kernel(_op, family="comparison", support=support_binary, plan=plan_binary)
register_kernel("LOGICAL_NOT", family="comparison", support=support_not, plan=plan_not)
