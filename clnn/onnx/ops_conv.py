"""Convolutions and pooling, in NNAPI's NCHW layout (the ``layout`` input set
to true), so that ONNX's NCHW tensors need no transposes; NNAPI filters are always [O, H, W, I]
(depthwise [1, H, W, O]) and are transposed at import."""

from __future__ import annotations

import math

import numpy as np

from clnn.onnx import mlas_conv
from hal.types import OperandType

OT = OperandType


def spatial_pads(imp, n, in_hw, kernel, strides, dilations):
    """Explicit (top, left, bottom, right) pads of a 2-D window, from ``pads`` or
    ``auto_pad``; None for SAME_UPPER on unknown spatial dims (NNAPI's implicit SAME)."""
    auto = n.attr("auto_pad", "NOTSET")
    pads = list(n.attr("pads", [0, 0, 0, 0]))
    if auto in ("NOTSET", ""):
        if len(pads) != 4:
            imp.fail(f"pads {pads} must have 4 values for a 2-D window")
        return pads
    if auto == "VALID":
        return [0, 0, 0, 0]
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        imp.fail(f"attribute 'auto_pad'={auto!r} has no mapping")
    if 0 in in_hw:
        if auto == "SAME_UPPER":
            return None
        imp.fail("attribute 'auto_pad'='SAME_LOWER' needs known spatial dimensions")
    out = []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations):
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small = total // 2
        out.append((small, total - small) if auto == "SAME_UPPER" else (total - small, small))
    return [out[0][0], out[1][0], out[0][1], out[1][1]]


def window(imp, n, rank_what="input"):
    """(strides, dilations) of a 2-D window, checking their length."""
    strides = list(n.attr("strides", [1, 1]))
    dilations = list(n.attr("dilations", [1, 1]))
    if len(strides) != 2 or len(dilations) != 2:
        imp.fail(f"only 2-D windows are mapped (strides {strides}, dilations {dilations})")
    return strides, dilations


def _per_channel(imp, v, o):
    """A constant as a per-output-channel vector of an NCHW convolution's output ([C, 1, 1],
    [1, C, 1, 1] or a scalar), else None."""
    if v is None or v.dtype.kind != "f":
        return None
    if v.size == 1:
        return np.full(o, float(v.reshape(-1)[0]))
    s = list(v.shape)
    while s and s[0] == 1 and len(s) > 3:
        s.pop(0)
    if s == [o, 1, 1]:
        return v.reshape(-1).astype(np.float64)
    return None


def _affine_after(imp, name, o):
    """(scale, shift, node) when the only reader of ``name`` is a BatchNormalization with
    constant statistics, or a Mul / Add / Sub by a per-channel constant: an affine map per
    channel that folds into the convolution's weights and bias."""
    r = imp.only_reader(name)
    if r is None or len([y for y in r.outputs if y]) != 1:
        return None
    if r.op_type == "BatchNormalization":
        vals = [imp.const(r.input(i)) for i in range(1, 5)]
        if any(v is None for v in vals) or r.attrs.get("training_mode", 0):
            return None
        gamma, beta, mean, var = (v.astype(np.float64) for v in vals)
        scale = gamma / np.sqrt(var + r.attrs.get("epsilon", 1e-5))
        return scale, beta - mean * scale, r
    if r.op_type in ("Mul", "Add", "Sub") and len(r.inputs) == 2:
        other = r.input(1) if r.input(0) == name else r.input(0)
        if other == name or (r.op_type == "Sub" and r.input(0) != name):
            return None
        v = _per_channel(imp, imp.const(other), o)
        if v is None:
            return None
        if r.op_type == "Mul":
            return v, np.zeros(o), r
        return np.ones(o), (v if r.op_type == "Add" else -v), r
    return None


