"""Single-operation quantized .tflite models with random shapes and parameters, run on clnn's
devices and on ai-edge-litert's built-in kernels (and XNNPACK), compared bit for bit.

``case(op, dtype, rng)`` -> Case: the model's bytes and its inputs. Parameters are drawn to
reach the corners: zero points at the ends of the range, per-channel filter scales spread over
two decades, requantization multipliers above and below 1, and (``ties``) scales that are
powers of two so that many results fall exactly half-way between two integers.

Used by tests/tflite/test_quant_bitexact.py (a seeded slice) and scripts/quant_bitexact.py
(the long sweep).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tests.kits.tflite_writer import Graph

INFO = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767)}


@dataclass
class Case:
    op: str
    dtype: str
    model: bytes
    inputs: list[np.ndarray]
    params: dict


def _zp(rng, dtype, ends=0.4):
    lo, hi = INFO[dtype]
    if dtype == "int16":
        return 0
    r = rng.random()
    if r < ends / 2:
        return lo
    if r < ends:
        return hi
    return int(rng.integers(lo, hi + 1))


def _scale(rng, lo=1e-3, hi=0.5, ties=False):
    if ties:
        return float(2.0 ** rng.integers(-9, 0))
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


def _data(rng, dtype, shape):
    lo, hi = INFO[dtype]
    return rng.integers(lo, hi + 1, shape).astype(dtype)


def _q(g, shape, dtype, scale, zp, name=None, data=None):
    return g.tensor(shape, dtype, scale=scale, zero_point=zp, name=name, data=data)


def _conv_filter(rng, g, dtype, shape, per_channel, out_axis, ties):
    n = shape[out_axis]
    if per_channel:
        scales = np.exp(rng.uniform(np.log(1e-3), np.log(0.1), n)).astype(np.float32)
        if ties:
            scales = (2.0 ** rng.integers(-9, -3, n)).astype(np.float32)
        data = rng.integers(-127, 128, shape).astype(np.int8)
        return g.tensor(shape, "int8", data=data, scale=scales, zero_point=np.zeros(n, np.int64),
                        quantized_dimension=out_axis), scales
    s = _scale(rng, 1e-3, 0.1, ties)
    zp = 0 if dtype == "int8" else _zp(rng, dtype)
    data = _data(rng, "int8" if dtype == "int8" else "uint8", shape)
    if dtype == "int8":
        data = np.maximum(data, -127).astype(np.int8)
    return g.tensor(shape, dtype, data=data, scale=s, zero_point=zp), np.full(n, s, np.float32)


def _bias(rng, g, x_scale, w_scales, n, per_channel):
    scales = (np.float32(x_scale) * w_scales).astype(np.float32)
    data = rng.integers(-2000, 2001, n).astype(np.int32)
    if per_channel:
        return g.tensor([n], "int32", data=data, scale=scales, zero_point=np.zeros(n, np.int64))
    return g.tensor([n], "int32", data=data, scale=float(scales[0]), zero_point=0)


def _out_scale(rng, in_scale, w_scales, k, ties, above_one):
    """An output scale making the requantization multiplier in_scale * w_scale / out_scale
    land around 1 / sqrt(k) (typical), or above 1 (``above_one``)."""
    w = float(np.median(w_scales))
    if above_one:
        return float(np.float32(in_scale * w / rng.uniform(1.05, 3.0)))
    if ties:
        return float(2.0 ** np.round(np.log2(in_scale * w * np.sqrt(k) * 8)))
    return float(np.float32(in_scale * w * np.sqrt(k) * np.exp(rng.uniform(0.5, 3.5))))


def conv_case(rng, dtype, depthwise=False, per_channel=None, ties=False, above_one=None):
    if per_channel is None:
        per_channel = dtype == "int8" and rng.random() < 0.7
    above_one = rng.random() < 0.15 if above_one is None else above_one
    n, h, w = 1, int(rng.integers(3, 9)), int(rng.integers(3, 9))
    c = int(rng.integers(1, 6))
    fh, fw = int(rng.choice([1, 3, 5])), int(rng.choice([1, 3]))
    stride, pad = int(rng.integers(1, 3)), int(rng.integers(0, 2))
    if pad == 1:
        fh, fw = min(fh, h), min(fw, w)
    g = Graph()
    xs, xz = _scale(rng, ties=ties), _zp(rng, dtype)
    x = _q(g, [n, h, w, c], dtype, xs, xz, name="x")
    if depthwise:
        mult = int(rng.integers(1, 3))
        co = c * mult
        filt, wsc = _conv_filter(rng, g, dtype, [1, fh, fw, co], per_channel, 3, ties)
    else:
        co = int(rng.integers(1, 7))
        filt, wsc = _conv_filter(rng, g, dtype, [co, fh, fw, c], per_channel, 0, ties)
    b = _bias(rng, g, xs, wsc, co, per_channel)
    k = fh * fw * (1 if depthwise else c)
    ys, yz = _out_scale(rng, xs, wsc, k, ties, above_one), _zp(rng, dtype)
    oh = (h + stride - 1) // stride if pad == 0 else (h - fh) // stride + 1
    ow = (w + stride - 1) // stride if pad == 0 else (w - fw) // stride + 1
    y = _q(g, [n, oh, ow, co], dtype, ys, yz, name="y")
    act = int(rng.choice([0, 0, 1, 3]))
    if depthwise:
        g.op("DEPTHWISE_CONV_2D", [x, filt, b], [y], "DepthwiseConv2DOptions", Padding=pad,
             StrideW=stride, StrideH=stride, DepthMultiplier=mult, FusedActivationFunction=act,
             DilationWFactor=1, DilationHFactor=1)
    else:
        g.op("CONV_2D", [x, filt, b], [y], "Conv2DOptions", Padding=pad, StrideW=stride,
             StrideH=stride, FusedActivationFunction=act, DilationWFactor=1, DilationHFactor=1)
    params = dict(per_channel=per_channel, above_one=above_one, filter=[fh, fw], stride=stride,
                  x=(xs, xz), y=(ys, yz), act=act)
    return g, [x], [y], [_data(rng, dtype, [n, h, w, c])], params


def fully_connected_case(rng, dtype, ties=False, above_one=None):
    above_one = rng.random() < 0.15 if above_one is None else above_one
    b_, k, n = int(rng.integers(1, 4)), int(rng.integers(1, 40)), int(rng.integers(1, 9))
    g = Graph()
    xs, xz = _scale(rng, ties=ties), _zp(rng, dtype)
    x = _q(g, [b_, k], dtype, xs, xz, name="x")
    filt, wsc = _conv_filter(rng, g, dtype, [n, k], False, 0, ties)
    b = _bias(rng, g, xs, wsc, n, False)
    ys, yz = _out_scale(rng, xs, wsc, k, ties, above_one), _zp(rng, dtype)
    y = _q(g, [b_, n], dtype, ys, yz, name="y")
    act = int(rng.choice([0, 0, 1, 3]))
    g.op("FULLY_CONNECTED", [x, filt, b], [y], "FullyConnectedOptions",
         FusedActivationFunction=act)
    return g, [x], [y], [_data(rng, dtype, [b_, k])], dict(x=(xs, xz), y=(ys, yz), act=act)


def _broadcast_shapes(rng):
    shape = [1] + [int(v) for v in rng.integers(1, 6, int(rng.integers(1, 4)))]
    other = list(shape)
    if rng.random() < 0.4:
        for i in range(len(other)):
            if rng.random() < 0.5:
                other[i] = 1
    return shape, other


def binary_case(rng, dtype, op, ties=False):
    a_shape, b_shape = _broadcast_shapes(rng)
    if rng.random() < 0.5:
        a_shape, b_shape = b_shape, a_shape
    out_shape = list(np.broadcast_shapes(a_shape, b_shape))
    g = Graph()
    (a_s, a_z), (b_s, b_z) = [(_scale(rng, ties=ties), _zp(rng, dtype)) for _ in range(2)]
    if op == "MUL":
        # the multiplier a_s * b_s / y_s, above 1 at times, but keeping every product within
        # int16 before the clamp: TFLite's vector code wraps around beyond (see docs/tflite.md)
        lo, hi = INFO[dtype]
        most = max(hi - a_z, a_z - lo) * max(hi - b_z, b_z - lo)
        mult = min(np.exp(rng.uniform(-5.0, 1.0)), 20000.0 / most)
        y_s = float(np.float32(a_s * b_s / mult))
    else:
        y_s = float(np.float32(max(a_s, b_s) * np.exp(rng.uniform(-0.7, 1.5))))
    if ties:
        y_s = float(2.0 ** np.round(np.log2(y_s)))
    y_z = _zp(rng, dtype)
    a = _q(g, a_shape, dtype, a_s, a_z, name="a")
    b = _q(g, b_shape, dtype, b_s, b_z, name="b")
    y = _q(g, out_shape, dtype, y_s, y_z, name="y")
    act = int(rng.choice([0, 0, 1, 3]))
    g.op(op, [a, b], [y], f"{op.capitalize()}Options", FusedActivationFunction=act)
    return (g, [a, b], [y], [_data(rng, dtype, a_shape), _data(rng, dtype, b_shape)],
            dict(a=(a_s, a_z), b=(b_s, b_z), y=(y_s, y_z), act=act))


def pool_case(rng, dtype, op, ties=False):
    h, w, c = int(rng.integers(2, 9)), int(rng.integers(2, 9)), int(rng.integers(1, 5))
    fh, fw = int(rng.integers(1, min(h, 4) + 1)), int(rng.integers(1, min(w, 4) + 1))
    stride, pad = int(rng.integers(1, 3)), int(rng.integers(0, 2))
    g = Graph()
    s, z = _scale(rng, ties=ties), _zp(rng, dtype)
    x = _q(g, [1, h, w, c], dtype, s, z, name="x")
    oh = (h + stride - 1) // stride if pad == 0 else (h - fh) // stride + 1
    ow = (w + stride - 1) // stride if pad == 0 else (w - fw) // stride + 1
    y = _q(g, [1, oh, ow, c], dtype, s, z, name="y")
    act = int(rng.choice([0, 0, 1, 3]))
    g.op(op, [x], [y], "Pool2DOptions", Padding=pad, StrideW=stride, StrideH=stride,
         FilterWidth=fw, FilterHeight=fh, FusedActivationFunction=act)
    return g, [x], [y], [_data(rng, dtype, [1, h, w, c])], dict(window=[fh, fw], act=act)


#: TFLite's fixed output quantization of LOGISTIC / TANH / SOFTMAX per type
FIXED_OUT = {("LOGISTIC", "uint8"): (1 / 256, 0), ("LOGISTIC", "int8"): (1 / 256, -128),
             ("TANH", "uint8"): (1 / 128, 128), ("TANH", "int8"): (1 / 128, 0),
             ("SOFTMAX", "uint8"): (1 / 256, 0), ("SOFTMAX", "int8"): (1 / 256, -128),
             ("LOGISTIC", "int16"): (1 / 32768, 0), ("TANH", "int16"): (1 / 32768, 0),
             ("SOFTMAX", "int16"): (1 / 32768, 0),
             ("L2_NORMALIZATION", "uint8"): (1 / 128, 128),
             ("L2_NORMALIZATION", "int8"): (1 / 128, 0)}


#: operations NNAPI gives the input's quantization on the output
SAME_QUANT = {"RELU", "RELU6", "RELU_N1_TO_1", "MAX_POOL_2D"}


def unary_case(rng, dtype, op, ties=False):
    shape = [1] + [int(v) for v in rng.integers(1, 7, int(rng.integers(1, 4)))]
    g = Graph()
    s = _scale(rng, 1e-3, 0.2, ties) if dtype != "int16" else _scale(rng, 1e-5, 1e-3, ties)
    z = _zp(rng, dtype)
    x = _q(g, shape, dtype, s, z, name="x")
    if (op, dtype) in FIXED_OUT:
        ys, yz = FIXED_OUT[(op, dtype)]
    elif op in SAME_QUANT:
        ys, yz = s, z
    else:
        ys, yz = _scale(rng, ties=ties), _zp(rng, dtype)
        if op == "HARD_SWISH":  # TFLite wants (input_scale / 128) / output_scale below 1
            ys = max(ys, s / 100)
    y = _q(g, shape, dtype, ys, yz, name="y")
    if op == "SOFTMAX":
        beta = float(rng.choice([1.0, 1.0, 0.5, 2.0]))
        g.op(op, [x], [y], "SoftmaxOptions", Beta=beta)
    elif op == "LEAKY_RELU":
        g.op(op, [x], [y], "LeakyReluOptions", Alpha=float(rng.uniform(0.01, 0.5)))
    else:
        g.op(op, [x], [y])
    return g, [x], [y], [_data(rng, dtype, shape)], dict(x=(s, z), y=(ys, yz))


def mean_case(rng, dtype, ties=False):
    h, w, c = int(rng.integers(1, 7)), int(rng.integers(1, 7)), int(rng.integers(1, 5))
    g = Graph()
    s, z = _scale(rng, ties=ties), _zp(rng, dtype)
    same = rng.random() < 0.5
    ys, yz = (s, z) if same else (_scale(rng, ties=ties), _zp(rng, dtype))
    x = _q(g, [1, h, w, c], dtype, s, z, name="x")
    keep = bool(rng.random() < 0.5)
    axes = np.asarray([1, 2], np.int32)
    y = _q(g, [1, 1, 1, c] if keep else [1, c], dtype, ys, yz, name="y")
    g.op("MEAN", [x, g.tensor([2], "int32", data=axes)], [y], "ReducerOptions", KeepDims=keep)
    return g, [x], [y], [_data(rng, dtype, [1, h, w, c])], dict(x=(s, z), y=(ys, yz))


def resize_case(rng, dtype, op, ties=False):
    h, w, c = int(rng.integers(1, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 4))
    oh, ow = int(rng.integers(1, 11)), int(rng.integers(1, 11))
    align = bool(rng.random() < 0.3)
    half = (not align) and bool(rng.random() < 0.5)
    g = Graph()
    s, z = _scale(rng, ties=ties), _zp(rng, dtype)
    x = _q(g, [1, h, w, c], dtype, s, z, name="x")
    y = _q(g, [1, oh, ow, c], dtype, s, z, name="y")
    size = g.tensor([2], "int32", data=np.asarray([oh, ow], np.int32))
    opts = "ResizeBilinearOptions" if op == "RESIZE_BILINEAR" else "ResizeNearestNeighborOptions"
    g.op(op, [x, size], [y], opts, AlignCorners=align, HalfPixelCenters=half)
    return g, [x], [y], [_data(rng, dtype, [1, h, w, c])], dict(align=align, half=half)


def concatenation_case(rng, dtype, ties=False):
    k = int(rng.integers(2, 4))
    base = [1, int(rng.integers(1, 5)), int(rng.integers(1, 5))]
    axis = int(rng.integers(0, 3))
    g = Graph()
    xs, arrays, sizes = [], [], []
    same = dtype == "int8"  # TFLite's int8 CONCATENATION takes one quantization only
    s0, z0 = _scale(rng, ties=ties), _zp(rng, dtype)
    for _ in range(k):
        shape = list(base)
        shape[axis] = int(rng.integers(1, 4))
        s, z = (s0, z0) if same else (_scale(rng, ties=ties), _zp(rng, dtype))
        xs.append(_q(g, shape, dtype, s, z))
        arrays.append(_data(rng, dtype, shape))
        sizes.append(shape[axis])
    out = list(base)
    out[axis] = sum(sizes)
    ys, yz = (s0, z0) if same else (_scale(rng, ties=ties), _zp(rng, dtype))
    y = _q(g, out, dtype, ys, yz, name="y")
    g.op("CONCATENATION", xs, [y], "ConcatenationOptions", Axis=axis)
    return g, xs, [y], arrays, dict(axis=axis)


def quantize_case(rng, dtype, ties=False):
    """QUANTIZE of a float input, values spread over the output's range and some exactly
    half-way between two steps."""
    shape = [1] + [int(v) for v in rng.integers(1, 6, 2)]
    g = Graph()
    ys, yz = _scale(rng, ties=ties), _zp(rng, dtype)
    lo, hi = INFO[dtype]
    x = g.tensor(shape, "float32", name="x")
    y = _q(g, shape, dtype, ys, yz, name="y")
    g.op("QUANTIZE", [x], [y])
    steps = rng.integers(lo - 3, hi + 4, shape) - yz + rng.choice([0.0, 0.5, -0.5, 0.3], shape)
    return g, [x], [y], [(steps * ys).astype(np.float32)], dict(y=(ys, yz))


def dequantize_case(rng, dtype, ties=False):
    shape = [1, int(rng.integers(1, 40))]
    g = Graph()
    s, z = _scale(rng, 1e-4, 1.0, ties), _zp(rng, dtype)
    x = _q(g, shape, dtype, s, z, name="x")
    y = g.tensor(shape, "float32", name="y")
    g.op("DEQUANTIZE", [x], [y])
    return g, [x], [y], [_data(rng, dtype, shape)], dict(x=(s, z))


def transpose_conv_case(rng, dtype, ties=False):
    """TRANSPOSE_CONV (per-channel int8 filters at times), VALID or SAME, stride 1 or 2."""
    per_channel = dtype == "int8" and rng.random() < 0.6
    h, w, c = int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 4))
    fh, fw, co = int(rng.choice([1, 2, 3])), int(rng.choice([1, 3])), int(rng.integers(1, 13))
    stride, pad = int(rng.integers(1, 3)), int(rng.integers(0, 2))
    oh = h * stride if pad == 0 else (h - 1) * stride + fh
    ow = w * stride if pad == 0 else (w - 1) * stride + fw
    g = Graph()
    xs, xz = _scale(rng, ties=ties), _zp(rng, dtype)
    x = _q(g, [1, h, w, c], dtype, xs, xz, name="x")
    filt, wsc = _conv_filter(rng, g, dtype, [co, fh, fw, c], per_channel, 0, ties)
    b = _bias(rng, g, xs, wsc, co, per_channel)
    ys, yz = _out_scale(rng, xs, wsc, fh * fw * c, ties, False), _zp(rng, dtype)
    y = _q(g, [1, oh, ow, co], dtype, ys, yz, name="y")
    shape = g.tensor([4], "int32", data=np.asarray([1, oh, ow, co], np.int32))
    g.op("TRANSPOSE_CONV", [shape, filt, x, b], [y], "TransposeConvOptions", Padding=pad,
         StrideW=stride, StrideH=stride)
    return g, [x], [y], [_data(rng, dtype, [1, h, w, c])], dict(per_channel=per_channel)


def batch_matmul_case(rng, dtype, ties=False):
    """BATCH_MATMUL of two int8 inputs (TFLite's int8 kernel wants zero points of 0)."""
    b_, m, k, n = (int(v) for v in rng.integers(1, 6, 4))
    g = Graph()
    (a_s, b_s) = (_scale(rng, ties=ties), _scale(rng, ties=ties))
    a = _q(g, [b_, m, k], dtype, a_s, 0, name="a")
    bb = _q(g, [b_, k, n], dtype, b_s, 0, name="b")
    ys = float(np.float32(a_s * b_s * np.sqrt(k) * np.exp(rng.uniform(0.5, 3.5))))
    y = _q(g, [b_, m, n], dtype, ys, _zp(rng, dtype), name="y")
    g.op("BATCH_MATMUL", [a, bb], [y], "BatchMatMulOptions", AdjX=False, AdjY=False)
    return (g, [a, bb], [y], [_data(rng, dtype, [b_, m, k]), _data(rng, dtype, [b_, k, n])],
            dict(k=k))


def pad_case(rng, dtype, ties=False):
    shape = [1] + [int(v) for v in rng.integers(1, 5, 3)]
    pads = rng.integers(0, 3, (4, 2)).astype(np.int32)
    pads[0] = 0
    out = [d + int(p.sum()) for d, p in zip(shape, pads)]
    g = Graph()
    s, z = _scale(rng, ties=ties), _zp(rng, dtype)
    x = _q(g, shape, dtype, s, z, name="x")
    y = _q(g, out, dtype, s, z, name="y")
    g.op("PAD", [x, g.tensor([4, 2], "int32", data=pads)], [y])
    return g, [x], [y], [_data(rng, dtype, shape)], dict(pads=pads.tolist())


def prelu_case(rng, dtype, ties=False):
    shape = [1] + [int(v) for v in rng.integers(1, 6, 3)]
    g = Graph()
    s, z = _scale(rng, ties=ties), _zp(rng, dtype)
    x = _q(g, shape, dtype, s, z, name="x")
    a_s, a_z = _scale(rng, 1e-3, 0.05, ties), _zp(rng, dtype)
    alpha = g.tensor(shape[-1:], dtype, data=_data(rng, dtype, shape[-1:]), scale=a_s,
                     zero_point=a_z)
    ys, yz = _scale(rng, ties=ties), _zp(rng, dtype)
    y = _q(g, shape, dtype, ys, yz, name="y")
    g.op("PRELU", [x, alpha], [y])
    return g, [x], [y], [_data(rng, dtype, shape)], dict(x=(s, z), y=(ys, yz))


def comparison_case(rng, dtype, op, ties=False):
    """LESS / GREATER_EQUAL / EQUAL of two quantized inputs with their own quantizations (the
    second at times a requantized copy of the first: many near-equalities)."""
    a_shape, b_shape = _broadcast_shapes(rng)
    g = Graph()
    (a_s, a_z), (b_s, b_z) = [(_scale(rng, ties=ties), _zp(rng, dtype)) for _ in range(2)]
    a = _q(g, a_shape, dtype, a_s, a_z, name="a")
    b = _q(g, b_shape, dtype, b_s, b_z, name="b")
    y = g.tensor(list(np.broadcast_shapes(a_shape, b_shape)), "bool", name="y")
    g.op(op, [a, b], [y])
    return (g, [a, b], [y], [_data(rng, dtype, a_shape), _data(rng, dtype, b_shape)],
            dict(a=(a_s, a_z), b=(b_s, b_z)))


def _build(op, dtype, rng, ties):
    if op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        return conv_case(rng, dtype, depthwise=op == "DEPTHWISE_CONV_2D", ties=ties)
    if op == "FULLY_CONNECTED":
        return fully_connected_case(rng, dtype, ties=ties)
    if op in ("ADD", "SUB", "MUL"):
        return binary_case(rng, dtype, op, ties=ties)
    if op in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        return pool_case(rng, dtype, op, ties=ties)
    if op == "MEAN":
        return mean_case(rng, dtype, ties=ties)
    if op in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"):
        return resize_case(rng, dtype, op, ties=ties)
    if op == "CONCATENATION":
        return concatenation_case(rng, dtype, ties=ties)
    if op == "QUANTIZE":
        return quantize_case(rng, dtype, ties=ties)
    if op == "DEQUANTIZE":
        return dequantize_case(rng, dtype, ties=ties)
    extra = {"TRANSPOSE_CONV": transpose_conv_case, "BATCH_MATMUL": batch_matmul_case,
             "PAD": pad_case, "PRELU": prelu_case}
    if op in extra:
        return extra[op](rng, dtype, ties=ties)
    if op in ("LESS", "GREATER_EQUAL", "EQUAL"):
        return comparison_case(rng, dtype, op, ties=ties)
    return unary_case(rng, dtype, op, ties=ties)


#: operation -> the types the suite draws for it
OPS = {
    "CONV_2D": ("uint8", "int8"), "DEPTHWISE_CONV_2D": ("uint8", "int8"),
    "FULLY_CONNECTED": ("uint8", "int8"),
    "ADD": ("uint8", "int8"), "SUB": ("uint8", "int8"), "MUL": ("uint8", "int8"),
    "AVERAGE_POOL_2D": ("uint8", "int8"), "MAX_POOL_2D": ("uint8", "int8"),
    "SOFTMAX": ("uint8", "int8"), "LOGISTIC": ("uint8", "int8"),
    "TANH": ("uint8", "int8"), "MEAN": ("uint8", "int8"),
    "RESIZE_BILINEAR": ("uint8", "int8"), "RESIZE_NEAREST_NEIGHBOR": ("uint8", "int8"),
    "CONCATENATION": ("uint8", "int8"), "QUANTIZE": ("uint8", "int8"),
    "DEQUANTIZE": ("uint8", "int8"),
    "HARD_SWISH": ("uint8", "int8"), "LEAKY_RELU": ("uint8", "int8"),
    "RELU": ("uint8", "int8"), "RELU6": ("uint8", "int8"),
    "TRANSPOSE_CONV": ("uint8", "int8"), "BATCH_MATMUL": ("int8",), "PAD": ("uint8", "int8"),
    "PRELU": ("uint8", "int8"), "L2_NORMALIZATION": ("uint8", "int8"),
    "LESS": ("uint8", "int8"), "GREATER_EQUAL": ("uint8", "int8"), "EQUAL": ("uint8", "int8"),
}


def case(op: str, dtype: str, seed: int) -> Case:
    rng = np.random.default_rng(seed)
    ties = rng.random() < 0.25
    g, ins, outs, arrays, params = _build(op, dtype, rng, ties)
    params["ties"] = ties
    return Case(op, dtype, g.write(ins, outs), arrays, params)


def litert_outputs(model: bytes, inputs, xnnpack: bool = False) -> list[np.ndarray]:
    """The outputs of ai-edge-litert's built-in kernels (or the default XNNPACK delegate)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    resolver = OpResolverType.AUTO if xnnpack else \
        OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = Interpreter(model_content=model, experimental_op_resolver_type=resolver)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [np.array(it.get_tensor(d["index"])) for d in it.get_output_details()]


def clnn_outputs(model: bytes, inputs, device) -> list[np.ndarray]:
    from clnn.cli.run import ClnnRunner
    from clnn.tflite import load

    return ClnnRunner(load(model), device).run(list(inputs))[0]


def lsb(a, b) -> int:
    """The largest difference in quantization steps between two integer arrays (float32
    arrays, DEQUANTIZE's: in units in the last place)."""
    a, b = np.asarray(a), np.asarray(b).reshape(np.shape(a))
    if not a.size:
        return 0
    if a.dtype.kind == "f":
        a, b = a.astype(np.float32).view(np.int32), b.astype(np.float32).view(np.int32)
    return int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64))))


def run_case(c: Case, devices: dict, xnnpack: bool = False) -> dict:
    """{side: max LSB against litert's built-in kernels} for each clnn device (and XNNPACK)."""
    ref = litert_outputs(c.model, c.inputs)
    result = {}
    for name, device in devices.items():
        outs = clnn_outputs(c.model, c.inputs, device)
        result[name] = max(lsb(a, b) for a, b in zip(outs, ref))
    if xnnpack:
        outs = litert_outputs(c.model, c.inputs, xnnpack=True)
        result["xnnpack"] = max(lsb(a, b) for a, b in zip(outs, ref))
    return result
