"""RELU, RELU1, RELU6, LOGISTIC, TANH, ELU, HARD_SWISH, PRELU: activations.

| op         | input 0           | input 1                         | output 0                 |
|------------|-------------------|---------------------------------|--------------------------|
| RELU/1/6   | tensor, rank <= 4 |                                 | same type, shape, quant  |
| LOGISTIC   | tensor, rank <= 4 |                                 | same type and shape (1)  |
| TANH       | tensor, rank <= 4 |                                 | same type and shape (2)  |
| ELU        | tensor            | alpha: FLOAT32 / FLOAT16 scalar | same type and shape      |
| HARD_SWISH | tensor            |                                 | same type; own quant     |
| PRELU      | tensor            | alpha: same type, broadcastable | broadcast shape; own quant |

(1) quant8: scale 1/256, zero point 0 (-128 for QUANT8_ASYMM_SIGNED).
(2) quant8: scale 1/128, zero point 128 (0 for QUANT8_ASYMM_SIGNED).

Types (HAL version that introduced them):
RELU, RELU1, RELU6, LOGISTIC: FLOAT32, QUANT8_ASYMM (1.0); FLOAT16 (1.2); QUANT8_ASYMM_SIGNED (1.3).
TANH: FLOAT32 (1.0); FLOAT16, QUANT8_ASYMM (1.2); QUANT8_ASYMM_SIGNED (1.3).
ELU: FLOAT32, FLOAT16 (1.3). HARD_SWISH: FLOAT32, FLOAT16, QUANT8_ASYMM, QUANT8_ASYMM_SIGNED (1.3).
PRELU: FLOAT32, FLOAT16, QUANT8_ASYMM (1.2); QUANT8_ASYMM_SIGNED (1.3).

Quantized LOGISTIC/TANH: the reference's gemmlowp fixed-point sigmoid/tanh is exact to far below
one output step, so we round the real result onto the fixed output grid (ties away from zero,
like its RoundingDivideByPOT) and saturate. Quantized HARD_SWISH and PRELU follow the
reference integer pipelines (_activation_quant.py).
"""

from __future__ import annotations

import numpy as np

from hal.operations._activation_quant import hard_swish_quant, prelu_quant
from hal.operations.common import (
    CLAMP_OPERATIONS,
    QUANT8_TENSORS,
    activation_range_float,
    activation_range_quant,
    broadcast_shape,
    check_broadcastable,
    check_fixed_output_quant,
    check_rank,
    check_same_quant,
    dequantize,
    qrange,
    round_half_away,
)
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig
from hal.types import OperandType

OT = OperandType
F32, F16 = "TENSOR_FLOAT32", "TENSOR_FLOAT16"
Q8, QS8 = "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"

_TYPES = {
    "RELU": [("V1_0", F32), ("V1_0", Q8), ("V1_2", F16), ("V1_3", QS8)],
    "LOGISTIC": [("V1_0", F32), ("V1_0", Q8), ("V1_2", F16), ("V1_3", QS8)],
    "TANH": [("V1_0", F32), ("V1_2", F16), ("V1_2", Q8), ("V1_3", QS8)],
    "HARD_SWISH": [("V1_3", F32), ("V1_3", F16), ("V1_3", Q8), ("V1_3", QS8)],
    "PRELU": [("V1_2", F32), ("V1_2", F16), ("V1_2", Q8), ("V1_3", QS8)],
}


def _unary_sigs(op: str):
    return [sig(v, [t], [t]) for v, t in _TYPES[op]]


ELU_SIGNATURES = [sig("V1_3", [F32, "FLOAT32"], [F32]), sig("V1_3", [F16, "FLOAT16"], [F16])]
PRELU_SIGNATURES = [sig(v, [t, t], [t]) for v, t in _TYPES["PRELU"]]


#: fixed output quantization of quantized LOGISTIC/TANH: (scale, zero point) per type
_FIXED_OUTPUT_QUANT = {
    ("LOGISTIC", OT.TENSOR_QUANT8_ASYMM): (1.0 / 256, 0),
    ("LOGISTIC", OT.TENSOR_QUANT8_ASYMM_SIGNED): (1.0 / 256, -128),
    ("TANH", OT.TENSOR_QUANT8_ASYMM): (1.0 / 128, 128),
    ("TANH", OT.TENSOR_QUANT8_ASYMM_SIGNED): (1.0 / 128, 0),
}


def shape_of_input(ctx: OperationContext):
    return [ctx.input_shape(0)]


# ------------------------------------------------------------------ RELU, RELU1, RELU6

def validate_relu(ctx: OperationContext):
    check_rank(ctx, 0, (1, 4))
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")


def execute_relu(ctx: OperationContext):
    x = ctx.input(0)
    info = ctx.inputs[0]
    if info.type in QUANT8_TENSORS:
        lo, hi = activation_range_quant(CLAMP_OPERATIONS[ctx.name], ctx.outputs[0])
        return [np.clip(x, lo, hi).astype(x.dtype)]
    lo, hi = activation_range_float(CLAMP_OPERATIONS[ctx.name])
    return [np.clip(x, lo, hi).astype(x.dtype)]


