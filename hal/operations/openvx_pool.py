"""org.clnn.openvx POOLING and ROI_POOLING (docs/openvx-extension.md): OpenVX pooling, whose
zero padding takes part in the max and the average and whose output size may round up, and
ROI max pooling of (N, R, 4) rectangles. NCHW; the arithmetic is in _openvx_misc_math.py.

| input | POOLING                               | ROI_POOLING                         |
|-------|---------------------------------------|-------------------------------------|
| 0     | D input (N, C, H, W)                  | idem                                |
| 1     | INT32 pooling type (0 max, 1 avg)     | D rectangles (N, R, 4): x1 y1 x2 y2 |
| 2, 3  | INT32 pooling size x, y               | INT32 pool type (0 max only), pooled width |
| 4, 5  | INT32 padding x, y                    | 4: INT32 pooled height              |
| 6, 7  | INT32 stride x, y                     |                                     |
| 8     | INT32 size rounding (floor / ceiling) |                                     |
"""

from __future__ import annotations

from hal.operations import _openvx_misc_math as m
from hal.operations._openvx_ext import (
    F32,
    INT,
    check_at_least,
    check_data,
    check_enum,
    check_exact,
    data,
    ints,
    op,
    out_args,
    position,
    raw_bits,
    signatures,
)
from hal.operations._openvx_fixed import POOL_MAX
from hal.operations.context import OperationContext
from hal.operations.registry import register

POOLING, ROI_POOLING = op("POOLING"), op("ROI_POOLING")


def pool_params(ctx):
    return {"pool_type": int(ctx.scalar(1)), "size": tuple(ints(ctx, (3, 2))),
            "pad": tuple(ints(ctx, (5, 4))), "stride": tuple(ints(ctx, (7, 6))),
            "rounding": int(ctx.scalar(8))}


def validate_pool(ctx: OperationContext):
    check_data(ctx, {0: (4,)})
    check_enum(ctx, 1, 2, "pooling type")
    check_at_least(ctx, (2, 3, 6, 7), 1, "pooling size or stride")
    check_at_least(ctx, (4, 5), 0, "padding")
    check_enum(ctx, 8, 2, "down-scale size rounding")
    if all(d > 0 for d in ctx.input_shape(0)):
        prepare_pool(ctx)


def prepare_pool(ctx: OperationContext):
    p = pool_params(ctx)
    shape = m.pool_shape(ctx.input_shape(0), p["size"], p["pad"], p["stride"], p["rounding"])
    ctx.require(shape[2] >= 1 and shape[3] >= 1,
                f"the output would be {shape[2]} x {shape[3]}: the pooling window is larger "
                "than the padded input")
    x = ctx.inputs[0]
    if x.type != F32:
        count = p["size"][0] * p["size"][1]
        check_exact(ctx, raw_bits(x) + count.bit_length(), position(x),
                    1 if p["pool_type"] == POOL_MAX else count)
    return [shape]


def execute_pool(ctx: OperationContext):
    x, qx = data(ctx, 0)
    return [m.pooling(x, qx, **out_args(ctx), **pool_params(ctx),
                      out_dtype=ctx.outputs[0].dtype)]


def validate_roi(ctx: OperationContext):
    check_data(ctx, {0: (4,), 1: (3,)})
    ctx.require(ctx.scalar(2) == POOL_MAX,
                f"input 2 (pool type) is {ctx.scalar(2)}; ROI pooling supports only max (0)")
    check_at_least(ctx, (3, 4), 1, "pooled size")
    x, r = ctx.input_shape(0), ctx.input_shape(1)
    if x and r and x[0] and r[0]:
        ctx.require(x[0] == r[0], f"the rectangles have {r[0]} batches but the input {x[0]}")
    if r and r[-1]:
        ctx.require(r[-1] == 4, f"input 1 has {r[-1]} coordinates per rectangle; it needs 4")
    if ctx.inputs[0].type != F32:
        check_exact(ctx, raw_bits(ctx.inputs[0]), position(ctx.inputs[0]))


def prepare_roi(ctx: OperationContext):
    x, r = ctx.input_shape(0), ctx.input_shape(1)
    pw, ph = ints(ctx, (3, 4))
    return [(x[0] * r[1], x[1], ph, pw)]


def execute_roi(ctx: OperationContext):
    (x, qx), (rois, qr) = data(ctx, 0), data(ctx, 1)
    pw, ph = ints(ctx, (3, 4))
    return [m.roi_pooling(x, qx, rois, qr, **out_args(ctx), pooled=(ph, pw),
                          out_dtype=ctx.outputs[0].dtype)]


register(POOLING, execute_pool, signatures=signatures(1, [INT] * 8), validate=validate_pool,
         prepare=prepare_pool, constant_inputs=range(1, 9), family="openvx_pool")
register(ROI_POOLING, execute_roi, signatures=signatures(2, [INT] * 3), validate=validate_roi,
         prepare=prepare_roi, constant_inputs=range(2, 5), family="openvx_pool")
