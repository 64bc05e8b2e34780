"""RELU, RELU1, RELU6, LOGISTIC, TANH, ELU, HARD_SWISH, PRELU on OpenCL (activation.cl.mako).

Float types compute in float32 (float16 stored as half). Quantized RELU* clamp in the integer
domain; quantized LOGISTIC/TANH compute the real function of the dequantized input and round
onto the output grid (as the reference does); quantized HARD_SWISH and PRELU use the
reference's fixed-point pipelines.
"""

from __future__ import annotations

import numpy as np

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    FLOAT,
    FLOAT_QUANT8,
    bcast_args,
    code,
    f32,
    first,
    i32,
    max_rank,
    numel,
    plane_broadcast,
    qmul,
    row_broadcast,
    row_local_size,
    row_vector,
    types_in,
    vector_groups,
)
from hal.operations._activation_quant import downscale_to_int16_multiplier
from hal.operations.common import (
    CLAMP_OPERATIONS,
    activation_code,
    activation_range_float,
    activation_range_quant,
    qrange,
    quantize_multiplier,
)


def support_unary(ctx):
    return first(types_in(ctx, 0, FLOAT_QUANT8), max_rank(ctx, 0, 8))


def plan_unary(ctx, b):
    x, y = ctx.inputs[0], ctx.outputs[0]
    if ctx.name == "HARD_SWISH" and y.type not in FLOAT:
        _plan_hard_swish_quant(ctx, b)
        return
    if y.type in FLOAT:
        lo, hi = activation_range_float(activation_code(ctx.name))
        alpha = float(ctx.scalar(1)) if ctx.name == "ELU" else 0.0
        extra = [f32(lo), f32(hi), f32(alpha)]
    else:
        if ctx.name in CLAMP_OPERATIONS:
            lo, hi = activation_range_quant(CLAMP_OPERATIONS[ctx.name], y)
        else:
            lo, hi = qrange(y.type)
        extra = [i32(x.zero_point), f32(x.scale), i32(y.zero_point),
                 f32(1.0 / np.float64(np.float32(y.scale))), i32(lo), i32(hi)]
    b.launch("activation", "unary", {"op": ctx.name, "dt": code(y)}, (numel(y.shape),),
             [In(0), Out(0), *extra])


def _plan_hard_swish_quant(ctx, b):
    x, y = ctx.inputs[0], ctx.outputs[0]
    hires = np.float32(1.0 / 128.0) * np.float32(x.scale)
    rm32, r_exp = quantize_multiplier(float(hires / np.float32(3.0 / 32768.0)))
    om32, o_exp = quantize_multiplier(float(hires / np.float32(y.scale)))
    lo, hi = qrange(y.type)
    b.launch("activation", "hard_swish_quant", {"dt": code(y)}, (numel(y.shape),),
             [In(0), Out(0), i32(x.zero_point), i32(y.zero_point),
              i32(downscale_to_int16_multiplier(rm32)), i32(r_exp),
              i32(downscale_to_int16_multiplier(om32)), i32(o_exp), i32(lo), i32(hi)])


def support_prelu(ctx):
    return first(types_in(ctx, 0, FLOAT_QUANT8), max_rank(ctx, 0, 4), max_rank(ctx, 1, 4))


def plan_prelu(ctx, b):
    x, alpha, y = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    bcast, shape_args = bcast_args(x.shape, alpha.shape, y.shape)
    if y.type in FLOAT:
        extra = [i32(0)] * 9
    else:
        lo, hi = qrange(y.type)
        extra = [i32(x.zero_point), i32(alpha.zero_point), i32(y.zero_point),
                 *qmul(float(np.float32(x.scale)) / float(np.float32(y.scale))),
                 *qmul(float(np.float32(x.scale)) * float(np.float32(alpha.scale)) /
                       float(np.float32(y.scale))), i32(lo), i32(hi)]
    rows = row_broadcast(x.shape, alpha.shape, y.shape)
    vw = row_vector(rows[1], code(y)) if rows and rows[0] == "b_rows" and y.type in FLOAT else None
    if vw:  # per-channel alpha, float: vectors of a row per work-item
        gsize = (vector_groups(rows[1], vw), numel(y.shape) // rows[1])
        b.launch("activation", "prelu_vec", {"dt": code(y), "vw": vw}, gsize,
                 [In(0), In(1), Out(0), i32(rows[1])], local_size=row_local_size(*gsize),
                 flexible=True)
        return
    planes = None if rows else plane_broadcast(x.shape, alpha.shape, y.shape)
    if rows:  # per-channel alpha: a 2-D launch without divisions (common.mako flat_id)
        bcast, gsize = rows[0], (rows[1], numel(y.shape) // rows[1])
        local = row_local_size(*gsize)
    elif planes:  # per-channel alpha of NCHW: a 3-D launch without divisions
        (bcast, gsize), local = planes, None
    else:
        gsize, local = (numel(y.shape),), None
    b.launch("activation", "prelu", {"dt": code(y), "bcast": bcast}, gsize,
             [In(0), In(1), Out(0), *shape_args, *extra],
             local_size=local, flexible=planes is not None)


for _op in ("RELU", "RELU1", "RELU6", "LOGISTIC", "TANH", "ELU", "HARD_SWISH"):
    register_kernel(_op, family="activation", support=support_unary, plan=plan_unary,
                    host_inputs=[1])
register_kernel("PRELU", family="activation", support=support_prelu, plan=plan_prelu)
