"""Operands of the convolution-family OpenCL tests for every type (float32, float16, relaxed,
quant8 asymm / signed, per-channel filters) and the CTS criteria each is compared by."""

from __future__ import annotations

import numpy as np

from tests.kits.cl_compare import rng_data
from tests.kits.one_op_models import scalar, tensor

#: name -> (input, filter, bias, output) types and quantization
TYPES = {
    "f32": ("TENSOR_FLOAT32", "TENSOR_FLOAT32", "TENSOR_FLOAT32"),
    "f16": ("TENSOR_FLOAT16", "TENSOR_FLOAT16", "TENSOR_FLOAT16"),
    "relaxed": ("TENSOR_FLOAT32", "TENSOR_FLOAT32", "TENSOR_FLOAT32"),
    "qa": ("TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM", "TENSOR_INT32"),
    "qs": ("TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_INT32"),
    "qa_pc": ("TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_SYMM_PER_CHANNEL", "TENSOR_INT32"),
    "qs_pc": ("TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_SYMM_PER_CHANNEL", "TENSOR_INT32"),
}


def kind_of(name):
    return {"f32": "f32", "relaxed": "f32", "f16": "f16"}.get(name, "quant")


def conv_operands(name, rng, x_shape, f_shape, channel_dim=0, x_value=None):
    """(input spec, filter spec, bias spec, output spec maker, input data)."""
    ti, tf, tb = TYPES[name]
    n_out = f_shape[channel_dim]
    x = rng_data(rng, ti, x_shape) if x_value is None else x_value
    w = rng_data(rng, tf, f_shape)
    signed = "SIGNED" in ti
    if name in ("f32", "f16", "relaxed"):
        bias = rng_data(rng, tb, [n_out])
        xs = tensor(ti, x_shape)
        fs = tensor(tf, f_shape, w)
        bs = tensor(tb, [n_out], bias)

        def out(shape):
            return tensor(ti, shape)
        return xs, fs, bs, out, x
    xscale, xzp = 0.05, (3 if signed else 120)
    if tf == "TENSOR_QUANT8_SYMM_PER_CHANNEL":
        scales = rng.uniform(0.005, 0.03, n_out).astype(np.float32)
        fs = tensor(tf, f_shape, w, channel_quant=(scales, channel_dim))
        bs = tensor(tb, [n_out], rng.integers(-2000, 2000, n_out).astype(np.int32))
    else:
        fscale = 0.02
        fzp = -4 if signed else 130
        fs = tensor(tf, f_shape, w, scale=fscale, zero_point=fzp)
        bs = tensor(tb, [n_out], rng.integers(-2000, 2000, n_out).astype(np.int32),
                    scale=float(np.float32(xscale) * np.float32(fscale)))
    xs = tensor(ti, x_shape, scale=xscale, zero_point=xzp)

    def out(shape):
        return tensor(ti, shape, scale=0.25, zero_point=-7 if signed else 110)
    return xs, fs, bs, out, x


def ints(*v):
    return [scalar("INT32", int(a)) for a in v]
