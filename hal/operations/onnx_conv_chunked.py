"""org.clnn.onnx CONV_CHUNKED: a float32 2-D convolution whose sums are computed in a stated
order, so that a runtime's float convolution can be reproduced bit for bit.

| input | what |
|---|---|
| 0 | TENSOR_FLOAT32 x [N, C, H, W] (NCHW) |
| 1 | TENSOR_FLOAT32 w [O, C, KH, KW] (ONNX's filter layout) |
| 2 | TENSOR_FLOAT32 bias [O] |
| 3 | TENSOR_INT32 chunk [OH * OW]: at each output position, the terms per partial sum (>= 1) |
| 4 - 7 | INT32 pads: top, left, bottom, right |
| 8, 9 | INT32 strides: height, width |
| 10, 11 | INT32 dilations: height, width |

Output 0: TENSOR_FLOAT32 [N, O, OH, OW].

The terms of an output y[n, o, i, j] are taken in the order k = (c * KH + ky) * KW + kx (the
im2col order: channel, then kernel row, then kernel column), the product w[o, c, ky, kx] *
x[n, c, i * sh + ky * dh - pt, j * sw + kx * dw - pl] (0 in the padding). With S = chunk[i *
OW + j], the terms are cut into runs [0, S), [S, 2 S), ...; each run is summed from 0 by
fused multiply-adds, p = fma(w, x, p), one rounding each, and the runs' sums are added in
order (t = t + p, float32). The bias is added last (float32). This is MLAS's float
convolution on x86 (im2col, or the input itself for a pointwise convolution, then its SGEMM
kernels, whose accumulators are single lanes fed by vfmadd231ps over a K panel; the panels
of K are added into C in order; the bias is added by MlasActivation): the "onnxruntime" mode
of the ONNX importer computes onnxruntime's float Conv with it (clnn/onnx/mlas_conv.py).

The reference emulates fma exactly (float64 sum of the exact float64 product; where that sum
lies on a float32 rounding midpoint, its TwoSum error decides: hal.operations.onnx_fma's
argument), one vectorized step per term.
"""

from __future__ import annotations

import numpy as np

from hal.operations._onnx_ext import op
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

CONV_CHUNKED = op("CONV_CHUNKED")
F32, I32 = "TENSOR_FLOAT32", "TENSOR_INT32"


def geometry(ctx: OperationContext) -> tuple[list[int], list[int], list[int]]:
    """(pads top, left, bottom, right; strides h, w; dilations h, w) of the operation."""
    vals = [int(ctx.scalar(i)) for i in range(4, 12)]
    return vals[:4], vals[4:6], vals[6:8]


