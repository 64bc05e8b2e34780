"""Independent NumPy implementations of the eight nodes, written from vx_khr_nn.h's equations
(and, where the header leaves a choice, docs/openvx-extension.md), in OpenVX order: every
array is indexed [x, y, c, n] (or [c, n] for fully connected), as the front end reads and
writes them. They share no code with the reference device or the front end.

Fixed point: ``raw`` integers with a position q (real value raw * 2**-q). Integer arithmetic
is exact (Python ints / int64); the conversion to the output is the header's
saturate(round(...)) with the node's policies.
"""

from __future__ import annotations

import math

import numpy as np

BITS = {"INT8": (np.int8, -128, 127), "INT16": (np.int16, -32768, 32767),
        "UINT8": (np.uint8, 0, 255)}


# ------------------------------------------------------------------ fixed-point conversion
def divide(num: np.ndarray, den: int, rounding: str) -> np.ndarray:
    """num / den as integers: "TO_ZERO" truncates, "TO_NEAREST_EVEN" rounds ties to even."""
    num = np.asarray(num, dtype=object)
    out = np.empty(num.shape, dtype=object)
    for i, v in np.ndenumerate(num):
        v = int(v)
        q, r = divmod(abs(v), den)
        if rounding == "TO_NEAREST_EVEN" and (2 * r > den or (2 * r == den and q % 2)):
            q += 1
        out[i] = q if v >= 0 else -q
    return out


def convert(acc, position: int, q_out: int, kind: str, rounding: str, overflow: str,
            extra_divisor: int = 1) -> np.ndarray:
    """An exact accumulator at ``position`` to raw ``kind`` at ``q_out``: round, then wrap or
    saturate."""
    acc = np.asarray(acc, dtype=object)
    num = acc * (1 << max(0, q_out - position))
    den = (1 << max(0, position - q_out)) * extra_divisor
    v = divide(num, den, rounding)
    dtype, lo, hi = BITS[kind]
    if overflow == "SATURATE":
        v = np.array([min(max(int(e), lo), hi) for e in v.ravel()], dtype=object)
    else:  # keep the low bits (two's complement for the signed types)
        span = hi - lo + 1
        v = np.array([(int(e) - lo) % span + lo for e in v.ravel()], dtype=object)
    return v.reshape(acc.shape).astype(dtype)


def quantize(real, q_out: int, kind: str) -> np.ndarray:
    """A real result stored as the header's nodes without policies do: nearest even, saturate."""
    dtype, lo, hi = BITS[kind]
    return np.clip(np.rint(np.asarray(real, np.float64) * 2.0 ** q_out), lo, hi).astype(dtype)


def real(raw, q) -> np.ndarray:
    return np.asarray(raw, np.float64) * 2.0 ** -q


def _acc(a):
    """Exact accumulation type: int64 for integers (8- and 16-bit products summed over a few
    thousand terms stay far inside it), float64 for floats."""
    a = np.asarray(a)
    return a.astype(np.int64) if np.issubdtype(a.dtype, np.integer) else a.astype(np.float64)


def add_bias(acc, qa, bias, qb):
    """acc (position qa) + bias (position qb), both at P = max(qa, qb); returns (sum, P)."""
    if bias is None:
        return acc, qa
    p = max(qa, qb)
    return acc * (1 << (p - qa)) + _acc(bias) * (1 << (p - qb)), p


# ------------------------------------------------------------------------------ nodes
def _window_sum(xp, w, sx, sy, dx, dy, ow, oh):
    """sum over m, n, l of xp[x*sx + m*(dx+1), y*sy + n*(dy+1), l, batch] * w[m, n, l, o]."""
    kx, ky, _, o = w.shape
    acc = np.zeros((ow, oh, o, xp.shape[3]), dtype=xp.dtype)
    for m in range(kx):
        for n in range(ky):
            x0, y0 = m * (dx + 1), n * (dy + 1)
            patch = xp[x0: x0 + sx * (ow - 1) + 1: sx, y0: y0 + sy * (oh - 1) + 1: sy]
            for lc in range(w.shape[2]):
                acc = acc + patch[:, :, lc, None, :] * w[m, n, lc][None, None, :, None]
    return acc


def _pad(x, px, py, need_x, need_y, fill=0):
    """x padded by px / py zeros before, and after up to need_x / need_y elements."""
    right = max(0, need_x - x.shape[0] - px)
    bottom = max(0, need_y - x.shape[1] - py)
    return np.pad(x, ((px, right), (py, bottom), (0, 0), (0, 0)), constant_values=fill)


def convolution(x, w, b, px, py, sx, sy, dx, dy, ow, oh):
    """The accumulator of the header's convolution (before round / saturate): out[j,k,i] =
    sum_l sum_{m,n} in[j+m, k+n, l] * w[m, n, l, i] + bias, on the zero-padded input; b is
    [O] (shared) or [OW, OH, O] (unshared), None for none; rank-3 inputs take batch 1."""
    kx, ky = w.shape[:2]
    ext_x, ext_y = kx + (kx - 1) * dx, ky + (ky - 1) * dy
    xp = _pad(_acc(x), px, py, sx * (ow - 1) + ext_x, sy * (oh - 1) + ext_y)
    acc = _window_sum(xp, _acc(w), sx, sy, dx, dy, ow, oh)
    if b is not None:
        b = _acc(b)
        acc = acc + (b[None, None, :, None] if b.ndim == 1 else b[:, :, :, None])
    return acc


