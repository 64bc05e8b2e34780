"""TRANSPOSE: permute the dimensions of a tensor.

| input | meaning                                                                |
|-------|------------------------------------------------------------------------|
| 0     | n-D tensor, rank <= 4 (zero-sized since 1.2)                           |
| 1     | optional TENSOR_INT32 [n] perm, a permutation of 0..n-1; omitted (or empty) = reversed |

Output dimension i is input dimension perm[i]; same type and quantization as input 0.
Types: TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM (1.1), TENSOR_FLOAT16 (1.2),
TENSOR_QUANT8_ASYMM_SIGNED (1.3).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_rank, check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_TYPES = [("V1_1", "TENSOR_FLOAT32"), ("V1_1", "TENSOR_QUANT8_ASYMM"),
          ("V1_2", "TENSOR_FLOAT16"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
SIGNATURES = ([sig(v, [t, "TENSOR_INT32"], [t], optional=[1]) for v, t in _TYPES]
              + [sig(v, [t], [t]) for v, t in _TYPES])


def transpose_perm(ctx: OperationContext, rank: int):
    if not ctx.has_input(1):
        return tuple(range(rank - 1, -1, -1))
    perm = ctx.input(1).reshape(-1).tolist()
    if not perm:
        return tuple(range(rank - 1, -1, -1))
    ctx.require(sorted(perm) == list(range(rank)),
                f"input 1 (perm) must be a permutation of 0..{rank - 1}, got {perm}")
    return tuple(perm)


def validate(ctx: OperationContext):
    check_rank(ctx, 0, (1, 4))
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")
    if ctx.has_input(1):
        s = ctx.input_shape(1)
        ctx.require(len(s) in (0, 1), f"input 1 (perm) must be 1-D, got rank {len(s)}")
    rank = ctx.inputs[0].rank
    if rank and (not ctx.has_input(1) or ctx.value_known(1)):
        transpose_perm(ctx, rank)


def prepare(ctx: OperationContext):
    shape = ctx.input_shape(0)
    return [tuple(shape[p] for p in transpose_perm(ctx, len(shape)))]


def execute(ctx: OperationContext):
    x = ctx.input(0)
    return [np.ascontiguousarray(x.transpose(transpose_perm(ctx, x.ndim)))]


register("TRANSPOSE", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="transpose")
