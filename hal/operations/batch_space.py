"""BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND: move blocks between the batch and the spatial
dimensions of a 4-D tensor.

BATCH_TO_SPACE_ND

| input | meaning                                                              |
|-------|----------------------------------------------------------------------|
| 0     | 4-D tensor [batches, height, width, depth] (NHWC, or NCHW by input 2)|
| 1     | TENSOR_INT32 [2]: block sizes (height, width), each >= 1             |
| 2     | optional BOOL layout, true = NCHW (since 1.2)                        |

Output [batches / (bh * bw), height * bh, width * bw, depth].

SPACE_TO_BATCH_ND

| input | meaning                                                              |
|-------|----------------------------------------------------------------------|
| 0     | 4-D tensor [batches, height, width, depth] (NHWC, or NCHW by input 3)|
| 1     | TENSOR_INT32 [2]: block sizes (height, width), each >= 1             |
| 2     | TENSOR_INT32 [2, 2]: paddings (front, back) per spatial dim, >= 0    |
| 3     | optional BOOL layout, true = NCHW (since 1.2)                        |

The padded height and width must be multiples of the block sizes; output
[batches * bh * bw, padded_height / bh, padded_width / bw, depth]. Quantized padding is the
zero point (the logical zero). Output 0 has the type and quantization of input 0.

Types: TENSOR_FLOAT32 and TENSOR_QUANT8_ASYMM (1.1), TENSOR_FLOAT16 and the layout input
(1.2), TENSOR_QUANT8_ASYMM_SIGNED (1.3).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import QUANT_RANGE, check_rank, check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_TYPES = [("V1_1", "TENSOR_FLOAT32"), ("V1_1", "TENSOR_QUANT8_ASYMM"),
          ("V1_2", "TENSOR_FLOAT16"), ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED")]
_B2S = (["TENSOR_INT32"], 2)
_S2B = (["TENSOR_INT32", "TENSOR_INT32"], 3)
_PARAMS = {"BATCH_TO_SPACE_ND": _B2S, "SPACE_TO_BATCH_ND": _S2B}


def _signatures(op: str):
    params, _ = _PARAMS[op]
    return ([sig(v, [t] + params, [t]) for v, t in _TYPES]
            + [sig(max(v, "V1_2"), [t] + params + ["BOOL"], [t]) for v, t in _TYPES])


def _nchw(ctx: OperationContext) -> bool:
    return bool(ctx.scalar(_PARAMS[ctx.name][1], False))


def _check_params(ctx: OperationContext):
    """Checks the shapes and known values of the block and padding tensors."""
    bshape = ctx.input_shape(1)
    ctx.require(len(bshape) in (0, 1) and (not bshape or bshape[0] in (0, 2)),
                f"input 1 (block sizes) must have shape [2], got {list(bshape)}")
    if ctx.value_known(1):
        block = ctx.input(1).reshape(-1)
        ctx.require(block.size == 2, f"input 1 (block sizes) must hold 2 values, got {block.size}")
        ctx.require(bool(np.all(block >= 1)),
                    f"input 1 (block sizes) must be >= 1, got {block.tolist()}")
    if ctx.name == "SPACE_TO_BATCH_ND":
        pshape = ctx.input_shape(2)
        ctx.require(len(pshape) in (0, 2) and (not pshape or pshape[0] in (0, 2)
                                               and pshape[1] in (0, 2)),
                    f"input 2 (paddings) must have shape [2, 2], got {list(pshape)}")
        if ctx.value_known(2):
            pads = ctx.input(2)
            ctx.require(pads.size == 4, f"input 2 (paddings) must hold 4 values, got {pads.size}")
            ctx.require(bool(np.all(pads >= 0)),
                        f"input 2 (paddings) must be >= 0, got {pads.reshape(-1).tolist()}")


def _out_nhwc(ctx: OperationContext, shape):
    n, h, w, c = shape
    bh, bw = (int(v) for v in ctx.input(1).reshape(-1))
    if ctx.name == "BATCH_TO_SPACE_ND":
        ctx.require(n % (bh * bw) == 0,
                    f"input 0 batches {n} must be a multiple of the block size product {bh * bw}")
        return n // (bh * bw), h * bh, w * bw, c
    (pt, pb), (pl, pr) = ctx.input(2).reshape(2, 2).tolist()
    hp, wp = h + pt + pb, w + pl + pr
    ctx.require(hp % bh == 0 and wp % bw == 0,
                f"input 0 padded by input 2 (paddings) has height {hp} and width {wp}, not "
                f"multiples of input 1 (block sizes) {bh} and {bw}")
    return n * bh * bw, hp // bh, wp // bw, c


def validate(ctx: OperationContext):
    check_rank(ctx, 0, 4)
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")
    _check_params(ctx)


def prepare(ctx: OperationContext):
    _check_params(ctx)
    s = ctx.input_shape(0)
    nchw = _nchw(ctx)
    n, h, w, c = _out_nhwc(ctx, (s[0], s[2], s[3], s[1]) if nchw else s)
    return [(n, c, h, w) if nchw else (n, h, w, c)]


def execute(ctx: OperationContext):
    _check_params(ctx)
    x = ctx.input(0)
    nchw = _nchw(ctx)
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    out = _out_nhwc(ctx, x.shape)
    bh, bw = (int(v) for v in ctx.input(1).reshape(-1))
    n, h, w, c = x.shape
    if ctx.name == "BATCH_TO_SPACE_ND":
        y = x.reshape(bh, bw, n // (bh * bw), h, w, c).transpose(2, 3, 0, 4, 1, 5)
    else:
        info = ctx.inputs[0]
        pad_value = info.zero_point if info.type in QUANT_RANGE else 0
        (pt, pb), (pl, pr) = ctx.input(2).reshape(2, 2).tolist()
        xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=pad_value)
        hp, wp = xp.shape[1], xp.shape[2]
        y = xp.reshape(n, hp // bh, bh, wp // bw, bw, c).transpose(2, 4, 0, 1, 3, 5)
    y = y.reshape(out)
    if nchw:
        y = y.transpose(0, 3, 1, 2)
    return [np.ascontiguousarray(y)]


for _op in _PARAMS:
    register(_op, execute, signatures=_signatures(_op), validate=validate, prepare=prepare,
             family="batch_space")
