"""org.clnn.openvx SOFTMAX and LRN (docs/openvx-extension.md): softmax of fixed-point or float
tensors along one axis, and local response normalization within a map (an n x n rectangle)
or across maps, ``x / (bias + alpha / count * sum x^2)^beta``.

| input | SOFTMAX                 | LRN                                              |
|-------|-------------------------|--------------------------------------------------|
| 0     | D input, rank 1 to 4    | D input (N, C, H, W)                             |
| 1     | INT32 axis              | INT32 type (0 same map, 1 across maps)           |
| 2     |                         | INT32 normalization size (3, 5 or 7)             |
| 3..5  |                         | FLOAT32 alpha, beta, bias (> 0)                  |
"""

from __future__ import annotations

from hal.operations import _openvx_misc_math as m
from hal.operations._openvx_ext import (
    FLOAT,
    INT,
    check_data,
    check_enum,
    data,
    op,
    out_args,
    signatures,
)
from hal.operations.context import OperationContext
from hal.operations.registry import register

SOFTMAX, LRN = op("SOFTMAX"), op("LRN")


def softmax_axis(ctx) -> int:
    rank = ctx.inputs[0].rank
    return int(ctx.scalar(1)) % rank


def validate_softmax(ctx: OperationContext):
    check_data(ctx, {0: (1, 2, 3, 4)})
    rank = ctx.inputs[0].rank
    axis = ctx.scalar(1)
    if rank:
        ctx.require(-rank <= axis < rank,
                    f"input 1 (axis) is {axis}; it is out of range for input 0 of rank {rank}")


def prepare_same(ctx: OperationContext):
    return [ctx.input_shape(0)]


def execute_softmax(ctx: OperationContext):
    x, qx = data(ctx, 0)
    return [m.softmax(x, qx, **out_args(ctx), axis=softmax_axis(ctx),
                      out_dtype=ctx.outputs[0].dtype)]


def lrn_params(ctx):
    return {"norm_type": int(ctx.scalar(1)), "size": int(ctx.scalar(2)),
            "alpha": float(ctx.scalar(3)), "beta": float(ctx.scalar(4)),
            "bias": float(ctx.scalar(5))}


def validate_lrn(ctx: OperationContext):
    check_data(ctx, {0: (4,)})
    check_enum(ctx, 1, 2, "normalization type")
    n = ctx.scalar(2)
    ctx.require(n in (3, 5, 7),
                f"input 2 (normalization size) is {n}; it must be 3, 5 or 7 (odd)")
    for i, what in ((3, "alpha"), (4, "beta"), (5, "bias")):
        ctx.require(ctx.scalar(i) > 0, f"input {i} ({what}) is {ctx.scalar(i)}; it must be "
                    "positive")


def execute_lrn(ctx: OperationContext):
    x, qx = data(ctx, 0)
    return [m.lrn(x, qx, **out_args(ctx), **lrn_params(ctx), out_dtype=ctx.outputs[0].dtype)]


register(SOFTMAX, execute_softmax, signatures=signatures(1, [INT]), validate=validate_softmax,
         prepare=prepare_same, constant_inputs=[1], family="openvx_norm")
register(LRN, execute_lrn, signatures=signatures(1, [INT, INT, FLOAT, FLOAT, FLOAT]),
         validate=validate_lrn, prepare=prepare_same, constant_inputs=range(1, 6),
         family="openvx_norm")