def conv(imp, n):
    x = n.input(0)
    w = imp.const_input(n, 1, "the weights")
    if w.ndim == 3:
        return _conv1d(imp, n, w)
    if w.ndim != 4:
        imp.fail(f"only 1-D and 2-D convolutions are mapped (weights of rank {w.ndim})")
    n.attr("kernel_shape")
    group = int(n.attr("group", 1))
    strides, dil = window(imp, n)
    o, ig, kh, kw = w.shape
    shape = imp.shape(x)
    hw = (shape[2], shape[3]) if shape and len(shape) == 4 else (0, 0)
    pads = spatial_pads(imp, n, hw, (kh, kw), strides, dil)
    bias = imp.const(n.input(2)) if n.input(2) else np.zeros(o, np.float32)
    if bias is None:
        imp.fail("the bias (input 2) must be a constant")
    w = w.astype(np.float32)
    bias = bias.astype(np.float32)
    if mlas_conv.applies(imp, n, w, group) and pads is not None:  # onnxruntime's sum order
        return mlas_conv.emit(imp, n, x, w, bias, pads, strides, dil)
    out = n.outputs[0]
    while (fold := _affine_after(imp, out, o)) is not None:
        # BatchNormalization (and per-channel Mul / Add after it): into the weights and bias
        scale, shift, after = fold
        w = (w * scale.reshape(-1, 1, 1, 1)).astype(np.float32)
        bias = (bias * scale + shift).astype(np.float32)
        imp.skipped.add(after.index)
        out = after.outputs[0]
    if imp.operand_type(x) == OT.TENSOR_FLOAT16:
        w, bias = w.astype(np.float16), bias.astype(np.float16)
    y = imp.output(out, like=x, shape=imp.shape(out))
    c = ig * group
    emit_conv(imp, imp.operand(x), y, w, bias, group, c, pads, strides, dil)


def is_depthwise(w, group: int, c: int) -> bool:
    return group > 1 and group == c and w.shape[0] % c == 0


def filter_array(w, group: int, c: int) -> np.ndarray:
    """ONNX [O, I/g, kH, kW] weights as NNAPI's filter: [O, kH, kW, I/g], or [1, kH, kW, O]
    for a depthwise convolution (its channel axis is then 3, else 0)."""
    o, _, kh, kw = w.shape
    arr = (w.reshape(o, kh, kw).transpose(1, 2, 0)[None] if is_depthwise(w, group, c)
           else w.transpose(0, 2, 3, 1))
    return np.ascontiguousarray(arr)


