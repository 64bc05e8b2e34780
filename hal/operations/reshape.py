"""RESHAPE, SQUEEZE, EXPAND_DIMS: change the shape of a tensor, keeping its data.

| op          | inputs                                                  | output            |
|-------------|---------------------------------------------------------|-------------------|
| RESHAPE     | 0: tensor, rank <= 4; 1: TENSOR_INT32 [k] new shape     | the new shape     |
| SQUEEZE     | 0: tensor, rank <= 4; 1: optional TENSOR_INT32 axes     | size-1 dims gone  |
| EXPAND_DIMS | 0: tensor, rank >= 1; 1: INT32 axis in [-(n+1), n+1)    | rank n + 1        |

RESHAPE's shape may hold one -1 (inferred). SQUEEZE axes may be negative; omitted or empty
axes squeeze every size-1 dimension; the output is [1] when no dimension is left.
Output 0 has the type and quantization of input 0.
Types: RESHAPE TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (1.0), TENSOR_FLOAT16 (1.2); SQUEEZE
TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (1.1), TENSOR_FLOAT16 (1.2); EXPAND_DIMS TENSOR_FLOAT32,
TENSOR_FLOAT16, TENSOR_INT32, TENSOR_QUANT8_ASYMM (1.2); TENSOR_QUANT8_ASYMM_SIGNED (1.3) for
all three.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_rank, check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_S8 = ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")
_RESHAPE_TYPES = [("V1_0", "TENSOR_FLOAT32"), ("V1_0", "TENSOR_QUANT8_ASYMM"),
                  ("V1_2", "TENSOR_FLOAT16"), _S8]
_SQUEEZE_TYPES = [("V1_1", "TENSOR_FLOAT32"), ("V1_1", "TENSOR_QUANT8_ASYMM"),
                  ("V1_2", "TENSOR_FLOAT16"), _S8]
_EXPAND_TYPES = [("V1_2", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16"),
                 ("V1_2", "TENSOR_INT32"), ("V1_2", "TENSOR_QUANT8_ASYMM"), _S8]

RESHAPE_SIGS = [sig(v, [t, "TENSOR_INT32"], [t]) for v, t in _RESHAPE_TYPES]
SQUEEZE_SIGS = ([sig(v, [t, "TENSOR_INT32"], [t], optional=[1]) for v, t in _SQUEEZE_TYPES]
                + [sig(v, [t], [t]) for v, t in _SQUEEZE_TYPES])
EXPAND_SIGS = [sig(v, [t, "INT32"], [t]) for v, t in _EXPAND_TYPES]


def _validate_common(ctx: OperationContext):
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")


# ----------------------------------------------------------------------------- RESHAPE

def _reshape_shape(ctx: OperationContext):
    target = ctx.input(1).reshape(-1).tolist()
    n_in = int(np.prod(ctx.input_shape(0), dtype=np.int64))
    ctx.require(sum(1 for v in target if v == -1) <= 1,
                f"input 1 (shape) may hold at most one -1, got {target}")
    ctx.require(all(v >= -1 for v in target), f"input 1 (shape) has a negative size: {target}")
    known = int(np.prod([v for v in target if v != -1], dtype=np.int64))
    if -1 in target:
        fill = n_in // known if known else 0
        target = [fill if v == -1 else v for v in target]
        known *= fill
    ctx.require(known == n_in, f"input 1 (shape) {target} holds {known} elements, input 0 "
                               f"holds {n_in}")
    return tuple(int(v) for v in target)


def validate_reshape(ctx: OperationContext):
    _validate_common(ctx)
    check_rank(ctx, 0, (1, 4))
    s = ctx.input_shape(1)
    ctx.require(len(s) in (0, 1), f"input 1 (shape) must be 1-D, got rank {len(s)}")
    if ctx.value_known(1) and ctx.inputs[0].rank and all(ctx.input_shape(0)):
        _reshape_shape(ctx)


def prepare_reshape(ctx: OperationContext):
    return [_reshape_shape(ctx)]


def execute_reshape(ctx: OperationContext):
    return [ctx.input(0).reshape(_reshape_shape(ctx))]


# ----------------------------------------------------------------------------- SQUEEZE

def _squeeze_shape(ctx: OperationContext):
    shape = ctx.input_shape(0)
    rank = len(shape)
    axes = ctx.input(1).reshape(-1).tolist() if ctx.has_input(1) else []
    if not axes:
        keep = [d for d in shape if d != 1]
    else:
        drop = set()
        for a in axes:
            ctx.require(-rank <= a < rank, f"input 1 (axes) value {a} is out of range for "
                                           f"rank {rank}")
            a %= rank
            ctx.require(shape[a] == 1, f"input 1 (axes) names dimension {a} of size "
                                       f"{shape[a]}, only size-1 dimensions can be squeezed")
            drop.add(a)
        keep = [d for i, d in enumerate(shape) if i not in drop]
    return tuple(keep) if keep else (1,)


def validate_squeeze(ctx: OperationContext):
    _validate_common(ctx)
    check_rank(ctx, 0, (1, 4))
    if ctx.has_input(1):
        s = ctx.input_shape(1)
        ctx.require(len(s) in (0, 1), f"input 1 (axes) must be 1-D, got rank {len(s)}")
    if (not ctx.has_input(1) or ctx.value_known(1)) and ctx.inputs[0].rank \
            and all(ctx.input_shape(0)):
        _squeeze_shape(ctx)


def prepare_squeeze(ctx: OperationContext):
    return [_squeeze_shape(ctx)]


def execute_squeeze(ctx: OperationContext):
    return [ctx.input(0).reshape(_squeeze_shape(ctx))]


# ----------------------------------------------------------------------------- EXPAND_DIMS

def _expand_axis(ctx: OperationContext, rank: int) -> int:
    axis = ctx.scalar(1)
    ctx.require(-(rank + 1) <= axis < rank + 1,
                f"input 1 (axis) must be in [{-(rank + 1)}, {rank + 1}), got {axis}")
    return axis % (rank + 1)


def validate_expand(ctx: OperationContext):
    _validate_common(ctx)
    rank = ctx.inputs[0].rank
    if rank and ctx.scalar(1) is not None:
        _expand_axis(ctx, rank)


def prepare_expand(ctx: OperationContext):
    shape = ctx.input_shape(0)
    axis = _expand_axis(ctx, len(shape))
    return [tuple(shape[:axis]) + (1,) + tuple(shape[axis:])]


def execute_expand(ctx: OperationContext):
    return [ctx.input(0).reshape(ctx.outputs[0].shape)]


register("RESHAPE", execute_reshape, signatures=RESHAPE_SIGS, validate=validate_reshape,
         prepare=prepare_reshape, family="reshape")
register("SQUEEZE", execute_squeeze, signatures=SQUEEZE_SIGS, validate=validate_squeeze,
         prepare=prepare_squeeze, family="reshape")
register("EXPAND_DIMS", execute_expand, signatures=EXPAND_SIGS, validate=validate_expand,
         prepare=prepare_expand, family="reshape")
