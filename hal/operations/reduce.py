"""MEAN, REDUCE_ALL, REDUCE_ANY, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_SUM.

| op          | input 0 (rank <= 4)       | input 1       | input 2 (keep_dims) | output 0   |
|-------------|---------------------------|---------------|---------------------|------------|
| MEAN        | F32, Q8 (1.1); F16 (1.2); | TENSOR_INT32  | INT32 (> 0: keep)   | as input 0 |
|             | Q8 signed (1.3)           | axes, rank 1  |                     |            |
| REDUCE_ALL  | BOOL8 (1.2)               | idem          | BOOL                | BOOL8      |
| REDUCE_ANY  | BOOL8 (1.2)               | idem          | BOOL                | BOOL8      |
| REDUCE_MAX  | F32, F16, Q8 (1.2); Q8 signed (1.3) | idem | BOOL             | as input 0 |
| REDUCE_MIN  | idem                      | idem          | BOOL                | as input 0 |
| REDUCE_PROD | F32, F16 (1.2)            | idem          | BOOL                | as input 0 |
| REDUCE_SUM  | F32, F16 (1.2)            | idem          | BOOL                | as input 0 |

Axes lie in [-rank, rank); negative axes count from the end and duplicates are reduced once.
Without keep_dims, reducing every dimension gives shape [1]. REDUCE_MAX/MIN keep the input's
scale and zero point. Quantized MEAN gives TFLite's built-in kernels' bits.
A rank-4 tensor averaged over axes [1, 2] (as given) with keep_dims takes TFLite's dedicated
kernel: the sum of the stored values times QuantizeMultiplier(input_scale / (count *
output_scale)) (gemmlowp rounding), plus output_zero_point - round(input_zero_point *
input_scale / output_scale) (float32, halves away from zero). Any other MEAN is TFLite's
QuantizedMeanOrSum: the multiplier of input_scale / output_scale made 2^k / count times larger
in integers (k = floor(log2(count)), at most 32), applied to sum - count * input_zero_point,
plus output_zero_point.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import (
    QUANT8_TENSORS,
    check_rank,
    check_same_quant,
    multiply_by_quantized_multiplier,
    qrange,
    quantize_multiplier,
)
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig
from hal.types import OperandType

OT = OperandType

_MEAN_SIGS = [sig(v, [t, "TENSOR_INT32", "INT32"], [t]) for v, t in [
    ("V1_1", "TENSOR_FLOAT32"), ("V1_1", "TENSOR_QUANT8_ASYMM"), ("V1_2", "TENSOR_FLOAT16"),
    ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]]


def _reduce_sigs(types):
    return [sig(v, [t, "TENSOR_INT32", "BOOL"], [t]) for v, t in types]


_BOOL = _reduce_sigs([("V1_2", "TENSOR_BOOL8")])
_FLOAT = _reduce_sigs([("V1_2", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16")])
_MINMAX = _FLOAT + _reduce_sigs([("V1_2", "TENSOR_QUANT8_ASYMM"),
                                 ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")])


def resolve_axes(ctx: OperationContext, axes, rank: int) -> tuple[int, ...]:
    """Normalized, de-duplicated axes in their first-seen order."""
    out: list[int] = []
    for a in np.asarray(axes).reshape(-1).tolist():
        ctx.require(-rank <= a < rank,
                    f"input 1 (axes) values must be in [-{rank}, {rank}), got {a}")
        a = a + rank if a < 0 else a
        if a not in out:
            out.append(a)
    return tuple(out)


def validate(ctx: OperationContext):
    check_rank(ctx, 0, (1, 4))
    check_rank(ctx, 1, 1)
    rank = ctx.inputs[0].rank
    if ctx.value_known(1) and rank:
        resolve_axes(ctx, ctx.input(1), rank)
    if ctx.name in ("REDUCE_MAX", "REDUCE_MIN"):
        check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")


def _keep_dims(ctx: OperationContext) -> bool:
    v = ctx.scalar(2)
    if v is None:
        raise LookupError(f"{ctx.name}: input 2 (keep_dims) is not known before execution")
    return bool(v > 0) if ctx.name == "MEAN" else bool(v)


def prepare(ctx: OperationContext):
    shape = ctx.input_shape(0)
    axes = resolve_axes(ctx, ctx.input(1), len(shape))
    if _keep_dims(ctx):
        return [tuple(1 if i in axes else d for i, d in enumerate(shape))]
    out = tuple(d for i, d in enumerate(shape) if i not in axes)
    return [out if out else (1,)]


def _float_lowest(dtype):
    return np.finfo(dtype).min


def mean_requant(xi, oi, count: int, spatial: bool) -> tuple[int, int, int, int]:
    """(multiplier, shift, subtracted, added) of TFLite's quantized MEAN (see the doc): the
    result is MultiplyByQuantizedMultiplier(sum - subtracted, multiplier, shift) + added."""
    f32 = np.float32
    if spatial:  # the 4-D height/width kernel
        temp = f32(xi.zero_point) * f32(xi.scale) / f32(oi.scale)
        bias = oi.zero_point - int(temp + f32(0.5) if temp > 0 else temp - f32(0.5))
        mult, shift = quantize_multiplier(float(f32(xi.scale) / (f32(count) * f32(oi.scale))))
        return mult, shift, 0, bias
    mult, shift = quantize_multiplier(float(f32(xi.scale)) / float(f32(oi.scale)))
    k = min(count.bit_length() - 1, 32, 31 + shift)  # QuantizedMeanOrSum
    return (mult << k) // count, shift - k, xi.zero_point * count, oi.zero_point


def spatial_mean(ctx: OperationContext, rank: int) -> bool:
    """Whether TFLite's dedicated 4-D kernel computes this MEAN (axes [1, 2] as given)."""
    raw = [int(a) for a in np.asarray(ctx.input(1)).reshape(-1)]
    return rank == 4 and sorted(raw) == [1, 2] and _keep_dims(ctx)


