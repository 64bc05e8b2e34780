"""Independent implementations of the OpenVX NN layers (seed 002, vx_khr_nn.h), written from
the header's equations and docs/openvx-extension.md for the tests, not from the reference
device's code: plain loops over Python numbers, exact rationals (fractions.Fraction) for fixed
point, so rounding and overflow are decided on the exact value.

A data tensor here is ``(array, position)``; ``dt`` is "f32", "i8", "i16" or "u8".
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

RANGES = {"i8": (-128, 127, 8, np.int8), "i16": (-32768, 32767, 16, np.int16),
          "u8": (0, 255, 8, np.uint8)}
WRAP, SATURATE = 0, 1
TO_ZERO, NEAREST_EVEN = 0, 1


def real(raw, q) -> Fraction:
    """The exact value of raw element ``raw`` at fixed-point position q: raw * 2^-q."""
    return Fraction(int(raw)) / Fraction(2) ** q


def to_raw(value, q, dt, rounding=NEAREST_EVEN, overflow=SATURATE) -> int:
    """The raw element at position q of an exact value: rounded (toward zero, or to nearest
    with ties to even), then wrapped into the type's bits or saturated."""
    lo, hi, bits, _ = RANGES[dt]
    v = Fraction(value) * Fraction(2) ** q
    r = int(v) if rounding == TO_ZERO else round(v)  # int() truncates; round() ties to even
    if overflow == SATURATE:
        return min(max(r, lo), hi)
    return (r - lo) % (1 << bits) + lo


def value(x, q, dt, idx):
    return float(x[idx]) if dt == "f32" else real(x[idx], q)


def store(values, shape, q, dt, **policy):
    """An array of exact (fixed point) or float values in the output type."""
    if dt == "f32":
        return np.array(values, dtype=np.float64).reshape(shape).astype(np.float32)
    return np.array([to_raw(v, q, dt, **policy) for v in values],
                    dtype=RANGES[dt][3]).reshape(shape)


def down_scale_size(size, pad, kernel, stride, ceiling) -> int:
    """The header's width_output = round((width + 2*pad - kernel) / skip + 1)."""
    f = Fraction(size + 2 * pad - kernel, stride)
    return (math.ceil(f) if ceiling else math.floor(f)) + 1


def convolution(x, w, b, out_q, dt, pad, stride, dilation, overflow, rounding, ceiling):
    """outputs[j,k,i] = saturate(round(sum_l sum_mn inputs[j+m,k+n,l] * weights[m,n,l,i] +
    biases)), inputs zero padded, the kernel inflated by ``dilation`` zeros between taps, the
    result picked every ``stride``; NCHW / OIHW arrays."""
    (xa, qx), (wa, qw) = x, w
    n_, c_, h_, w_ = xa.shape
    o_, _, ky_, kx_ = wa.shape
    (py, px), (sy, sx), (dy, dx) = pad, stride, dilation
    oh = down_scale_size(h_, py, ky_ + (ky_ - 1) * dy, sy, ceiling)
    ow = down_scale_size(w_, px, kx_ + (kx_ - 1) * dx, sx, ceiling)
    out = []
    for n in range(n_):
        for o in range(o_):
            for oy in range(oh):
                for ox in range(ow):
                    s = 0
                    for c in range(c_):
                        for ky in range(ky_):
                            for kx in range(kx_):
                                iy, ix = oy * sy - py + ky * (dy + 1), ox * sx - px + kx * (dx + 1)
                                if 0 <= iy < h_ and 0 <= ix < w_:
                                    s += value(xa, qx, dt, (n, c, iy, ix)) * value(
                                        wa, qw, dt, (o, c, ky, kx))
                    if b is not None:
                        ba, qb = b
                        s += value(ba, qb, dt, (o,) if ba.ndim == 1 else (o, oy, ox))
                    out.append(s)
    return store(out, (n_, o_, oh, ow), out_q, dt, rounding=rounding, overflow=overflow)