def fully_connected(x, w, b):
    """outputs[i] = sum_j inputs[j] * weights[j, i] + biases[i]; x [#IFM(, N)] or [W, H, IFM
    (, N)] flattened with width fastest; returns [OFM, N]."""
    x = _acc(x)
    n = x.shape[-1] if x.ndim in (2, 4) else 1
    flat = x.reshape((-1, n), order="F")
    acc = _acc(w).T.dot(flat)
    if b is not None:
        acc = acc + _acc(b)[:, None]
    return acc


def pooling(x, kind, kx, ky, px, py, sx, sy, ow, oh):
    """Max or sum (the caller divides by kx * ky) over each window of the zero-padded input
    (the zeros take part, as the header pads before the operation)."""
    xp = _pad(_acc(x), px, py, sx * (ow - 1) + kx, sy * (oh - 1) + ky)
    out = None
    for m in range(kx):
        for n in range(ky):
            patch = xp[m: m + sx * (ow - 1) + 1: sx, n: n + sy * (oh - 1) + 1: sy]
            if out is None:
                out = patch.copy()
            elif kind == "MAX":
                out = np.maximum(out, patch)
            else:
                out = out + patch
    return out


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def lrn(x, kind, size, alpha, beta, bias):
    """x / (bias + alpha / count * S) ** beta: S the sum of squares over size maps around c
    (ACROSS_MAPS, count size) or over the size x size square around (x, y) (SAME_MAP, count
    size * size), zero padded."""
    r = size // 2
    sq = np.pad(x * x, ((r, r), (r, r), (r, r), (0, 0)))
    s = np.zeros_like(x)
    w, h, c = x.shape[:3]
    if kind == "ACROSS_MAPS":
        for k in range(size):
            s += sq[r: r + w, r: r + h, k: k + c]
        count = size
    else:
        for i in range(size):
            for j in range(size):
                s += sq[i: i + w, j: j + h, r: r + c]
        count = size * size
    return x / (bias + alpha / count * s) ** beta


def activation(x, function, a, b):
    """The header's table of functions."""
    return {"LOGISTIC": lambda: 1 / (1 + np.exp(-x)),
            "HYPERBOLIC_TAN": lambda: a * np.tanh(b * x),
            "RELU": lambda: np.maximum(0, x),
            "BRELU": lambda: np.minimum(a, np.maximum(0, x)),
            "SOFTRELU": lambda: np.log1p(np.exp(x)),
            "ABS": lambda: np.abs(x),
            "SQUARE": lambda: x * x,
            "SQRT": lambda: np.sqrt(np.maximum(x, 0)),
            "LINEAR": lambda: a * x + b}[function]()


def roi_pooling(x, rois, pw, ph):
    """Max over each of pw x ph bins of every rectangle (x1, y1, x2, y2 inclusive, input
    pixels; Caffe's bins, in exact integers); x [W, H, C, N], rois [4, R, N] (real, rounded
    half away from 0); returns [pw, ph, C, R * N] with column n * R + r, 0 for an empty bin."""
    w, h, c, n = x.shape
    r_count = rois.shape[1]
    out = np.zeros((pw, ph, c, r_count * n), dtype=x.dtype)
    for bn in range(n):
        for r in range(r_count):
            x1, y1, x2, y2 = (int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)
                              for v in rois[:, r, bn])
            rw, rh = max(x2 - x1 + 1, 1), max(y2 - y1 + 1, 1)
            for i in range(pw):
                # exact integer bins: [x1 + floor(i * rw / pw), x1 + ceil((i + 1) * rw / pw))
                xs = max(min(x1 + i * rw // pw, w), 0)
                xe = max(min(x1 - (-(i + 1) * rw // pw), w), 0)
                for j in range(ph):
                    ys = max(min(y1 + j * rh // ph, h), 0)
                    ye = max(min(y1 - (-(j + 1) * rh // ph), h), 0)
                    if xe > xs and ye > ys:
                        out[i, j, :, bn * r_count + r] = x[xs:xe, ys:ye, :, bn].max(axis=(0, 1))
    return out


def deconvolution(x, w, b, px, py, ux, uy, ow, oh):
    """The header's deconvolution (before round / saturate): the input up-scaled with
    upscale - 1 zeros between elements, padded by kernel - padding - 1 zeros, then
    sum in_upscaled[j+m, k+n, l] * w[m, n, l, i] (no flip) + biases[i]."""
    x = _acc(x)
    wi, hi, c, n = x.shape
    up = np.zeros(((wi - 1) * ux + 1, (hi - 1) * uy + 1, c, n), dtype=x.dtype)
    up[::ux, ::uy] = x
    kx, ky = w.shape[:2]
    acc = _window_sum(_pad(up, kx - px - 1, ky - py - 1, ow + kx - 1, oh + ky - 1), _acc(w),
                      1, 1, 0, 0, ow, oh)
    if b is not None:
        acc = acc + _acc(b)[None, None, :, None]
    return acc