def _mean(ctx: OperationContext, x, axes):
    xi, oi = ctx.inputs[0], ctx.outputs[0]
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    if xi.type in QUANT8_TENSORS:
        if count == 0:
            raise ValueError("MEAN of a quantized tensor over an empty dimension")
        total = np.sum(x.astype(np.int64), axis=axes)
        lo, hi = qrange(oi.type)
        mult, shift, sub, add = mean_requant(xi, oi, count, spatial_mean(ctx, x.ndim))
        q = multiply_by_quantized_multiplier(total - sub, mult, shift) + add
        return np.clip(q, lo, hi).astype(oi.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.mean(x.astype(np.float64), axis=axes).astype(oi.dtype)


def execute(ctx: OperationContext):
    x = ctx.input(0)
    out_shape = ctx.outputs[0].shape
    axes = resolve_axes(ctx, ctx.input(1), x.ndim)
    dtype = ctx.outputs[0].dtype
    name = ctx.name
    if name == "MEAN":
        r = _mean(ctx, x, axes)
    elif name == "REDUCE_ALL":
        r = np.all(x, axis=axes)
    elif name == "REDUCE_ANY":
        r = np.any(x, axis=axes)
    elif name == "REDUCE_SUM":
        r = np.sum(x.astype(np.float64), axis=axes)
    elif name == "REDUCE_PROD":
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.prod(x.astype(np.float64), axis=axes)
    else:
        # An empty reduction yields the reference's initial value (numeric_limits lowest/max).
        if x.dtype.kind == "f":
            lo, hi = _float_lowest(x.dtype), np.finfo(x.dtype).max
        else:
            lo, hi = np.iinfo(x.dtype).min, np.iinfo(x.dtype).max
        if name == "REDUCE_MAX":
            r = np.max(x, axis=axes, initial=lo)
        else:
            r = np.min(x, axis=axes, initial=hi)
    with np.errstate(over="ignore", invalid="ignore"):
        return [np.asarray(r).astype(dtype).reshape(out_shape)]


for _op, _sigs in [("MEAN", _MEAN_SIGS), ("REDUCE_ALL", _BOOL), ("REDUCE_ANY", _BOOL),
                   ("REDUCE_MAX", _MINMAX), ("REDUCE_MIN", _MINMAX), ("REDUCE_PROD", _FLOAT),
                   ("REDUCE_SUM", _FLOAT)]:
    register(_op, execute, signatures=_sigs, validate=validate, prepare=prepare,
             family="reduce")
