"""FULLY_CONNECTED: output = activation(input * weights' + bias).

| input | operand                                                                      |
|-------|------------------------------------------------------------------------------|
| 0     | input, rank 2..4, flattened to [batch_size, input_size]                      |
| 1     | weights [num_units, input_size]                                              |
| 2     | bias [num_units]: same float type, or TENSOR_INT32 (scale in_scale * w_scale) |
| 3     | INT32 fused activation                                                       |
| out 0 | [batch_size, num_units]                                                      |

Types: FLOAT32 and QUANT8_ASYMM (1.0), FLOAT16 (1.2), QUANT8_ASYMM_SIGNED (1.3); input,
weights and output share the type. batch_size = number of input elements / input_size
(zero batch_size allowed since 1.2). Quantized: the reference integer pipeline (conv2d.finish).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_fused_activation
from hal.operations.context import OperationContext
from hal.operations.conv2d import (
    F16,
    F32,
    I32,
    INT,
    QA,
    QS,
    UPWARD,
    centered,
    check_bias_scale,
    finish,
    is_quant,
    output_multipliers,
)
from hal.operations.registry import register, sig

_CONFIGS = [("V1_0", F32, F32), ("V1_0", QA, I32), ("V1_2", F16, F16), ("V1_3", QS, I32)]
SIGNATURES = [sig(v, [t, t, b, INT], [t]) for v, t, b in _CONFIGS]


def validate(ctx: OperationContext):
    inp, w, b = ctx.inputs[:3]
    ctx.require(inp.rank == 0 or 2 <= inp.rank <= 4,
                f"input 0 must have rank 2 to 4, got rank {inp.rank}")
    ctx.require(w.rank in (0, 2), f"input 1 (weights) must have rank 2, got rank {w.rank}")
    ctx.require(b.rank in (0, 1), f"input 2 (bias) must have rank 1, got rank {b.rank}")
    check_fused_activation(ctx, 3)
    if w.rank == 2 and b.rank == 1 and 0 not in (w.shape[0], b.shape[0]):
        ctx.require(w.shape[0] == b.shape[0], f"input 2 (bias) has {b.shape[0]} elements, "
                    f"the weights have {w.shape[0]} units")
    if w.rank == 2 and inp.rank >= 2 and w.shape[1] and 0 not in inp.shape:
        total = int(np.prod(inp.shape))
        ctx.require(total % w.shape[1] == 0, f"input 0 has {total} elements, not a multiple "
                    f"of input_size {w.shape[1]} (input 1 dimension 1)")
    if is_quant(inp.type):
        check_bias_scale(ctx, inp, w, b, "weights")


def prepare(ctx: OperationContext):
    shape = ctx.input_shape(0)
    units, size = ctx.input_shape(1)
    ctx.require(len(shape) >= 2, f"input 0 must have rank 2 to 4, got rank {len(shape)}")
    ctx.require(ctx.input_shape(2) == (units,), f"input 2 (bias) must have shape [{units}]")
    total = int(np.prod(shape))
    if size == 0:
        ctx.require(total == 0, "input 1 (weights) has input_size 0")
        return [(shape[0], units)]
    ctx.require(total % size == 0, f"input 0 has {total} elements, not a multiple of "
                f"input_size {size}")
    return [(total // size, units)]


def execute(ctx: OperationContext):
    out_shape = ctx.outputs[0].shape
    inp, w, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    units, size = w.shape
    x = centered(inp, ctx.input(0)).reshape(out_shape[0], size)
    acc = x @ centered(w, ctx.input(1)).T
    mults = output_multipliers(inp, w, out, units) if is_quant(inp.type) else None
    return [finish(acc, ctx.input(2), ctx.scalar(3), out, mults, UPWARD)]


register("FULLY_CONNECTED", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="fully_connected")