def output_hw(ctx: OperationContext) -> tuple[int, int]:
    (pt, pl, pb, pr), (sh, sw), (dh, dw) = geometry(ctx)
    _, _, h, w = ctx.input_shape(0)
    _, _, kh, kw = ctx.input_shape(1)
    return ((h + pt + pb - (kh - 1) * dh - 1) // sh + 1,
            (w + pl + pr - (kw - 1) * dw - 1) // sw + 1)


def validate(ctx: OperationContext):
    ctx.require(len(ctx.input_shape(0)) == 4, f"input 0 must be [N, C, H, W], got "
                f"{ctx.input_shape(0)}")
    ctx.require(len(ctx.input_shape(1)) == 4, f"input 1 must be [O, C, KH, KW], got "
                f"{ctx.input_shape(1)}")
    o, c = ctx.input_shape(1)[:2]
    ctx.require(c == ctx.input_shape(0)[1], f"the filter's {c} channels must equal the "
                f"input's {ctx.input_shape(0)[1]}")
    ctx.require(tuple(ctx.input_shape(2)) == (o,), f"the bias must be [{o}], got "
                f"{ctx.input_shape(2)}")
    (pads, strides, dils) = geometry(ctx)
    ctx.require(min(pads) >= 0, f"inputs 4-7 (pads) must be >= 0, got {pads}")
    ctx.require(min(strides + dils) >= 1, f"inputs 8-11 (strides {strides}, dilations "
                f"{dils}) must be >= 1")
    oh, ow = output_hw(ctx)
    ctx.require(oh >= 1 and ow >= 1, f"the output would be {oh} x {ow}")
    ctx.require(tuple(ctx.input_shape(3)) == (oh * ow,), f"chunk must be [{oh * ow}] (one per "
                f"output position), got {ctx.input_shape(3)}")


def prepare(ctx: OperationContext):
    oh, ow = output_hw(ctx)
    return [(ctx.input_shape(0)[0], ctx.input_shape(1)[0], oh, ow)]


def fma_f32(x, y, z):
    """float32 fma(x, y, z), broadcast, exactly rounded: the float64 sum of the exact
    product, rounded to float32, except where that float64 sum lies on a float32 midpoint and
    was itself inexact (the only place two roundings can differ: a midpoint strictly
    between the exact sum and its float64 rounding would be nearer to it) or is near the
    float32 subnormals: there the TwoSum error moves it one float64 ulp towards the exact
    sum."""
    p = x.astype(np.float64) * y
    s = p + z
    bits = s.view(np.int64)
    mid = (bits & 0x1FFFFFFF) == 0x10000000  # 29 dropped bits exactly halfway
    mid |= np.abs(s) < 2.0 ** -125  # float32 subnormals drop more bits: the full argument
    if mid.any():
        z64 = np.broadcast_to(np.asarray(z, np.float64), s.shape)
        t = s - p
        err = (p - (s - t)) + (z64 - t)
        step = np.where((err > 0) == (s > 0), 1, -1)
        bits = np.where(mid & (err != 0) & np.isfinite(s), bits + step, bits)
        s = bits.view(np.float64)
    return s.astype(np.float32)


def columns(x, kh, kw, pads, strides, dils, oh, ow) -> np.ndarray:
    """im2col of one image x [C, H, W]: [C * KH * KW, OH * OW] in the order of the terms."""
    c = x.shape[0]
    pt, pl, pb, pr = pads
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr)))
    out = np.empty((c, kh, kw, oh, ow), np.float32)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dils[0], kx * dils[1]
            out[:, ky, kx] = xp[:, y0:y0 + strides[0] * (oh - 1) + 1:strides[0],
                                x0:x0 + strides[1] * (ow - 1) + 1:strides[1]]
    return out.reshape(c * kh * kw, oh * ow)


def conv_chunked(x, w, bias, chunk, pads, strides, dils) -> np.ndarray:
    """The operation on arrays (see the module's docstring)."""
    o, c, kh, kw = w.shape
    n = x.shape[0]
    oh = (x.shape[2] + pads[0] + pads[2] - (kh - 1) * dils[0] - 1) // strides[0] + 1
    ow = (x.shape[3] + pads[1] + pads[3] - (kw - 1) * dils[1] - 1) // strides[1] + 1
    k_total = c * kh * kw
    wm = np.ascontiguousarray(w.reshape(o, k_total).T[:, :, None])  # [K, O, 1]
    chunk = np.asarray(chunk, np.int64).reshape(-1)
    out = np.empty((n, o, oh * ow), np.float32)
    for b in range(n):
        cols = columns(x[b], kh, kw, pads, strides, dils, oh, ow)
        total = np.zeros((o, oh * ow), np.float32)
        part = np.zeros((o, oh * ow), np.float32)
        for k in range(k_total):
            if k:
                restart = (k % chunk) == 0
                if restart.all():
                    total, part = total + part, np.zeros_like(part)
                elif restart.any():
                    total[:, restart] += part[:, restart]
                    part[:, restart] = 0
            part = fma_f32(wm[k], cols[k], part)
        out[b] = (total + part) + bias.reshape(o, 1)
    return out.reshape(n, o, oh, ow)


def execute(ctx: OperationContext):
    x, w, bias, chunk = (ctx.input(i) for i in range(4))
    pads, strides, dils = geometry(ctx)
    return [conv_chunked(np.asarray(x, np.float32), np.asarray(w, np.float32),
                         np.asarray(bias, np.float32), chunk, pads, strides, dils)]


register(CONV_CHUNKED, execute,
         signatures=[sig("V1_3", [F32, F32, F32, I32] + ["INT32"] * 8, [F32])],
         validate=validate, prepare=prepare, family="onnx_conv_chunked")
