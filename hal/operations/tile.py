"""TILE: repeat a tensor along each dimension.

| input | meaning                                                |
|-------|--------------------------------------------------------|
| 0     | n-D tensor, rank >= 1                                  |
| 1     | TENSOR_INT32 [n] multiples, >= 0                       |

Output dimension i = input dimension i * multiples[i]; type and quantization of input 0.
Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32, TENSOR_QUANT8_ASYMM (1.2),
TENSOR_QUANT8_ASYMM_SIGNED (1.3).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_TYPES = [("V1_2", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16"), ("V1_2", "TENSOR_INT32"),
          ("V1_2", "TENSOR_QUANT8_ASYMM"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
SIGNATURES = [sig(v, [t, "TENSOR_INT32"], [t]) for v, t in _TYPES]


def _multiples(ctx: OperationContext, rank: int):
    m = ctx.input(1).reshape(-1).tolist()
    ctx.require(len(m) == rank, f"input 1 (multiples) must have {rank} values (the rank of "
                                f"input 0), got {len(m)}")
    ctx.require(all(v >= 0 for v in m), f"input 1 (multiples) must be >= 0, got {m}")
    return m


def validate(ctx: OperationContext):
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")
    s = ctx.input_shape(1)
    ctx.require(len(s) in (0, 1), f"input 1 (multiples) must be 1-D, got rank {len(s)}")
    rank = ctx.inputs[0].rank
    if rank and len(s) == 1 and s[0]:
        ctx.require(s[0] == rank, f"input 1 (multiples) must have {rank} values (the rank of "
                                  f"input 0), got {s[0]}")
    if rank and ctx.value_known(1):
        _multiples(ctx, rank)


def prepare(ctx: OperationContext):
    shape = ctx.input_shape(0)
    return [tuple(d * m for d, m in zip(shape, _multiples(ctx, len(shape))))]


def execute(ctx: OperationContext):
    x = ctx.input(0)
    return [np.tile(x, _multiples(ctx, x.ndim))]


register("TILE", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="tile")
