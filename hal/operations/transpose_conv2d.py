"""TRANSPOSE_CONV_2D: the transpose (gradient) of CONV_2D, sometimes called deconvolution.

| input | explicit padding form              | implicit padding form                      |
|-------|------------------------------------|--------------------------------------------|
| 0     | input [batches, h, w, depth_in]    | idem                                       |
| 1     | filter [depth_out, fh, fw, depth_in] | idem                                     |
| 2     | bias [depth_out]                   | idem                                       |
| 3..6  | padding left, right, top, bottom   | 3: TENSOR_INT32 output shape (4 elements)  |
| 7, 8  | stride width, height               | 4: padding scheme; 5, 6: stride w, h       |
| 9     | fused activation                   | 7: fused activation                        |
| 10    | NCHW layout (BOOL)                 | 8: NCHW layout (BOOL)                      |

Explicit: out = stride * (in - 1) + filter - pad_head - pad_tail. Implicit: the output shape
tensor gives the output (in the operation's layout); SAME padding is what CONV_2D would use
from that output size. Types as CONV_2D, all since 1.2 (QUANT8_ASYMM_SIGNED since 1.3);
a per-channel filter has channel dimension 0.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import same_padding
from hal.operations.context import OperationContext
from hal.operations.conv2d import (
    BOOL,
    CONV_CONFIGS_V1_2,
    I32,
    INT,
    OT,
    centered,
    check_filter_depth,
    check_window,
    conv_result,
    depthwise_upward,
    layout_shape,
    nhwc_shape,
    parse_window,
    to_nhwc,
    validate_conv,
)
from hal.operations.registry import register, sig


def _signatures():
    out = []
    for v, ti, tf, tb, to in CONV_CONFIGS_V1_2:
        out.append(sig(v, [ti, tf, tb] + [INT] * 7 + [BOOL], [to]))
        out.append(sig(v, [ti, tf, tb, I32] + [INT] * 4 + [BOOL], [to]))
    return out


SIGNATURES = _signatures()


def transpose_conv_params(ctx):
    explicit = ctx.num_inputs() == 11
    return parse_window(ctx, 3 if explicit else 4, explicit, dilation=False)


def output_geometry(ctx, p, h, w, fh, fw):
    """(top, left) padding and the output (height, width)."""
    if p.explicit:
        left, right, top, bottom = p.pads
        oh = p.stride_h * (h - 1) + fh - top - bottom
        ow = p.stride_w * (w - 1) + fw - left - right
    else:
        shape = [int(v) for v in ctx.input(3).reshape(-1)]
        ctx.require(len(shape) == 4, f"input 3 (output shape) must have 4 elements, got "
                    f"{len(shape)}")
        _, oh, ow, _ = nhwc_shape(shape, p.nchw)
        top = left = 0
        if p.scheme == 1:
            top = same_padding(oh, fh, p.stride_h)[0]
            left = same_padding(ow, fw, p.stride_w)[0]
    if oh <= 0 or ow <= 0:
        ctx.fail(f"the output size {oh}x{ow} is not positive")
    return top, left, oh, ow


def validate(ctx: OperationContext):
    p = transpose_conv_params(ctx)
    validate_conv(ctx, p, 0)
    if not p.explicit:
        shp = ctx.inputs[3]
        ctx.require(shp.rank in (0, 1), f"input 3 (output shape) must have rank 1, got rank "
                    f"{shp.rank}")
        ctx.require(shp.rank == 0 or shp.shape[0] in (0, 4),
                    f"input 3 (output shape) must have 4 elements, got {shp.shape[0]}")


def prepare(ctx: OperationContext):
    p = transpose_conv_params(ctx)
    check_window(ctx, p)
    n, h, w, c = nhwc_shape(ctx.input_shape(0), p.nchw)
    o, fh, fw, fc = ctx.input_shape(1)
    check_filter_depth(ctx, c, fc)
    _, _, oh, ow = output_geometry(ctx, p, h, w, fh, fw)
    return [layout_shape(n, oh, ow, o, p.nchw)]


def execute(ctx: OperationContext):
    p = transpose_conv_params(ctx)
    inp, fi = ctx.inputs[0], ctx.inputs[1]
    x = centered(inp, to_nhwc(ctx.input(0), p.nchw))
    n, h, w, c = x.shape
    o, fh, fw, _ = fi.shape
    top, left, oh, ow = output_geometry(ctx, p, h, w, fh, fw)
    f = centered(fi, ctx.input(1))
    # every input pixel scatters filter * value into a fh x fw window of the output
    cols = (x.reshape(-1, c) @ f.reshape(-1, c).T).reshape(n, h, w, o, fh, fw)
    sh, sw = p.stride_h, p.stride_w
    full_h = max((h - 1) * sh + fh, top + oh)
    full_w = max((w - 1) * sw + fw, left + ow)
    buf = np.zeros((n, full_h, full_w, o), dtype=np.float64)
    for i in range(fh):
        for j in range(fw):
            buf[:, i:i + (h - 1) * sh + 1:sh, j:j + (w - 1) * sw + 1:sw, :] += cols[..., i, j]
    acc = buf[:, top:top + oh, left:left + ow, :]
    return conv_result(ctx, acc, p, transpose_upward(inp, acc.shape))


def transpose_upward(inp, shape):
    """Where TFLite's TRANSPOSE_CONV output stage rounds the ties of its final shift upward
    (its vector code): uint8, the flat NHWC output 16 values at a time, not the values left
    over; int8, the whole blocks of 8 channels (as DEPTHWISE_CONV_2D); the rest away."""
    if inp.type == OT.TENSOR_QUANT8_ASYMM:
        size = int(np.prod(shape))
        return np.arange(size).reshape(shape) < size // 16 * 16
    return depthwise_upward(inp, shape[-1])


register("TRANSPOSE_CONV_2D", execute, signatures=SIGNATURES, validate=validate,
         prepare=prepare, family="transpose_conv2d")
