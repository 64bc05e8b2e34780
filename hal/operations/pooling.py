"""AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D: windowed reductions per channel.

| input | explicit padding form            | implicit padding form               |
|-------|----------------------------------|-------------------------------------|
| 0     | input [batches, h, w, depth]     | idem                                |
| 1..4  | padding left, right, top, bottom | 1: padding scheme (1 SAME, 2 VALID) |
| 5, 6  | stride width, height             | 2, 3: stride width, height          |
| 7, 8  | filter width, height             | 4, 5: filter width, height          |
| 9     | fused activation                 | 6: fused activation                 |
| 10    | NCHW layout (BOOL, since 1.2)    | 7: NCHW layout (BOOL, since 1.2)    |

Types: FLOAT32 (1.0), FLOAT16 (1.2) for all three; QUANT8_ASYMM (1.0) and
QUANT8_ASYMM_SIGNED (1.3) for AVERAGE_POOL_2D and MAX_POOL_2D, whose quantized output has the
input's scale and zero point. Averages count only the window elements inside the input
(padding is excluded), and the quantized average rounds half away from zero in integers.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import activation_range_float, activation_range_quant, check_same_quant
from hal.operations.context import OperationContext
from hal.operations.conv2d import (
    BOOL,
    F16,
    F32,
    INT,
    QA,
    QS,
    check_window,
    from_nhwc,
    is_quant,
    layout_shape,
    nhwc_shape,
    pad_nhwc,
    parse_window,
    resolve_padding,
    to_nhwc,
    windows,
)
from hal.operations.registry import register, sig
from hal.types import HalVersion

_FORMS = [("V1_0", [INT] * 9), ("V1_2", [INT] * 9 + [BOOL]),
          ("V1_0", [INT] * 6), ("V1_2", [INT] * 6 + [BOOL])]
_TYPES = [("V1_0", F32), ("V1_0", QA), ("V1_2", F16), ("V1_3", QS)]


def _signatures(types):
    return [sig(max(HalVersion[tv], HalVersion[fv]), [t, *scalars], [t])
            for tv, t in types for fv, scalars in _FORMS]


def pool_params(ctx):
    return parse_window(ctx, 1, ctx.num_inputs() >= 10,
                        extra_names=("filter width", "filter height"), dilation=False)


def validate(ctx: OperationContext):
    p = pool_params(ctx)
    check_window(ctx, p, positive=("filter width", "filter height"))
    r = ctx.inputs[0].rank
    ctx.require(r in (0, 4), f"input 0 must have rank 4, got rank {r}")
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")


def prepare(ctx: OperationContext):
    p = pool_params(ctx)
    check_window(ctx, p, positive=("filter width", "filter height"))
    n, h, w, c = nhwc_shape(ctx.input_shape(0), p.nchw)
    fw, fh = p.extra
    _, (oh, ow) = resolve_padding(p, h, w, fh, fw)
    return [layout_shape(n, oh, ow, c, p.nchw)]


def _window_counts(size, filt, stride, head, out):
    """Number of window taps inside the input, per output position along one axis."""
    pos = np.arange(out)[:, None] * stride + np.arange(filt)[None, :] - head
    return ((pos >= 0) & (pos < size)).sum(axis=1)


def _pool(ctx, kind):
    p = pool_params(ctx)
    inp, out = ctx.inputs[0], ctx.outputs[0]
    x = to_nhwc(ctx.input(0), p.nchw)
    n, h, w, c = x.shape
    fw, fh = p.extra
    pads, (oh, ow) = resolve_padding(p, h, w, fh, fw)
    quant = is_quant(inp.type)
    if kind == "MAX":
        xp = pad_nhwc(x.astype(np.int32 if quant else np.float64), pads,
                      -(1 << 20) if quant else -np.inf)
        acc = np.full((n, oh, ow, c), xp.min() if xp.size else 0, dtype=xp.dtype)
        for _, _, s in windows(xp, fh, fw, oh, ow, p):
            np.maximum(acc, s, out=acc)
        if quant:
            lo, hi = activation_range_quant(p.act, out)
            return np.clip(acc, lo, hi).astype(out.dtype), p
        return np.clip(acc, *activation_range_float(p.act)).astype(out.dtype), p
    cnt = (_window_counts(h, fh, p.stride_h, pads[0], oh)[:, None]
           * _window_counts(w, fw, p.stride_w, pads[2], ow)[None, :])[None, :, :, None]
    xv = x.astype(np.int64 if quant else np.float64)
    if kind == "L2":
        xv = xv * xv
    xp = pad_nhwc(xv, pads)
    acc = np.zeros((n, oh, ow, c), dtype=xp.dtype)
    for _, _, s in windows(xp, fh, fw, oh, ow, p):
        acc += s
    safe = np.maximum(cnt, 1)
    if quant:
        half = safe // 2
        num = acc + np.where(acc > 0, half, -half)
        q = np.sign(num) * (np.abs(num) // safe)
        lo, hi = activation_range_quant(p.act, out)
        return np.clip(q, lo, hi).astype(out.dtype), p
    y = acc / safe
    if kind == "L2":
        y = np.sqrt(y)
    return np.clip(y, *activation_range_float(p.act)).astype(out.dtype), p


def _executor(kind):
    def execute(ctx: OperationContext):
        y, p = _pool(ctx, kind)
        return [from_nhwc(y, p.nchw)]
    return execute


for _op, _kind, _types in (("AVERAGE_POOL_2D", "AVERAGE", _TYPES), ("MAX_POOL_2D", "MAX", _TYPES),
                           ("L2_POOL_2D", "L2", [_TYPES[0], _TYPES[2]])):
    register(_op, _executor(_kind), signatures=_signatures(_types), validate=validate,
             prepare=prepare, family="pooling")
