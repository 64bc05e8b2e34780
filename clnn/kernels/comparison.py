"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL, LOGICAL_AND, LOGICAL_OR,
LOGICAL_NOT on OpenCL (comparison.cl.mako): every type of the signatures, 4-D broadcasting;
quantized inputs are compared by their real values like the reference."""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    FLOAT_QUANT8_INT32,
    bcast_args,
    code,
    f32,
    first,
    i32,
    max_rank,
    numel,
    types_in,
)
from hal.types import OperandType

_TYPES = FLOAT_QUANT8_INT32 | {OperandType.TENSOR_BOOL8}


def support(ctx):
    if ctx.name == "LOGICAL_NOT":
        return types_in(ctx, 0, _TYPES)
    return first(types_in(ctx, 0, _TYPES), max_rank(ctx, 0, 4), max_rank(ctx, 1, 4))


def plan(ctx, b):
    y = ctx.outputs[0]
    if ctx.name == "LOGICAL_NOT":
        b.launch("comparison", "logical_not", {}, (numel(y.shape),), [In(0), Out(0)])
        return
    a, bb = ctx.inputs[0], ctx.inputs[1]
    bcast, shape_args = bcast_args(a.shape, bb.shape, y.shape)
    b.launch("comparison", "compare", {"op": ctx.name, "dt": code(a), "bcast": bcast},
             (numel(y.shape),),
             [In(0), In(1), Out(0), *shape_args, i32(a.zero_point), f32(a.scale),
              i32(bb.zero_point), f32(bb.scale)])


for _op in ("EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL",
            "LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT"):
    register_kernel(_op, family="comparison", support=support, plan=plan)
