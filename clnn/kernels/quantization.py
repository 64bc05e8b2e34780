"""QUANTIZE, DEQUANTIZE on OpenCL (quantization.cl.mako): float32/float16 to quant8 asymm and
signed, and quant8 asymm/signed/symm/per-channel to float32/float16, with the bits of the
reference (TFLite's kernels: their vector code on the first size - size % 8 values, their
scalar code on the rest; hal/operations/quantization.py)."""

from __future__ import annotations

import numpy as np

from clnn.kernels import _defaults
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import ANY_STORED, code, f32, i32, numel, strides_of, types_in
from hal.operations.common import qrange


def support(ctx):
    return types_in(ctx, 0, ANY_STORED)


def plan(ctx, b):
    x, y = ctx.inputs[0], ctx.outputs[0]
    params = {"di": code(x), "do": code(y)}
    n = numel(y.shape)
    if ctx.name == "QUANTIZE":
        lo, hi = qrange(y.type)
        scale = np.float32(y.scale)
        vec = n // 8 * 8
        vq = _defaults.defaults(_defaults.traits(b.device.limits)).quantize_vw
        if vq == 16:
            params["vq"] = 16
        b.launch("quantization", "quantize", params, (vec // vq + vec % vq // 8 + n - vec,),
                 [In(0), Out(0), f32(scale), f32(np.float32(1.0) / scale), i32(n // 8 * 8),
                  i32(y.zero_point), i32(lo), i32(hi)])
        return
    vec, zp_scale = 0, np.float32(0)
    if x.channel_quant is not None:
        dim = x.channel_quant.channel_dim
        scales = np.asarray(x.channel_quant.scales, np.float32)
        inner, channels = strides_of(x.shape)[dim], x.shape[dim]
    else:
        scales, inner, channels = np.asarray([x.scale], np.float32), 1, 1
        vec, zp_scale = n // 8 * 8, np.float32(x.zero_point) * np.float32(x.scale)
        b.launch("quantization", "dequantize_vec", params, (n // 8 + n % 8,),
                 [In(0), Out(0), f32(scales[0]), i32(x.zero_point), i32(vec), f32(zp_scale)])
        return
    b.launch("quantization", "dequantize", params, (n,),
             [In(0), Out(0), b.buffer(scales), i32(max(inner, 1)), i32(channels),
              i32(x.zero_point), i32(vec), f32(zp_scale)])


for _op in ("QUANTIZE", "DEQUANTIZE"):
    register_kernel(_op, family="quantization", support=support, plan=plan)