def deconvolution(x, w, b, out_q, dt, pad, upscale, a, overflow, rounding):
    """The header's deconvolution: up-scale the input with zeros between elements, pad it by
    kernel - padding - 1 (and a at the end), then the convolution equation (unflipped)."""
    (xa, qx), (wa, qw) = x, w
    n_, c_, h_, w_ = xa.shape
    o_, _, ky_, kx_ = wa.shape
    (py, px), (sy, sx), (ay, ax) = pad, upscale, a
    oh = (h_ - 1) * sy - 2 * py + ky_ + ay
    ow = (w_ - 1) * sx - 2 * px + kx_ + ax
    # the up-scaled, padded input as a dict of its non-zero positions
    up = {}
    for n in range(n_):
        for c in range(c_):
            for i in range(h_):
                for j in range(w_):
                    up[n, c, i * sy + ky_ - py - 1, j * sx + kx_ - px - 1] = value(
                        xa, qx, dt, (n, c, i, j))
    out = []
    for n in range(n_):
        for o in range(o_):
            for oy in range(oh):
                for ox in range(ow):
                    s = 0
                    for c in range(c_):
                        for ky in range(ky_):
                            for kx in range(kx_):
                                v = up.get((n, c, oy + ky, ox + kx))
                                if v is not None:
                                    s += v * value(wa, qw, dt, (o, c, ky, kx))
                    if b is not None:
                        s += value(b[0], b[1], dt, (o,))
                    out.append(s)
    return store(out, (n_, o_, oh, ow), out_q, dt, rounding=rounding, overflow=overflow)


def fully_connected(x, w, b, out_q, dt, overflow, rounding):
    """outputs[i] = saturate(round(sum_j inputs[j] * weights[j,i] + biases[i]))."""
    (xa, qx), (wa, qw) = x, w
    out = []
    for n in range(xa.shape[0]):
        for o in range(wa.shape[0]):
            s = sum(value(xa, qx, dt, (n, j)) * value(wa, qw, dt, (o, j))
                    for j in range(xa.shape[1]))
            if b is not None:
                s += value(b[0], b[1], dt, (o,))
            out.append(s)
    return store(out, (xa.shape[0], wa.shape[0]), out_q, dt, rounding=rounding,
                 overflow=overflow)


def pooling(x, out_q, dt, avg, size, pad, stride, ceiling):
    """Pad with zeros, take the max or the average (zeros included) of each size window,
    every stride."""
    xa, qx = x
    n_, c_, h_, w_ = xa.shape
    oh = down_scale_size(h_, pad[0], size[0], stride[0], ceiling)
    ow = down_scale_size(w_, pad[1], size[1], stride[1], ceiling)
    out = []
    for n in range(n_):
        for c in range(c_):
            for oy in range(oh):
                for ox in range(ow):
                    vals = []
                    for i in range(size[0]):
                        for j in range(size[1]):
                            iy, ix = oy * stride[0] - pad[0] + i, ox * stride[1] - pad[1] + j
                            inside = 0 <= iy < h_ and 0 <= ix < w_
                            vals.append(value(xa, qx, dt, (n, c, iy, ix)) if inside else 0)
                    out.append(sum(vals) / Fraction(len(vals)) if avg and dt != "f32"
                               else sum(vals) / len(vals) if avg else max(vals))
    return store(out, (n_, c_, oh, ow), out_q, dt)


