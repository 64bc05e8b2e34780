"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL; LOGICAL_AND, LOGICAL_OR,
LOGICAL_NOT: element-wise comparisons and boolean logic with broadcasting.

| op                       | input 0      | input 1                       | output 0     |
|--------------------------|--------------|-------------------------------|--------------|
| EQUAL ... LESS_EQUAL     | tensor       | same type, broadcastable      | TENSOR_BOOL8 |
| LOGICAL_AND, LOGICAL_OR  | TENSOR_BOOL8 | TENSOR_BOOL8, broadcastable   | TENSOR_BOOL8 |
| LOGICAL_NOT              | TENSOR_BOOL8 |                               | TENSOR_BOOL8 |

Comparison types: TENSOR_BOOL8, TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32,
TENSOR_QUANT8_ASYMM (1.2); TENSOR_QUANT8_ASYMM_SIGNED (1.3). Quantized inputs may have
different scales and zero points: they are compared as TFLite's built-in kernels compare them
(ComparisonWithScaling: ((q - zero_point) << 8) times QuantizeMultiplier(scale), gemmlowp
rounding: real values to 1/256), which near equality decides differently from the real
values. The logical ops take TENSOR_BOOL8 (1.2).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import (
    QUANT8_TENSORS,
    broadcast_shape,
    check_broadcastable,
    check_same_shape,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
)
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

B8 = "TENSOR_BOOL8"
_COMPARE_TYPES = [("V1_2", B8), ("V1_2", "TENSOR_FLOAT16"), ("V1_2", "TENSOR_FLOAT32"),
                  ("V1_2", "TENSOR_INT32"), ("V1_2", "TENSOR_QUANT8_ASYMM"),
                  ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
COMPARE_SIGNATURES = [sig(v, [t, t], [B8]) for v, t in _COMPARE_TYPES]
LOGICAL_BINARY_SIGNATURES = [sig("V1_2", [B8, B8], [B8])]
LOGICAL_NOT_SIGNATURES = [sig("V1_2", [B8], [B8])]

_COMPARE = {
    "EQUAL": np.equal, "NOT_EQUAL": np.not_equal, "GREATER": np.greater,
    "GREATER_EQUAL": np.greater_equal, "LESS": np.less, "LESS_EQUAL": np.less_equal,
}
_LOGICAL = {"LOGICAL_AND": np.logical_and, "LOGICAL_OR": np.logical_or}


def validate_binary(ctx: OperationContext):
    check_broadcastable(ctx, 0, 1)
    if ctx.inputs[0].type in QUANT8_TENSORS:
        for k in (0, 1):
            ctx.require(ctx.inputs[k].scale > 0, f"input {k} must have a scale > 0")


def prepare_binary(ctx: OperationContext):
    return [broadcast_shape(ctx.input_shape(0), ctx.input_shape(1))]


def comparison_multipliers(a, b) -> tuple[tuple[int, int], tuple[int, int]]:
    """TFLite's ComparisonWithScaling multipliers of two quantized inputs: (multiplier, shift)
    of each one's scale."""
    return tuple(quantize_multiplier(float(np.float32(t.scale))) for t in (a, b))


def execute_compare(ctx: OperationContext):
    a, b = ctx.input(0), ctx.input(1)
    if ctx.inputs[0].type in QUANT8_TENSORS:
        ia, ib = ctx.inputs[0], ctx.inputs[1]
        (ma, sa), (mb, sb) = comparison_multipliers(ia, ib)
        a = multiply_by_quantized_multiplier((a.astype(np.int64) - ia.zero_point) << 8, ma, sa)
        b = multiply_by_quantized_multiplier((b.astype(np.int64) - ib.zero_point) << 8, mb, sb)
    with np.errstate(invalid="ignore"):
        r = _COMPARE[ctx.name](a, b)
    return [np.asarray(r, dtype=np.bool_).reshape(ctx.outputs[0].shape)]


def execute_logical(ctx: OperationContext):
    r = _LOGICAL[ctx.name](ctx.input(0), ctx.input(1))
    return [np.asarray(r, dtype=np.bool_).reshape(ctx.outputs[0].shape)]


def validate_not(ctx: OperationContext):
    check_same_shape(ctx)


def prepare_not(ctx: OperationContext):
    return [ctx.input_shape(0)]


def execute_not(ctx: OperationContext):
    return [np.logical_not(ctx.input(0))]


for _op in _COMPARE:
    register(_op, execute_compare, signatures=COMPARE_SIGNATURES, validate=validate_binary,
             prepare=prepare_binary, family="comparison")
for _op in _LOGICAL:
    register(_op, execute_logical, signatures=LOGICAL_BINARY_SIGNATURES,
             validate=validate_binary, prepare=prepare_binary, family="comparison")
register("LOGICAL_NOT", execute_not, signatures=LOGICAL_NOT_SIGNATURES, validate=validate_not,
         prepare=prepare_not, family="comparison")
