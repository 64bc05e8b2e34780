"""FILL: a tensor of a given shape filled with a scalar; RANK: the rank of a tensor.

| op   | inputs                                          | output 0                    |
|------|-------------------------------------------------|-----------------------------|
| FILL | 0: TENSOR_INT32 [k] shape (>= 0); 1: the value  | tensor of that shape        |
| RANK | 0: tensor of any type, rank >= 1                | INT32 scalar                |

FILL's value is FLOAT32, FLOAT16 or INT32 for a TENSOR_FLOAT32, TENSOR_FLOAT16 or
TENSOR_INT32 output. Both since 1.3. RANK takes TENSOR_FLOAT16, TENSOR_FLOAT32,
TENSOR_INT32, TENSOR_QUANT8_ASYMM, TENSOR_QUANT16_SYMM, TENSOR_BOOL8,
TENSOR_QUANT8_SYMM_PER_CHANNEL, TENSOR_QUANT16_ASYMM, TENSOR_QUANT8_SYMM and
TENSOR_QUANT8_ASYMM_SIGNED.
"""

from __future__ import annotations

import numpy as np

from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

FILL_SIGS = [sig("V1_3", ["TENSOR_INT32", s], [t]) for s, t in
             [("FLOAT32", "TENSOR_FLOAT32"), ("FLOAT16", "TENSOR_FLOAT16"),
              ("INT32", "TENSOR_INT32")]]
_RANK_TYPES = ["TENSOR_FLOAT16", "TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM",
               "TENSOR_QUANT16_SYMM", "TENSOR_BOOL8", "TENSOR_QUANT8_SYMM_PER_CHANNEL",
               "TENSOR_QUANT16_ASYMM", "TENSOR_QUANT8_SYMM", "TENSOR_QUANT8_ASYMM_SIGNED"]
RANK_SIGS = [sig("V1_3", [t], ["INT32"]) for t in _RANK_TYPES]


def _fill_shape(ctx: OperationContext):
    dims = ctx.input(0).reshape(-1).tolist()
    ctx.require(all(d >= 0 for d in dims), f"input 0 (shape) must be >= 0, got {dims}")
    return tuple(int(d) for d in dims)


def validate_fill(ctx: OperationContext):
    s = ctx.input_shape(0)
    ctx.require(len(s) in (0, 1), f"input 0 (shape) must be 1-D, got rank {len(s)}")
    if ctx.value_known(0):
        _fill_shape(ctx)


def prepare_fill(ctx: OperationContext):
    return [_fill_shape(ctx)]


def execute_fill(ctx: OperationContext):
    dtype = ctx.outputs[0].dtype
    return [np.full(_fill_shape(ctx), ctx.input(1).reshape(-1)[0], dtype=dtype)]


def validate_rank(ctx: OperationContext):
    """Nothing beyond the signature: the input's shape is what RANK reports, and an unknown
    rank at build time (shape ()) cannot be told from a scalar."""


def prepare_rank(ctx: OperationContext):
    return [()]


def execute_rank(ctx: OperationContext):
    return [np.array(ctx.input(0).ndim, dtype=np.int32)]


register("FILL", execute_fill, signatures=FILL_SIGS, validate=validate_fill,
         prepare=prepare_fill, family="fill")
register("RANK", execute_rank, signatures=RANK_SIGS, validate=validate_rank,
         prepare=prepare_rank, family="fill")
