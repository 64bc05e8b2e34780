"""Quantization: QuantizeLinear / DequantizeLinear (QUANTIZE / DEQUANTIZE; a DequantizeLinear of
a constant is folded to a float constant at import) and QLinearConv on NNAPI's
quantized types: uint8 -> TENSOR_QUANT8_ASYMM, int8 -> TENSOR_QUANT8_ASYMM_SIGNED, int8
weights with per-channel scales -> TENSOR_QUANT8_SYMM_PER_CHANNEL, int32 bias with scale
input_scale * weight_scale. QLinearMatMul is with onnxruntime's QGemm in
:mod:`clnn.onnx.ops_qlinear`."""

from __future__ import annotations

import numpy as np

from clnn.onnx.ops_conv import emit_conv, filter_array, is_depthwise, spatial_pads, window
from hal.types import OperandType

OT = OperandType


def _qtype(dtype) -> OperandType:
    return OT.TENSOR_QUANT8_ASYMM if dtype == np.uint8 else OT.TENSOR_QUANT8_ASYMM_SIGNED


def _params(imp, n, i_scale: int, i_zp: int, what: str):
    """(scale, zero point, dtype) of a per-tensor quantization given by two inputs."""
    s = imp.const_input(n, i_scale, f"the {what} scale")
    z = imp.const(n.input(i_zp)) if n.input(i_zp) else np.zeros((), np.uint8)
    if z is None:
        imp.fail(f"the {what} zero point (input {i_zp}) must be a constant")
    if s.size != 1 or z.size != 1:
        imp.fail(f"the {what} quantization must be per tensor (got {s.size} scales)")
    if z.dtype not in (np.uint8, np.int8):
        imp.fail(f"the {what} zero point has type {z.dtype}; NNAPI quantizes to 8 bits")
    return float(s.reshape(-1)[0]), int(z.reshape(-1)[0]), z.dtype


def _check_input(imp, name, scale, zp, what):
    """A quantized operand must carry the scale and zero point the node states."""
    have = imp.quant.get(name)
    if have is None:
        imp.fail(f"{what} {name!r} is not a quantized tensor (no QuantizeLinear made it)")
    if not np.isclose(have[0], scale, rtol=1e-6) or have[1] != zp:
        imp.fail(f"{what} {name!r} has scale {have[0]} and zero point {have[1]}, the node "
                 f"states {scale} and {zp}")


def quantize(imp, n):
    x = n.input(0)
    n.attr("axis")
    n.attr("saturate")
    n.attr("block_size")
    n.attr("output_dtype")
    scale, zp, dtype = _params(imp, n, 1, 2, "output")
    y = imp.output(n.outputs[0], type=_qtype(dtype), scale=scale, zp=zp)
    imp.emit("QUANTIZE", [imp.operand(x)], [y])


def dequantize(imp, n):
    x = n.input(0)
    n.attr("axis")
    n.attr("block_size")
    scale, zp, _ = _params(imp, n, 1, 2, "input")
    _check_input(imp, x, scale, zp, "input")
    y = imp.output(n.outputs[0], type=OT.TENSOR_FLOAT32)
    imp.emit("DEQUANTIZE", [imp.operand(x)], [y])


def _weights(imp, n, i_w, i_scale, i_zp, x_dtype, channel_dim_of):
    """(filter array, operand type, scale, zero point, channel quant, per-channel scales) of
    quantized weights."""
    w = imp.const_input(n, i_w, "the weights")
    s = imp.const_input(n, i_scale, "the weight scale").astype(np.float64).reshape(-1)
    z = imp.const(n.input(i_zp)) if n.input(i_zp) else np.zeros(1, w.dtype)
    if z is None:
        imp.fail(f"the weight zero point (input {i_zp}) must be a constant")
    z = z.reshape(-1)
    per_channel = s.size > 1
    if not per_channel and w.dtype == x_dtype:
        return w, _qtype(w.dtype), float(s[0]), int(z[0]), None, s
    if w.dtype != np.int8 or np.any(z != 0):
        imp.fail("weights with per-channel scales (or a type other than the input's) must be "
                 "int8 with zero points 0")
    return w, OT.TENSOR_QUANT8_SYMM_PER_CHANNEL, 0.0, 0, channel_dim_of, s


def qlinear_conv(imp, n):
    x = n.input(0)
    xs, xz, xd = _params(imp, n, 1, 2, "input")
    _check_input(imp, x, xs, xz, "input")
    ys, yz, yd = _params(imp, n, 6, 7, "output")
    if yd != xd:
        imp.fail(f"the output type {np.dtype(yd)} differs from the input type "
                 f"{np.dtype(xd)}")
    n.attr("kernel_shape")
    group = int(n.attr("group", 1))
    strides, dil = window(imp, n)
    w, wt, wsc, wzp, cdim, scales = _weights(imp, n, 3, 4, 5, xd, 0)
    if w.ndim != 4:
        imp.fail(f"only 2-D convolutions are mapped (weights of rank {w.ndim})")
    o, ig, kh, kw = w.shape
    c = ig * group
    shape = imp.shape(x)
    hw = (shape[2], shape[3]) if shape and len(shape) == 4 else (0, 0)
    pads = spatial_pads(imp, n, hw, (kh, kw), strides, dil)
    arr = filter_array(w, group, c)
    cq = None
    if wt == OT.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        cq = (np.broadcast_to(scales, (o,)).tolist(), 3 if is_depthwise(w, group, c) else 0)
    filt = imp.b.constant(arr, wt, wsc, wzp, cq)
    b = imp.const(n.input(8)) if n.input(8) else np.zeros(o, np.int32)
    if b is None:
        imp.fail("the bias (input 8) must be a constant")
    bias = imp.b.constant(b.astype(np.int32), OT.TENSOR_INT32, 0.0 if cq else xs * wsc, 0)
    y = imp.output(n.outputs[0], type=_qtype(yd), scale=ys, zp=yz)
    emit_conv(imp, imp.operand(x), y, w, None, group, c, pads, strides, dil, filt=filt,
              bias_op=bias)


CONVERTERS = {
    "QuantizeLinear": quantize,
    "DequantizeLinear": dequantize,
    "QLinearConv": qlinear_conv,
}
