"""org.clnn.onnx FMA: a fused multiply-add of three float32 tensors, rounded once.

| input 0 | input 1 | input 2 | output 0 |
|---|---|---|---|
| TENSOR_FLOAT32 x, rank <= 4 | TENSOR_FLOAT32 y | TENSOR_FLOAT32 z | TENSOR_FLOAT32 |

output = x * y + z with a single rounding to nearest even (IEEE 754 fusedMultiplyAdd, C's
``fmaf``, OpenCL C's ``fma``), the three inputs broadcast NumPy-style (the output has their
broadcast shape, rank <= 4). NNAPI's MUL then ADD
round twice: onnxruntime's x86 QLinearAdd computes with fused multiply-adds (AVX2 ``vfmadd``),
and the "onnxruntime" mode of the ONNX importer reproduces it with this operation
(clnn/onnx/ops_qfloat.py).

The reference computes it exactly in float64 (:func:`fma_float32`).
"""

from __future__ import annotations

import numpy as np

from hal.operations._onnx_ext import op
from hal.operations.common import broadcast_shape, check_broadcastable
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

FMA = op("FMA")
F32 = "TENSOR_FLOAT32"


def fma_float32(x, y, z) -> np.ndarray:
    """float32 fma(x, y, z), broadcast, exactly rounded (to nearest, ties to even).

    The product of two float32 values is exact in float64 (24 + 24 significant bits <= 53,
    exponents well inside float64's range). Its float64 sum with z rounds once; TwoSum gives
    that rounding's error exactly, and a nonzero error moves an even last bit one ulp
    towards the exact sum: the sum rounded to odd, which rounded again to float32 (24 bits,
    at least two fewer than 53) is the exact sum rounded once. Non-finite sums (inf, NaN)
    are left as float64 computes them, as fma does."""
    x, y, z = (np.asarray(v, np.float32).astype(np.float64) for v in (x, y, z))
    with np.errstate(all="ignore"):  # inf and NaN results are fma's too
        p = x * y
        s = p + z
        t = s - p
        err = (p - (s - t)) + (z - t)
        bits = np.array(s, dtype=np.float64, copy=True).view(np.int64)
        inexact = np.isfinite(s) & (err != 0) & ((bits & 1) == 0)
        # sign-magnitude: +1 on the bits moves away from zero, -1 towards it
        step = np.where((err > 0) == (s > 0), 1, -1)
        bits = np.where(inexact, bits + step, bits)
        return bits.view(np.float64).astype(np.float32)


def validate(ctx: OperationContext):
    for i in range(3):
        ctx.require(ctx.inputs[i].rank <= 4,
                    f"input {i} must have rank <= 4, got rank {ctx.inputs[i].rank}")
    for i, j in ((0, 1), (0, 2), (1, 2)):
        check_broadcastable(ctx, i, j)


def prepare(ctx: OperationContext):
    shape = broadcast_shape(ctx.input_shape(0), ctx.input_shape(1))
    return [broadcast_shape(shape, ctx.input_shape(2))]


def execute(ctx: OperationContext):
    x, y, z = (ctx.input(i) for i in range(3))
    shape = prepare(ctx)[0]
    return [np.broadcast_to(fma_float32(x, y, z), shape).astype(np.float32)]


register(FMA, execute, signatures=[sig("V1_3", [F32, F32, F32], [F32])], validate=validate,
         prepare=prepare, family="onnx_fma")