# ------------------------------------------------------------------ LOGISTIC, TANH

def validate_logistic_tanh(ctx: OperationContext):
    check_rank(ctx, 0, (1, 4))
    t = ctx.inputs[0].type
    if t in QUANT8_TENSORS:
        ctx.require(ctx.inputs[0].scale > 0, "input 0 must have a scale > 0")
        scale, zp = _FIXED_OUTPUT_QUANT[(ctx.name, t)]
        check_fixed_output_quant(ctx, scale, zp, f"output 0 of a {t.name} {ctx.name}")


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def execute_logistic_tanh(ctx: OperationContext):
    x = ctx.input(0)
    info, out = ctx.inputs[0], ctx.outputs[0]
    fn = _sigmoid if ctx.name == "LOGISTIC" else np.tanh
    if info.type in QUANT8_TENSORS:
        scale, zp = _FIXED_OUTPUT_QUANT[(ctx.name, info.type)]
        real = fn(dequantize(info, x).astype(np.float64))
        lo, hi = qrange(out.type)
        return [np.clip(round_half_away(real / scale) + zp, lo, hi).astype(out.dtype)]
    return [fn(x.astype(np.float32)).astype(x.dtype)]


# ------------------------------------------------------------------ ELU, HARD_SWISH

def validate_elu(ctx: OperationContext):
    alpha = ctx.scalar(1)
    if alpha is not None:
        ctx.require(np.isfinite(alpha), f"input 1 (alpha) must be finite, got {alpha}")


def execute_elu(ctx: OperationContext):
    x = ctx.input(0)
    alpha = np.float32(ctx.scalar(1))
    xf = x.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        # the spec's formula as written; fmin keeps 0 where alpha * inf is NaN (alpha == 0)
        y = np.maximum(xf, 0) + np.fmin(np.float32(0), alpha * (np.exp(xf) - 1))
    return [y.astype(x.dtype)]


def validate_hard_swish(ctx: OperationContext):
    if ctx.inputs[0].type in QUANT8_TENSORS:
        ctx.require(ctx.inputs[0].scale > 0, "input 0 must have a scale > 0")
        ctx.require(ctx.outputs[0].scale > 0, "output 0 must have a scale > 0")


def execute_hard_swish(ctx: OperationContext):
    x = ctx.input(0)
    if ctx.inputs[0].type in QUANT8_TENSORS:
        return [hard_swish_quant(x, ctx.inputs[0], ctx.outputs[0])]
    xf = x.astype(np.float32)
    y = xf * np.minimum(np.float32(6), np.maximum(np.float32(0), xf + 3)) / np.float32(6)
    return [y.astype(x.dtype)]


# ------------------------------------------------------------------ PRELU

def validate_prelu(ctx: OperationContext):
    check_broadcastable(ctx, 0, 1)
    if ctx.inputs[0].type in QUANT8_TENSORS:
        for k in (0, 1):
            ctx.require(ctx.inputs[k].scale > 0, f"input {k} must have a scale > 0")
        ctx.require(ctx.outputs[0].scale > 0, "output 0 must have a scale > 0")


def prepare_prelu(ctx: OperationContext):
    return [broadcast_shape(ctx.input_shape(0), ctx.input_shape(1))]


def execute_prelu(ctx: OperationContext):
    x, alpha = ctx.input(0), ctx.input(1)
    shape = ctx.outputs[0].shape
    if ctx.inputs[0].type in QUANT8_TENSORS:
        y = prelu_quant(x, alpha, ctx.inputs[0], ctx.inputs[1], ctx.outputs[0])
        return [np.broadcast_to(y, shape).astype(y.dtype)]
    xf, af = x.astype(np.float32), alpha.astype(np.float32)
    y = np.where(xf >= 0, xf, xf * af)
    return [np.broadcast_to(y, shape).astype(x.dtype)]


for _op in CLAMP_OPERATIONS:
    register(_op, execute_relu, signatures=_unary_sigs("RELU"), validate=validate_relu,
             prepare=shape_of_input, family="activation")
for _op in ("LOGISTIC", "TANH"):
    register(_op, execute_logistic_tanh, signatures=_unary_sigs(_op),
             validate=validate_logistic_tanh, prepare=shape_of_input, family="activation")
register("ELU", execute_elu, signatures=ELU_SIGNATURES, validate=validate_elu,
         prepare=shape_of_input, family="activation")
register("HARD_SWISH", execute_hard_swish, signatures=_unary_sigs("HARD_SWISH"),
         validate=validate_hard_swish, prepare=shape_of_input, family="activation")
register("PRELU", execute_prelu, signatures=PRELU_SIGNATURES, validate=validate_prelu,
         prepare=prepare_prelu, family="activation")