def emit_conv(imp, x, y, w, bias, group, c, pads, strides, dil, filt=None, bias_op=None):
    """CONV_2D / DEPTHWISE_CONV_2D / GROUPED_CONV_2D in NCHW. ``w`` is ONNX's [O, I/g, kH, kW]
    weights; ``filt`` / ``bias_op``, when given, are operands made by the caller (quantized)."""
    o = w.shape[0]
    depthwise = is_depthwise(w, group, c)
    if filt is None:
        filt = imp.b.constant(filter_array(w, group, c))
    if bias_op is None:
        bias_op = imp.b.constant(bias)
    if pads is None:
        padding = [imp.int32(1)]  # NNAPI's implicit SAME (ONNX's SAME_UPPER)
    else:
        t, left, bot, r = pads
        padding = [imp.int32(v) for v in (left, r, t, bot)]
    stride = [imp.int32(strides[1]), imp.int32(strides[0])]
    fuse, nchw = imp.int32(0), imp.bool(True)
    dilation = [imp.int32(dil[1]), imp.int32(dil[0])]
    if group == 1:
        imp.emit("CONV_2D", [x, filt, bias_op, *padding, *stride, fuse, nchw, *dilation], [y])
    elif depthwise:
        imp.emit("DEPTHWISE_CONV_2D", [x, filt, bias_op, *padding, *stride,
                                       imp.int32(o // c), fuse, nchw, *dilation], [y])
    else:
        if dil != [1, 1]:
            imp.fail(f"a grouped convolution ({group} groups) with dilations {dil} has no "
                     "NNAPI mapping")
        imp.emit("GROUPED_CONV_2D", [x, filt, bias_op, *padding, *stride, imp.int32(group),
                                     fuse, nchw], [y])


def _conv1d(imp, n, w):
    """A 1-D convolution as a 2-D one of height 1, between two RESHAPEs."""
    x = n.input(0)
    s = imp.shape(x)
    if s is None or len(s) != 3:
        imp.fail("a 1-D convolution needs an input of rank 3")
    n.attr("kernel_shape")
    group = int(n.attr("group", 1))
    strides = [1, *n.attr("strides", [1])]
    dil = [1, *n.attr("dilations", [1])]
    auto = n.attr("auto_pad", "NOTSET")
    p = list(n.attr("pads", [0, 0]))
    if auto not in ("NOTSET", "", "VALID"):
        L, k = s[2], w.shape[2]
        if L == 0:
            imp.fail(f"attribute 'auto_pad'={auto!r} needs a known length")
        total = max((math.ceil(L / strides[1]) - 1) * strides[1] + (k - 1) * dil[1] + 1 - L, 0)
        p = [total // 2, total - total // 2] if auto == "SAME_UPPER" else \
            [total - total // 2, total // 2]
    elif auto == "VALID":
        p = [0, 0]
    bias = imp.const(n.input(2)) if n.input(2) else np.zeros(w.shape[0], np.float32)
    if bias is None:
        imp.fail("the bias (input 2) must be a constant")
    x4 = imp.temp(x, (s[0], s[1], 1, s[2]))
    imp.emit("RESHAPE", [imp.operand(x), imp.ints([s[0] or -1, s[1], 1, s[2] or -1])], [x4])
    ys = imp.shape(n.outputs[0]) or (s[0], w.shape[0], 0)
    y4 = imp.temp(x, (ys[0], ys[1], 1, ys[2]))
    emit_conv(imp, x4, y4, w[:, :, None, :].astype(np.float32), bias.astype(np.float32),
              group, w.shape[1] * group, [0, p[0], 0, p[1]], strides, dil)
    y = imp.output(n.outputs[0], shape=ys, like=x)
    imp.emit("RESHAPE", [y4, imp.ints([ys[0] or -1, ys[1], ys[2] or -1])], [y])


def conv_transpose(imp, n):
    x = n.input(0)
    w = imp.const_input(n, 1, "the weights")
    if w.ndim != 4:
        imp.fail(f"only 2-D transposed convolutions are mapped (weights of rank {w.ndim})")
    group = int(n.attr("group", 1))
    n.attr("kernel_shape")
    strides, dil = window(imp, n)
    if dil != [1, 1]:
        imp.fail(f"attribute 'dilations'={dil} has no mapping")
    if n.attr("output_shape") is not None:
        imp.fail("attribute 'output_shape' has no mapping (give pads instead)")
    if n.attr("auto_pad", "NOTSET") not in ("NOTSET", "", "VALID"):
        imp.fail(f"attribute 'auto_pad'={n.attrs['auto_pad']!r} has no mapping")
    pads = list(n.attr("pads", [0, 0, 0, 0]))
    extra = list(n.attr("output_padding", [0, 0]))
    pads[2] -= extra[0]
    pads[3] -= extra[1]
    if min(pads) < 0:
        imp.fail(f"attribute 'output_padding'={extra} exceeds the end pads (NNAPI pads cannot "
                 "be negative)")
    i, og, kh, kw = w.shape
    bias = imp.const(n.input(2)) if n.input(2) else np.zeros(og * group, np.float32)
    if bias is None:
        imp.fail("the bias (input 2) must be a constant")
    dt = np.float16 if imp.operand_type(x) == OT.TENSOR_FLOAT16 else np.float32
    y = imp.output(n.outputs[0], like=x)
    t, left, bot, r = pads
    args = [*[imp.int32(v) for v in (left, r, t, bot)], imp.int32(strides[1]),
            imp.int32(strides[0]), imp.int32(0), imp.bool(True)]
    if group == 1:
        xs, ys = [imp.operand(x)], [y]
    else:  # TRANSPOSE_CONV_2D has no groups: SPLIT, one per group, CONCATENATION
        s, out = imp.shape(x), imp.shape(n.outputs[0])
        xs = [imp.temp(x, (s[0], s[1] // group, *s[2:])) for _ in range(group)]
        ys = [imp.temp(x, (out[0], og, *out[2:])) for _ in range(group)]
        imp.emit("SPLIT", [imp.operand(x), imp.int32(1), imp.int32(group)], xs)
    ig = i // group
    for k, (xk, yk) in enumerate(zip(xs, ys)):
        wk = w[k * ig:(k + 1) * ig]  # [I/g, O/g, kH, kW] -> NNAPI's [O/g, kH, kW, I/g]
        filt = imp.b.constant(np.ascontiguousarray(wk.transpose(1, 2, 3, 0).astype(dt)))
        bk = imp.b.constant(bias[k * og:(k + 1) * og].astype(dt))
        imp.emit("TRANSPOSE_CONV_2D", [xk, filt, bk, *args], [yk])
    if group > 1:
        imp.emit("CONCATENATION", [*ys, imp.int32(1)], [y])


def pool(imp, n):
    x = n.input(0)
    kernel = list(n.attr("kernel_shape"))
    if len(kernel) == 2:
        _pool2d(imp, n, x, imp.operand(x), imp.shape(x), lambda: imp.output(n.outputs[0], like=x))
        return
    if len(kernel) != 1:
        imp.fail(f"only 1-D and 2-D pooling is mapped (kernel_shape {kernel})")
    # 1-D: a 2-D pooling of height 1 between two RESHAPEs
    s, ys = imp.shape(x), imp.shape(n.outputs[0])
    if s is None or ys is None or len(s) != 3:
        imp.fail("a 1-D pooling needs an input of rank 3 and a known output rank")
    a = n.attrs
    pads = list(a.get("pads", [0, 0]))
    n.attrs = {**a, "kernel_shape": [1, kernel[0]], "strides": [1, *a.get("strides", [1])],
               "dilations": [1, *a.get("dilations", [1])], "pads": [0, pads[0], 0, pads[1]]}
    x4 = imp.temp(x, (s[0], s[1], 1, s[2]))
    imp.emit("RESHAPE", [imp.operand(x), imp.ints([s[0] or -1, s[1], 1, s[2] or -1])], [x4])
    y4 = imp.temp(x, (ys[0], ys[1], 1, ys[2]))
    _pool2d(imp, n, x, x4, (s[0], s[1], 1, s[2]), lambda: y4)
    y = imp.output(n.outputs[0], like=x)
    imp.emit("RESHAPE", [y4, imp.ints([ys[0] or -1, ys[1], ys[2] or -1])], [y])


def _pool2d(imp, n, x, xo, shape, make_output):
    """AVERAGE_POOL_2D / MAX_POOL_2D of operand ``xo`` (NCHW ``shape``) into the operand
    ``make_output()`` gives."""
    kernel = list(n.attr("kernel_shape"))
    strides, dil = window(imp, n)
    if dil != [1, 1]:
        imp.fail(f"attribute 'dilations'={dil} has no mapping")
    if len(n.outputs) > 1 and n.outputs[1]:
        imp.fail("the Indices output has no mapping")
    if n.attr("storage_order", 0):
        imp.fail("attribute 'storage_order'=1 has no mapping")
    hw = (shape[2], shape[3]) if shape and len(shape) == 4 else (0, 0)
    pads = spatial_pads(imp, n, hw, kernel, strides, [1, 1])
    avg = n.op_type == "AveragePool"
    if n.attr("ceil_mode", 0) and pads is not None:
        if 0 in hw:
            imp.fail("attribute 'ceil_mode'=1 needs known spatial dimensions")
        pads = list(pads)
        for d in range(2):  # the extra end padding that makes the floor output the ceil one
            span = hw[d] + pads[d] + pads[d + 2] - kernel[d]
            out = -(-span // strides[d]) + 1
            if (out - 1) * strides[d] >= hw[d] + pads[d]:  # last window starts in the padding
                out -= 1
            pads[d + 2] = max(pads[d + 2], (out - 1) * strides[d] + kernel[d] - hw[d] - pads[d])
    if avg and n.attr("count_include_pad", 0) and pads and any(pads):
        # NNAPI averages over the valid elements only: pad with zeros first
        t, left, bot, r = pads
        if 0 in shape:
            imp.fail("attribute 'count_include_pad'=1 needs known dimensions")
        padded = imp.temp(x, (shape[0], shape[1], shape[2] + t + bot, shape[3] + left + r))
        imp.emit("PAD", [xo, imp.ints([[0, 0], [0, 0], [t, bot], [left, r]])], [padded])
        xo, pads = padded, [0, 0, 0, 0]
    y = make_output()
    if pads is None:
        padding = [imp.int32(1)]
    else:
        t, left, bot, r = pads
        padding = [imp.int32(v) for v in (left, r, t, bot)]
    imp.emit("AVERAGE_POOL_2D" if avg else "MAX_POOL_2D",
             [xo, *padding, imp.int32(strides[1]), imp.int32(strides[0]), imp.int32(kernel[1]),
              imp.int32(kernel[0]), imp.int32(0), imp.bool(True)], [y])


def global_pool(imp, n):
    x = n.input(0)
    axes = list(range(2, imp.rank(x)))
    y = imp.output(n.outputs[0], like=x)
    if n.op_type == "GlobalAveragePool":
        imp.emit("MEAN", [imp.operand(x), imp.ints(axes), imp.int32(1)], [y])
    else:
        imp.emit("REDUCE_MAX", [imp.operand(x), imp.ints(axes), imp.bool(True)], [y])


CONVERTERS = {
    "Conv": conv,
    "ConvTranspose": conv_transpose,
    "MaxPool": pool,
    "AveragePool": pool,
    "GlobalAveragePool": global_pool,
    "GlobalMaxPool": global_pool,
}
