"""NumPy arithmetic of org.clnn.openvx POOLING, ROI_POOLING, SOFTMAX, LRN and ACTIVATION
(docs/openvx-extension.md) on raw arrays and positions. ``kind`` None: float32 tensors."""

from __future__ import annotations

import math

import numpy as np

from hal.operations import _openvx_fixed as fx


def pool_shape(in_shape, size, pad, stride, rounding):
    return (in_shape[0], in_shape[1],
            fx.out_size(in_shape[2], pad[0], size[0], stride[0], rounding),
            fx.out_size(in_shape[3], pad[1], size[1], stride[1], rounding))


def pooling(x, qx, qo, kind, *, pool_type, size, pad, stride, rounding, out_dtype):
    """Windows of ``size`` (y, x) at (oy*sy - py, ox*sx - px); zeros outside the input take
    part in the max and in the average (divisor size_y * size_x)."""
    shape = pool_shape(x.shape, size, pad, stride, rounding)
    oh, ow = shape[2:]
    acc_t = np.float64 if kind is None else np.int64
    n, c, h, w = x.shape
    need_h = max((oh - 1) * stride[0] + size[0], pad[0] + h)
    need_w = max((ow - 1) * stride[1] + size[1], pad[1] + w)
    xp = np.zeros((n, c, need_h, need_w), acc_t)
    xp[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + w] = x
    sy, sx = stride
    vals = [xp[:, :, i:i + (oh - 1) * sy + 1:sy, j:j + (ow - 1) * sx + 1:sx]
            for i in range(size[0]) for j in range(size[1])]
    stack = np.stack(vals)
    if pool_type == fx.POOL_MAX:
        r = stack.max(axis=0)
        if kind is None:
            return r.astype(out_dtype)
        return fx.rescale(r, qx, qo, kind, fx.NEAREST_EVEN, fx.SATURATE)
    total = stack.sum(axis=0)
    count = size[0] * size[1]
    if kind is None:
        return (total / count).astype(out_dtype)
    return fx.rescale(total, qx, qo, kind, fx.NEAREST_EVEN, fx.SATURATE, divisor=count)


def roi_coordinate(v: float) -> int:
    """A rectangle coordinate to a pixel: nearest integer, ties away from zero."""
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def roi_pooling(x, qx, rois, qr, qo, kind, *, pooled, out_dtype):
    """Caffe ROI max pooling (spatial scale 1) of the (N, R, 4) rectangles x1 y1 x2 y2;
    output (N*R, C, pooled_h, pooled_w)."""
    ph_n, pw_n = pooled
    n, c, h, w = x.shape
    r_n = rois.shape[1]
    real = rois.astype(np.float64) if kind is None else fx.to_real(rois, qr)
    acc_t = np.float64 if kind is None else np.int64
    out = np.zeros((n * r_n, c, ph_n, pw_n), acc_t)
    for b in range(n):
        for r in range(r_n):
            x1, y1, x2, y2 = (roi_coordinate(v) for v in real[b, r])
            rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
            for py in range(ph_n):
                # Caffe's bins floor(p * bin) .. ceil((p + 1) * bin), in exact integers
                hs = min(max(y1 + py * rh // ph_n, 0), h)
                he = min(max(y1 - (-(py + 1) * rh // ph_n), 0), h)
                for px in range(pw_n):
                    ws = min(max(x1 + px * rw // pw_n, 0), w)
                    we = min(max(x1 - (-(px + 1) * rw // pw_n), 0), w)
                    if he > hs and we > ws:
                        out[b * r_n + r, :, py, px] = x[b, :, hs:he, ws:we].max(axis=(1, 2))
    if kind is None:
        return out.astype(out_dtype)
    return fx.rescale(out, qx, qo, kind, fx.NEAREST_EVEN, fx.SATURATE)


def _real(x, qx, kind):
    return x.astype(np.float64) if kind is None else fx.to_real(x, qx)


def _store(y, qo, kind, out_dtype):
    return y.astype(out_dtype) if kind is None else fx.from_real(y, qo, kind)


def softmax(x, qx, qo, kind, *, axis, out_dtype):
    v = _real(x, qx, kind)
    e = np.exp(v - v.max(axis=axis, keepdims=True))
    return _store(e / e.sum(axis=axis, keepdims=True), qo, kind, out_dtype)


def lrn(x, qx, qo, kind, *, norm_type, size, alpha, beta, bias, out_dtype):
    v = _real(x, qx, kind)
    sq = v * v
    half = size // 2
    n, c, h, w = v.shape
    if norm_type == fx.ACROSS_MAPS:
        p = np.pad(sq, ((0, 0), (half, half), (0, 0), (0, 0)))
        s = sum(p[:, i:i + c] for i in range(size))
        count = size
    else:
        p = np.pad(sq, ((0, 0), (0, 0), (half, half), (half, half)))
        s = sum(p[:, :, i:i + h, j:j + w] for i in range(size) for j in range(size))
        count = size * size
    return _store(v / (bias + alpha / count * s) ** beta, qo, kind, out_dtype)


def activation_real(v, function, a, b):
    """The header's functions on real values (float64)."""
    with np.errstate(invalid="ignore", over="ignore"):
        if function == fx.LOGISTIC:
            return 1.0 / (1.0 + np.exp(-v))
        if function == fx.HYPERBOLIC_TAN:
            return a * np.tanh(b * v)
        if function == fx.RELU:
            return np.maximum(v, 0.0)
        if function == fx.BRELU:
            return np.minimum(a, np.maximum(v, 0.0))
        if function == fx.SOFTRELU:
            return np.logaddexp(0.0, v)
        if function == fx.ABS:
            return np.abs(v)
        if function == fx.SQUARE:
            return v * v
        if function == fx.SQRT:
            return np.sqrt(v)
        if function == fx.LINEAR:
            return a * v + b
    raise ValueError(f"unknown activation function {function}")


def activation(x, qx, qo, kind, *, function, a, b, out_dtype):
    v = _real(x, qx, kind)
    if kind is None:
        return activation_real(v.astype(np.float32), function, np.float32(a),
                               np.float32(b)).astype(out_dtype)
    return fx.from_real(activation_real(v, function, a, b), qo, kind)
