"""BATCH_MATMUL: multiplies the slices of two tensors batch by batch (NNAPI feature level 6,
carried here as an extension of HAL 1.3).

| input | operand                                                                   |
|-------|---------------------------------------------------------------------------|
| 0     | x, rank 2..4, shape [..., r_x, c_x]                                       |
| 1     | y, rank 2..4, shape [..., r_y, c_y], same type as x                       |
| 2     | optional BOOL adj_x (default false): transpose the last two dims of x     |
| 3     | optional BOOL adj_y (default false): transpose the last two dims of y     |
| out 0 | [..., r_o, c_o]: r_o = c_x if adj_x else r_x, c_o = r_y if adj_y else c_y |

Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32, TENSOR_QUANT8_ASYMM_SIGNED. The batch
dimensions broadcast (NumPy rules). Quantized: acc = sum((x - x_zp) * (y - y_zp)) in integers,
MultiplyByQuantizedMultiplier by x_scale * y_scale / out_scale, plus the output zero point,
saturated. INT32 products wrap as int32 arithmetic does.
"""

from __future__ import annotations

import numpy as np

from hal.operations.context import OperationContext
from hal.operations.conv2d import BOOL, F16, F32, I32, QS, finish, output_multipliers
from hal.operations.registry import register, sig

_VERSION = "AIDL_V2"
SIGNATURES = [sig(_VERSION, [t, t, *flags], [t], optional=range(2, 2 + len(flags)))
              for t in (F32, F16, I32, QS) for flags in ([], [BOOL], [BOOL, BOOL])]


def adjoint_flags(ctx):
    return bool(ctx.scalar(2, False)), bool(ctx.scalar(3, False))


def _out_shape(ctx, sx, sy, adj_x, adj_y):
    """Output shape, with 0 for what is unknown at validation."""
    rx, cx = (sx[-1], sx[-2]) if adj_x else (sx[-2], sx[-1])
    ry, cy = (sy[-1], sy[-2]) if adj_y else (sy[-2], sy[-1])
    if cx and ry:
        ctx.require(cx == ry, f"input 0 has {cx} columns (after adj_x) but input 1 has {ry} "
                    "rows (after adj_y)")
    bx, by = sx[:-2], sy[:-2]
    n = max(len(bx), len(by))
    bx, by = (1,) * (n - len(bx)) + tuple(bx), (1,) * (n - len(by)) + tuple(by)
    batch = []
    for a, b in zip(bx, by):
        if 0 in (a, b):
            batch.append(0 if 1 in (a, b) or a == b else max(a, b))
            continue
        ctx.require(a == b or 1 in (a, b), f"batch dimensions {list(sx[:-2])} and "
                    f"{list(sy[:-2])} of inputs 0 and 1 cannot be broadcast")
        batch.append(max(a, b))
    return tuple(batch) + (rx, cy)


def validate(ctx: OperationContext):
    for i in (0, 1):
        r = ctx.inputs[i].rank
        ctx.require(r == 0 or 2 <= r <= 4, f"input {i} must have rank 2 to 4, got rank {r}")
    flags_known = all(ctx.value_known(i) or not ctx.has_input(i) for i in (2, 3))
    if ctx.inputs[0].rank and ctx.inputs[1].rank and flags_known:
        _out_shape(ctx, ctx.input_shape(0), ctx.input_shape(1), *adjoint_flags(ctx))


def prepare(ctx: OperationContext):
    for i in (0, 1):
        r = len(ctx.input_shape(i))
        ctx.require(2 <= r <= 4, f"input {i} must have rank 2 to 4, got rank {r}")
    return [_out_shape(ctx, ctx.input_shape(0), ctx.input_shape(1), *adjoint_flags(ctx))]


def execute(ctx: OperationContext):
    shape = ctx.outputs[0].shape
    adj_x, adj_y = adjoint_flags(ctx)
    xi, yi, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    x, y = ctx.input(0), ctx.input(1)
    if adj_x:
        x = np.swapaxes(x, -1, -2)
    if adj_y:
        y = np.swapaxes(y, -1, -2)
    if xi.type == I32:
        return [np.matmul(x.astype(np.int64), y.astype(np.int64)).astype(np.int32)]
    if xi.type == QS:
        acc = np.matmul(x.astype(np.int64) - xi.zero_point, y.astype(np.int64) - yi.zero_point)
        res = finish(acc, 0, 0, out, output_multipliers(xi, yi, out, 1))
    else:
        res = np.matmul(x.astype(np.float64), y.astype(np.float64)).astype(out.dtype)
    return [res.reshape(shape)]


register("BATCH_MATMUL", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="batch_matmul")