def roi_pooling(x, rois, out_q, dt, pooled):
    """Caffe's ROI max pooling (spatial scale 1), bins computed on exact rationals:
    [floor(p * h / P), ceil((p + 1) * h / P)) from the roi's top left, clipped."""
    xa, qx = x
    ra, qr = rois
    n_, c_, h_, w_ = xa.shape
    ph_, pw_ = pooled
    out = []
    for n in range(n_):
        for r in range(ra.shape[1]):
            coords = []
            for k in range(4):
                v = value(ra, qr, dt, (n, r, k))
                coords.append(int(math.floor(abs(v) + Fraction(1, 2))) * (1 if v >= 0 else -1))
            x1, y1, x2, y2 = coords
            rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
            for c in range(c_):
                for p in range(ph_):
                    hs = min(max(y1 + math.floor(Fraction(p * rh, ph_)), 0), h_)
                    he = min(max(y1 + math.ceil(Fraction((p + 1) * rh, ph_)), 0), h_)
                    for q in range(pw_):
                        ws = min(max(x1 + math.floor(Fraction(q * rw, pw_)), 0), w_)
                        we = min(max(x1 + math.ceil(Fraction((q + 1) * rw, pw_)), 0), w_)
                        vals = [value(xa, qx, dt, (n, c, i, j))
                                for i in range(hs, he) for j in range(ws, we)]
                        out.append(max(vals) if vals else 0)
    return store(out, (n_ * ra.shape[1], c_, ph_, pw_), out_q, dt)


def floats(x, dt):
    """Element values as floats (fixed point: exact in float64 for 8/16-bit raws)."""
    xa, q = x
    return xa.astype(np.float64) if dt == "f32" else xa.astype(np.float64) * 2.0 ** -q


def store_float(y, out_q, dt):
    """Float results of a real-valued function: float32, or nearest even and saturated."""
    if dt == "f32":
        return y.astype(np.float32)
    lo, hi, _, npt = RANGES[dt]
    flat = [0 if math.isnan(v) else min(max(round(v * 2.0 ** out_q), lo), hi)
            for v in y.reshape(-1).tolist()]
    return np.array(flat, dtype=npt).reshape(y.shape)


def softmax(x, out_q, dt, axis):
    v = floats(x, dt)
    y = np.zeros_like(v)
    moved, ymoved = np.moveaxis(v, axis, -1), np.moveaxis(y, axis, -1)
    for idx in np.ndindex(moved.shape[:-1]):
        top = max(moved[idx])  # exp(z - max) / sum exp(z - max): the same ratio, no overflow
        row = [math.exp(t - top) for t in moved[idx]]
        ymoved[idx] = [e / sum(row) for e in row]
    return store_float(y, out_q, dt)


def lrn(x, out_q, dt, across, size, alpha, beta, bias):
    """x / (bias + alpha / n * sum x^2)^beta, the sum over n maps or an n x n rectangle."""
    v = floats(x, dt)
    n_, c_, h_, w_ = v.shape
    y = np.zeros_like(v)
    r = size // 2
    for n, c, i, j in np.ndindex(v.shape):
        if across:
            s = sum(v[n, k, i, j] ** 2 for k in range(c - r, c + r + 1) if 0 <= k < c_)
            count = size
        else:
            s = sum(v[n, c, a, b] ** 2 for a in range(i - r, i + r + 1)
                    for b in range(j - r, j + r + 1) if 0 <= a < h_ and 0 <= b < w_)
            count = size * size
        y[n, c, i, j] = v[n, c, i, j] / (bias + alpha / count * s) ** beta
    return store_float(y, out_q, dt)


def _fn(name, t, a, b):
    if name == "LOGISTIC":
        return 1 / (1 + math.exp(-t)) if t > -700 else 0.0  # math.exp overflows past 709
    if name == "HYPERBOLIC_TAN":
        return a * math.tanh(b * t)
    if name == "RELU":
        return max(0.0, t)
    if name == "BRELU":
        return min(a, max(0.0, t))
    if name == "SOFTRELU":
        return math.log1p(math.exp(t)) if t < 30 else t
    if name == "ABS":
        return abs(t)
    if name == "SQUARE":
        return t * t
    if name == "SQRT":
        return math.sqrt(t) if t >= 0 else math.nan
    return a * t + b  # LINEAR


def activation(x, out_q, dt, name, a, b):
    v = floats(x, dt)
    y = np.array([_fn(name, t, a, b) for t in v.reshape(-1).tolist()]).reshape(v.shape)
    return store_float(y, out_q, dt)
