"""PAD, PAD_V2: pad a tensor with a constant.

| input | meaning                                                                    |
|-------|----------------------------------------------------------------------------|
| 0     | n-D tensor, rank <= 4                                                      |
| 1     | TENSOR_INT32 [n, 2]: (before, after) padding per dimension, >= 0           |
| 2     | PAD_V2 only: pad value, FLOAT32 / FLOAT16 (float), INT32 (quantized value) |

Output dimension i = before[i] + input dimension i + after[i]; same type and quantization as
input 0. PAD pads with the logical zero (the zero point for quantized tensors).
Types: PAD TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM (1.1), TENSOR_FLOAT16 (1.2); PAD_V2
TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM (1.2); TENSOR_QUANT8_ASYMM_SIGNED (1.3).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import QUANT_RANGE, check_rank, check_same_quant, qrange
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_PAD_TYPES = [("V1_1", "TENSOR_FLOAT32"), ("V1_1", "TENSOR_QUANT8_ASYMM"),
              ("V1_2", "TENSOR_FLOAT16"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
PAD_SIGS = [sig(v, [t, "TENSOR_INT32"], [t]) for v, t in _PAD_TYPES]
PAD_V2_SIGS = [sig(v, [t, "TENSOR_INT32", s], [t]) for v, t, s in
               [("V1_2", "TENSOR_FLOAT32", "FLOAT32"), ("V1_2", "TENSOR_FLOAT16", "FLOAT16"),
                ("V1_2", "TENSOR_QUANT8_ASYMM", "INT32"),
                ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED", "INT32")]]


def paddings_of(ctx: OperationContext, rank: int):
    pads = ctx.input(1)
    ctx.require(pads.size == 2 * rank, f"input 1 (paddings) must have shape [{rank}, 2], got "
                                       f"{list(pads.shape)}")
    pads = pads.reshape(rank, 2)
    ctx.require(bool(np.all(pads >= 0)),
                f"input 1 (paddings) must be >= 0, got {pads.tolist()}")
    return [tuple(int(v) for v in row) for row in pads]


def pad_value(ctx: OperationContext):
    info = ctx.inputs[0]
    if ctx.name == "PAD":
        return info.zero_point if info.type in QUANT_RANGE else 0
    v = ctx.scalar(2)
    if info.type in QUANT_RANGE and v is not None:
        lo, hi = qrange(info.type)
        ctx.require(lo <= v <= hi, f"input 2 (pad value) must be in [{lo}, {hi}] for "
                                   f"{info.type.name}, got {v}")
    return v


def validate(ctx: OperationContext):
    check_rank(ctx, 0, (1, 4))
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")
    s = ctx.input_shape(1)
    rank = ctx.inputs[0].rank
    ctx.require(len(s) in (0, 2), f"input 1 (paddings) must be 2-D, got rank {len(s)}")
    if len(s) == 2:
        ctx.require(s[1] in (0, 2) and (not rank or s[0] in (0, rank)),
                    f"input 1 (paddings) must have shape [{rank or 'rank'}, 2], got {list(s)}")
    if rank and ctx.value_known(1):
        paddings_of(ctx, rank)
    pad_value(ctx)


def prepare(ctx: OperationContext):
    shape = ctx.input_shape(0)
    return [tuple(a + d + b for d, (a, b) in zip(shape, paddings_of(ctx, len(shape))))]


def execute(ctx: OperationContext):
    x = ctx.input(0)
    pads = paddings_of(ctx, x.ndim)
    value = pad_value(ctx)
    return [np.pad(x, pads, constant_values=np.asarray(value).astype(x.dtype))]


register("PAD", execute, signatures=PAD_SIGS, validate=validate, prepare=prepare, family="pad")
register("PAD_V2", execute, signatures=PAD_V2_SIGS, validate=validate, prepare=prepare,
         family="pad")
