"""SLICE, STRIDED_SLICE: extract a (strided) box of a tensor.

SLICE

| input | meaning                                                             |
|-------|---------------------------------------------------------------------|
| 0     | n-D tensor (may be zero-sized)                                      |
| 1     | TENSOR_INT32 [n]: begin per dimension, 0 <= begin <= dim            |
| 2     | TENSOR_INT32 [n]: size per dimension, or -1 for "up to the end"     |

Output [size...]; begin + size must not exceed the dimension.
Types: TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32, TENSOR_QUANT8_ASYMM (1.2),
TENSOR_QUANT8_ASYMM_SIGNED (1.3).

STRIDED_SLICE

| input | meaning                                                             |
|-------|---------------------------------------------------------------------|
| 0     | n-D tensor, rank <= 4                                               |
| 1, 2  | TENSOR_INT32 [n]: begin, end (negative counts from the end)         |
| 3     | TENSOR_INT32 [n]: strides, non-zero (negative slices backwards)     |
| 4, 5  | INT32 begin_mask, end_mask: bit i set = fullest range in dim i      |
| 6     | INT32 shrink_axis_mask: bit i set = dim i is removed (its slice must have size 1 and a
|       | positive stride)                                                    |

Output of rank n - popcount(shrink_axis_mask) ([1] when every dimension shrinks).
Types: TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM (1.1), TENSOR_FLOAT16 (1.2),
TENSOR_QUANT8_ASYMM_SIGNED (1.3). Outputs have the input's quantization.
Begin and end are clamped as the NNAPI reference (TFLite's ClampedIndex) does.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_rank, check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_TI = "TENSOR_INT32"
_SLICE_SIGS = [sig(v, [t, _TI, _TI], [t]) for v, t in
               [("V1_2", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16"), ("V1_2", "TENSOR_INT32"),
                ("V1_2", "TENSOR_QUANT8_ASYMM"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]]
_STRIDED_SIGS = [sig(v, [t, _TI, _TI, _TI, "INT32", "INT32", "INT32"], [t]) for v, t in
                 [("V1_1", "TENSOR_FLOAT32"), ("V1_1", "TENSOR_QUANT8_ASYMM"),
                  ("V1_2", "TENSOR_FLOAT16"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]]
_NAMES = {1: "begin", 2: "end", 3: "strides"}


def _check_vectors(ctx: OperationContext, indexes, names):
    rank = ctx.inputs[0].rank
    for i in indexes:
        s = ctx.input_shape(i)
        ctx.require(len(s) in (0, 1), f"input {i} ({names[i]}) must be 1-D, got rank {len(s)}")
        if rank and len(s) == 1 and s[0]:
            ctx.require(s[0] == rank, f"input {i} ({names[i]}) must have {rank} values (the "
                                      f"rank of input 0), got {s[0]}")


def _known(ctx: OperationContext, indexes) -> bool:
    return all(ctx.value_known(i) for i in indexes) and all(ctx.input_shape(0)) \
        and ctx.inputs[0].rank > 0


# ----------------------------------------------------------------------------- SLICE

def slice_box(ctx: OperationContext):
    shape = ctx.input_shape(0)
    begin = ctx.input(1).reshape(-1).tolist()
    size = ctx.input(2).reshape(-1).tolist()
    ctx.require(len(begin) == len(shape) and len(size) == len(shape),
                f"inputs 1 (begin) and 2 (size) must have {len(shape)} values")
    box = []
    for d, (dim, b, s) in enumerate(zip(shape, begin, size)):
        ctx.require(0 <= b <= dim, f"input 1 (begin) value {b} is out of [0, {dim}] in dim {d}")
        if s == -1:
            s = dim - b
        ctx.require(s >= 0 and b + s <= dim,
                    f"input 2 (size) value {s} at begin {b} exceeds dimension {d} of size {dim}")
        box.append((b, s))
    return box


def validate_slice(ctx: OperationContext):
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")
    _check_vectors(ctx, (1, 2), {1: "begin", 2: "size"})
    if _known(ctx, (1, 2)):
        slice_box(ctx)


def prepare_slice(ctx: OperationContext):
    return [tuple(s for _, s in slice_box(ctx))]


def execute_slice(ctx: OperationContext):
    box = slice_box(ctx)
    return [np.ascontiguousarray(ctx.input(0)[tuple(slice(b, b + s) for b, s in box)])]


# ----------------------------------------------------------------------------- STRIDED_SLICE

def _clamped_index(index: int, dim: int, positive: bool) -> int:
    if positive:
        return dim if index >= dim else min(max(index, -dim), dim) % dim if dim else 0
    if index < -dim:
        return -1
    return min(max(index, -dim), dim - 1) % dim if dim else -1


def strided_plan(ctx: OperationContext):
    """[(begin, stride, size, shrink)] per dimension, as the NNAPI reference computes them."""
    shape = ctx.input_shape(0)
    begin, end, strides = (ctx.input(i).reshape(-1).tolist() for i in (1, 2, 3))
    for i, v in ((1, begin), (2, end), (3, strides)):
        ctx.require(len(v) == len(shape), f"input {i} ({_NAMES[i]}) must have {len(shape)} "
                                          f"values (the rank of input 0), got {len(v)}")
    begin_mask, end_mask, shrink_mask = (int(ctx.scalar(i)) for i in (4, 5, 6))
    plan = []
    for d, dim in enumerate(shape):
        stride = strides[d]
        ctx.require(stride != 0, f"input 3 (strides) must be non-zero, got 0 in dim {d}")
        pos = stride > 0
        b = (0 if pos else dim - 1) if begin_mask & (1 << d) else \
            _clamped_index(begin[d], dim, pos)
        e = (dim if pos else -1) if end_mask & (1 << d) else _clamped_index(end[d], dim, pos)
        size = max(0, int(np.ceil((e - b) / stride)))
        shrink = bool(shrink_mask & (1 << d))
        if shrink:
            ctx.require(stride > 0, f"dimension {d} is shrunk (input 6) and needs a positive "
                                    f"stride, got {stride}")
            ctx.require(size == 1, f"dimension {d} is shrunk (input 6) and its slice must have "
                                   f"size 1, got {size}")
        plan.append((b, stride, size, shrink))
    return plan


def _strided_shape(plan):
    shape = tuple(size for _, _, size, shrink in plan if not shrink)
    return shape if shape else (1,)


def validate_strided(ctx: OperationContext):
    check_rank(ctx, 0, (1, 4))
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")
    _check_vectors(ctx, (1, 2, 3), _NAMES)
    if ctx.value_known(3):
        ctx.require(bool(np.all(ctx.input(3) != 0)), "input 3 (strides) must be non-zero")
    if _known(ctx, (1, 2, 3, 4, 5, 6)):
        out = _strided_shape(strided_plan(ctx))
        declared = ctx.outputs[0].shape
        ctx.require(not declared or len(declared) == len(out),
                    f"output 0 has rank {len(declared)}, the slice has rank {len(out)}")


def prepare_strided(ctx: OperationContext):
    return [_strided_shape(strided_plan(ctx))]


def execute_strided(ctx: OperationContext):
    plan = strided_plan(ctx)
    x = ctx.input(0)
    idx = np.ix_(*[b + s * np.arange(n, dtype=np.int64) for b, s, n, _ in plan])
    return [np.ascontiguousarray(x[idx]).reshape(_strided_shape(plan))]


register("SLICE", execute_slice, signatures=_SLICE_SIGS, validate=validate_slice,
         prepare=prepare_slice, family="slice")
register("STRIDED_SLICE", execute_strided, signatures=_STRIDED_SIGS, validate=validate_strided,
         prepare=prepare_strided, family="slice")
