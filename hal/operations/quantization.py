"""QUANTIZE, DEQUANTIZE: conversions between real and quantized tensors.

| op         | input 0                                       | output 0                        |
|------------|-----------------------------------------------|---------------------------------|
| QUANTIZE   | F32, F16 (1.2); rank >= 1                     | Q8 (1.2), Q8 signed (1.3)       |
| DEQUANTIZE | Q8 (1.0); QUANT8_SYMM, QUANT8_SYMM_PER_CHANNEL| F32 (1.0; 1.2 for the inputs    |
|            | (1.2); Q8 signed (1.3); rank <= 4             | since 1.2), F16 (1.2)           |

QUANTIZE: output = clamp(round(input / scale) + zero_point) with TFLite's built-in kernels'
bits: their vector code takes the flat tensor 8 values at a time, as input * (1 / scale) in
float32 rounded half to even; the values left over (the last size % 8) go through the scalar
code, input / scale in double rounded half away from zero (std::round). DEQUANTIZE:
output = (input - zero_point) * scale in float32 (per channel: input * scales[channel]),
cast to the output type; per-tensor with TFLite's bits: its vector code (the flat tensor 8
values at a time) computes input * scale - zero_point * scale, the scalar code the values left
over. Both take zero-sized tensors.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_rank, check_same_shape, dequantize, qrange
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

QUANTIZE_SIGNATURES = [sig(v, [i], [o]) for v, i, o in [
    ("V1_2", "TENSOR_FLOAT32", "TENSOR_QUANT8_ASYMM"),
    ("V1_2", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM"),
    ("V1_3", "TENSOR_FLOAT32", "TENSOR_QUANT8_ASYMM_SIGNED"),
    ("V1_3", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM_SIGNED")]]
DEQUANTIZE_SIGNATURES = [sig(v, [i], [o]) for v, i, o in [
    ("V1_0", "TENSOR_QUANT8_ASYMM", "TENSOR_FLOAT32"),
    ("V1_2", "TENSOR_QUANT8_ASYMM", "TENSOR_FLOAT16"),
    ("V1_2", "TENSOR_QUANT8_SYMM", "TENSOR_FLOAT32"),
    ("V1_2", "TENSOR_QUANT8_SYMM", "TENSOR_FLOAT16"),
    ("V1_2", "TENSOR_QUANT8_SYMM_PER_CHANNEL", "TENSOR_FLOAT32"),
    ("V1_2", "TENSOR_QUANT8_SYMM_PER_CHANNEL", "TENSOR_FLOAT16"),
    ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_FLOAT32"),
    ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_FLOAT16")]]


def validate(ctx: OperationContext):
    if ctx.name == "DEQUANTIZE":
        check_rank(ctx, 0, (1, 4))
        if ctx.inputs[0].channel_quant is not None and ctx.inputs[0].rank:
            dim = ctx.inputs[0].channel_quant.channel_dim
            ctx.require(0 <= dim < ctx.inputs[0].rank,
                        f"input 0 channel dimension {dim} is out of range")
    check_same_shape(ctx)


def prepare(ctx: OperationContext):
    return [ctx.input_shape(0)]


def _quantize_rounded(x, scale) -> np.ndarray:
    """round(x / scale) as TFLite's QUANTIZE kernel rounds it (see the module doc)."""
    flat = x.astype(np.float32).reshape(-1)
    vec = (flat.size // 8) * 8
    head = np.rint(flat[:vec] * (np.float32(1.0) / scale)).astype(np.float64)
    tail = flat[vec:].astype(np.float64) / np.float64(scale)
    tail = np.sign(tail) * np.floor(np.abs(tail) + 0.5)
    return np.concatenate([head, tail]).reshape(x.shape)


def _dequantize_per_tensor(x, scale, zero_point: int) -> np.ndarray:
    """(x - zero_point) * scale as TFLite's DEQUANTIZE kernel computes it (module doc)."""
    flat = x.astype(np.float32).reshape(-1)
    vec = (flat.size // 8) * 8
    head = flat[:vec] * scale - np.float32(np.float32(zero_point) * scale)
    tail = (flat[vec:] - np.float32(zero_point)) * scale
    return np.concatenate([head, tail]).reshape(x.shape)


def execute(ctx: OperationContext):
    x = ctx.input(0)
    out = ctx.outputs[0]
    if ctx.name == "DEQUANTIZE":
        info = ctx.inputs[0]
        if info.channel_quant is not None:
            return [dequantize(info, x).astype(out.dtype)]
        return [_dequantize_per_tensor(x, np.float32(info.scale), info.zero_point)
                .astype(out.dtype)]
    lo, hi = qrange(out.type)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        q = _quantize_rounded(x, np.float32(out.scale)) + out.zero_point
        q = np.where(np.isnan(q), hi, q)
    return [np.clip(q, lo, hi).astype(out.dtype)]


register("QUANTIZE", execute, signatures=QUANTIZE_SIGNATURES, validate=validate,
         prepare=prepare, family="quantization")
register("DEQUANTIZE", execute, signatures=DEQUANTIZE_SIGNATURES, validate=validate,
         prepare=prepare, family="quantization")
