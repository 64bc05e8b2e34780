"""DEPTH_TO_SPACE, SPACE_TO_DEPTH: move blocks of block_size x block_size between depth and
the spatial dimensions of a 4-D tensor.

| input | meaning                                                            |
|-------|--------------------------------------------------------------------|
| 0     | 4-D tensor [batches, height, width, depth] (NHWC, or NCHW by input 2) |
| 1     | INT32 block_size, >= 1                                             |
| 2     | optional BOOL layout, true = NCHW (since 1.2)                      |

DEPTH_TO_SPACE: depth must be a multiple of block_size^2; output
[batches, height * block_size, width * block_size, depth / block_size^2].
SPACE_TO_DEPTH: height and width must be multiples of block_size; output
[batches, height / block_size, width / block_size, depth * block_size^2].
Output 0 has the type and quantization of input 0.

Types: TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM (1.0), TENSOR_FLOAT16 and the layout input
(1.2), TENSOR_QUANT8_ASYMM_SIGNED (1.3).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_rank, check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_TYPES = [("V1_0", "TENSOR_FLOAT32"), ("V1_0", "TENSOR_QUANT8_ASYMM"),
          ("V1_2", "TENSOR_FLOAT16"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
SIGNATURES = ([sig(v, [t, "INT32"], [t]) for v, t in _TYPES]
              + [sig(max(v, "V1_2"), [t, "INT32", "BOOL"], [t]) for v, t in _TYPES])


def _nchw(ctx: OperationContext) -> bool:
    return bool(ctx.scalar(2, False))


def _nhwc_shape(ctx: OperationContext):
    s = ctx.input_shape(0)
    if len(s) != 4:
        return None
    return (s[0], s[2], s[3], s[1]) if _nchw(ctx) else tuple(s)


def _out_nhwc(ctx: OperationContext, shape, block: int):
    n, h, w, c = shape
    if ctx.name == "DEPTH_TO_SPACE":
        ctx.require(c % (block * block) == 0,
                    f"input 0 depth {c} must be a multiple of block_size^2 = {block * block}")
        return n, h * block, w * block, c // (block * block)
    ctx.require(h % block == 0 and w % block == 0,
                f"input 0 height {h} and width {w} must be multiples of block_size {block}")
    return n, h // block, w // block, c * block * block


def validate(ctx: OperationContext):
    check_rank(ctx, 0, 4)
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")
    block = ctx.scalar(1)
    if block is None:
        return
    ctx.require(block >= 1, f"input 1 (block_size) must be >= 1, got {block}")
    shape = _nhwc_shape(ctx)
    if shape is None:
        return
    n, h, w, c = shape
    if ctx.name == "DEPTH_TO_SPACE" and c:
        _out_nhwc(ctx, (n, h, w, c), block)
    if ctx.name == "SPACE_TO_DEPTH" and h and w:
        _out_nhwc(ctx, (n, h, w, c), block)


def prepare(ctx: OperationContext):
    block = ctx.scalar(1)
    ctx.require(block is not None and block >= 1, f"input 1 (block_size) must be >= 1, got {block}")
    n, h, w, c = _out_nhwc(ctx, _nhwc_shape(ctx), block)
    return [(n, c, h, w) if _nchw(ctx) else (n, h, w, c)]


def execute(ctx: OperationContext):
    x = ctx.input(0)
    nchw = _nchw(ctx)
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    b = ctx.scalar(1)
    n, h, w, c = x.shape
    out = _out_nhwc(ctx, x.shape, b)
    if ctx.name == "DEPTH_TO_SPACE":
        y = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    else:
        y = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    y = y.reshape(out)
    if nchw:
        y = y.transpose(0, 3, 1, 2)
    return [np.ascontiguousarray(y)]


for _op in ("DEPTH_TO_SPACE", "SPACE_TO_DEPTH"):
    register(_op, execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
             family="depth_space")
