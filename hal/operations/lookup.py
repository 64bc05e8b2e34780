"""EMBEDDING_LOOKUP, HASHTABLE_LOOKUP: select rows of a values tensor.

EMBEDDING_LOOKUP

| input | meaning                                                              |
|-------|----------------------------------------------------------------------|
| 0     | lookups: TENSOR_INT32 [k], indices into the first dimension of values|
| 1     | values: n-D tensor, n >= 2                                           |

Output 0: [k, values.dimension[1:]...], the selected rows, values' type and quantization.
An index out of bounds fails the execution.
Types: TENSOR_FLOAT32 (1.0), TENSOR_INT32 and TENSOR_QUANT8_ASYMM (1.2), TENSOR_FLOAT16 and
TENSOR_QUANT8_ASYMM_SIGNED (1.3).

HASHTABLE_LOOKUP

| input | meaning                                                              |
|-------|----------------------------------------------------------------------|
| 0     | lookups: TENSOR_INT32 [k]                                            |
| 1     | keys: TENSOR_INT32 [n], sorted ascending                             |
| 2     | values: tensor [n, ...]                                              |

Output 0: [k, ...], row i is values[j] where keys[j] == lookups[i], zeros on a miss.
Output 1: hits, TENSOR_QUANT8_ASYMM [k] (scale 1, zero point 0), 1 on a hit, 0 on a miss.
Types (1.0): TENSOR_FLOAT32, TENSOR_INT32, TENSOR_QUANT8_ASYMM.
"""

from __future__ import annotations

import numpy as np

from hal.errors import GeneralFailure
from hal.operations.common import check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_TI = "TENSOR_INT32"
EMBEDDING_SIGS = [sig(v, [_TI, t], [t]) for v, t in
                  [("V1_0", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_INT32"),
                   ("V1_2", "TENSOR_QUANT8_ASYMM"), ("V1_3", "TENSOR_FLOAT16"),
                   ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]]
HASHTABLE_SIGS = [sig("V1_0", [_TI, _TI, t], [t, "TENSOR_QUANT8_ASYMM"]) for t in
                  ("TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM")]


def _require_rank(ctx: OperationContext, i: int, what: str, ok) -> None:
    r = ctx.inputs[i].rank
    ctx.require(r == 0 or ok(r), f"input {i} ({what}) has an invalid rank {r}")


# ----------------------------------------------------------------------------- EMBEDDING

def validate_embedding(ctx: OperationContext):
    _require_rank(ctx, 0, "lookups, must be 1-D", lambda r: r == 1)
    _require_rank(ctx, 1, "values, must have rank >= 2", lambda r: r >= 2)
    check_same_quant(ctx, ctx.inputs[1], ctx.outputs[0], "input 1 and output 0")


def prepare_embedding(ctx: OperationContext):
    return [tuple(ctx.input_shape(0)[:1]) + tuple(ctx.input_shape(1)[1:])]


def execute_embedding(ctx: OperationContext):
    idx = ctx.input(0).reshape(-1)
    values = ctx.input(1)
    n = values.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise GeneralFailure(f"EMBEDDING_LOOKUP: input 0 (lookups) holds values outside "
                             f"[0, {n})")
    return [values[idx.astype(np.int64)]]


# ----------------------------------------------------------------------------- HASHTABLE

def validate_hashtable(ctx: OperationContext):
    _require_rank(ctx, 0, "lookups, must be 1-D", lambda r: r == 1)
    _require_rank(ctx, 1, "keys, must be 1-D", lambda r: r == 1)
    _require_rank(ctx, 2, "values, must have rank >= 1", lambda r: r >= 1)
    check_same_quant(ctx, ctx.inputs[2], ctx.outputs[0], "input 2 and output 0")
    keys, values = ctx.input_shape(1), ctx.input_shape(2)
    if keys and values and keys[0] and values[0]:
        ctx.require(keys[0] == values[0], f"input 1 (keys) has {keys[0]} entries, input 2 "
                                          f"(values) has {values[0]} rows")
    hits = ctx.outputs[1]
    ctx.require(hits.scale in (0.0, 1.0) and hits.zero_point == 0,
                "output 1 (hits) must have scale 1 and zero point 0")


def prepare_hashtable(ctx: OperationContext):
    k = tuple(ctx.input_shape(0)[:1])
    return [k + tuple(ctx.input_shape(2)[1:]), k]


def execute_hashtable(ctx: OperationContext):
    lookups = ctx.input(0).reshape(-1)
    keys = ctx.input(1).reshape(-1)
    values = ctx.input(2)
    if keys.size != values.shape[0]:
        raise GeneralFailure(f"HASHTABLE_LOOKUP: {keys.size} keys for {values.shape[0]} rows")
    pos = np.searchsorted(keys, lookups)
    safe = np.minimum(pos, max(keys.size - 1, 0))
    hit = (pos < keys.size) & (keys[safe] == lookups) if keys.size else \
        np.zeros(lookups.shape, dtype=bool)
    out = np.zeros((lookups.size,) + values.shape[1:], dtype=values.dtype)
    if keys.size:
        out[hit] = values[safe[hit]]
    return [out, hit.astype(np.uint8)]


register("EMBEDDING_LOOKUP", execute_embedding, signatures=EMBEDDING_SIGS,
         validate=validate_embedding, prepare=prepare_embedding, family="lookup")
register("HASHTABLE_LOOKUP", execute_hashtable, signatures=HASHTABLE_SIGS,
         validate=validate_hashtable, prepare=prepare_hashtable, family="lookup")
