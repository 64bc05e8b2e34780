"""NumPy arithmetic of org.clnn.openvx CONVOLUTION, DECONVOLUTION and FULLY_CONNECTED
(docs/openvx-extension.md), on raw arrays and positions; hal/operations/openvx_conv.py binds
it to the HAL. ``kind`` None means float32 tensors (plain float arithmetic)."""

from __future__ import annotations

import numpy as np

from hal.operations._openvx_fixed import align_bias, out_size, rescale


def correlate(x, w, pad: tuple[int, int], stride: tuple[int, int], step: tuple[int, int],
              out_hw: tuple[int, int]) -> np.ndarray:
    """sum_{c,ky,kx} x[n, c, oy*sy - py + ky*ty, ox*sx - px + kx*tx] * w[o, c, ky, kx] over
    NCHW ``x`` and OIHW ``w``; positions outside ``x`` read 0 (``pad`` may be negative: a
    crop). int64 for integer inputs (exact), float64 otherwise."""
    acc_t = np.float64 if x.dtype.kind == "f" else np.int64
    x = x.astype(acc_t)
    w = w.astype(acc_t)
    n, _, h, wd = x.shape
    o, _, ky_n, kx_n = w.shape
    oh, ow = out_hw
    (py, px), (sy, sx), (ty, tx) = pad, stride, step
    # crop a negative leading pad, then zero-pad so that every read lies inside
    if py < 0:
        x, h, py = x[:, :, -py:, :], h + py, 0
    if px < 0:
        x, wd, px = x[:, :, :, -px:], wd + px, 0
    need_h = (oh - 1) * sy + (ky_n - 1) * ty + 1
    need_w = (ow - 1) * sx + (kx_n - 1) * tx + 1
    xp = np.zeros((n, x.shape[1], max(need_h, py + h), max(need_w, px + wd)), acc_t)
    xp[:, :, py:py + h, px:px + wd] = x
    acc = np.zeros((n, o, oh, ow), acc_t)
    for ky in range(ky_n):
        for kx in range(kx_n):
            patch = xp[:, :, ky * ty:ky * ty + (oh - 1) * sy + 1:sy,
                       kx * tx:kx * tx + (ow - 1) * sx + 1:sx]
            acc += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
    return acc


def finish(acc, acc_pos, bias, bias_pos, out_pos, kind, overflow, rounding, out_dtype):
    """Add the bias and convert to the output (fixed point) or cast (float)."""
    if kind is None:
        if bias is not None:
            acc = acc + bias.astype(np.float64)
        return acc.astype(out_dtype)
    total, pos = align_bias(acc, acc_pos, bias, bias_pos)
    return rescale(total, pos, out_pos, kind, rounding, overflow)


def conv_shape(in_shape, w_shape, pad, stride, dilation, rounding):
    (py, px), (sy, sx), (dy, dx) = pad, stride, dilation
    ky, kx = w_shape[2], w_shape[3]
    oh = out_size(in_shape[2], py, ky + (ky - 1) * dy, sy, rounding)
    ow = out_size(in_shape[3], px, kx + (kx - 1) * dx, sx, rounding)
    return (in_shape[0], w_shape[0], oh, ow)


def convolution(x, qx, w, qw, b, qb, qo, kind, *, pad, stride, dilation, overflow, rounding,
                size_rounding, out_dtype):
    shape = conv_shape(x.shape, w.shape, pad, stride, dilation, size_rounding)
    step = (dilation[0] + 1, dilation[1] + 1)
    acc = correlate(x, w, pad, stride, step, shape[2:])
    if b is not None:
        b = b.reshape(1, shape[1], 1, 1) if b.ndim == 1 else b.reshape(1, *b.shape)
    return finish(acc, qx + qw, b, qb, qo, kind, overflow, rounding, out_dtype)


def deconv_shape(in_shape, w_shape, pad, upscale, a):
    (py, px), (sy, sx), (ay, ax) = pad, upscale, a
    return (in_shape[0], w_shape[0], (in_shape[2] - 1) * sy - 2 * py + w_shape[2] + ay,
            (in_shape[3] - 1) * sx - 2 * px + w_shape[3] + ax)


def deconvolution(x, qx, w, qw, b, qb, qo, kind, *, pad, upscale, a, overflow, rounding,
                  out_dtype):
    shape = deconv_shape(x.shape, w.shape, pad, upscale, a)
    (sy, sx) = upscale
    n, c, h, wd = x.shape
    up = np.zeros((n, c, (h - 1) * sy + 1, (wd - 1) * sx + 1), x.dtype)
    up[:, :, ::sy, ::sx] = x
    in_pad = (w.shape[2] - pad[0] - 1, w.shape[3] - pad[1] - 1)
    acc = correlate(up, w, in_pad, (1, 1), (1, 1), shape[2:])
    if b is not None:
        b = b.reshape(1, shape[1], 1, 1)
    return finish(acc, qx + qw, b, qb, qo, kind, overflow, rounding, out_dtype)


def fully_connected(x, qx, w, qw, b, qb, qo, kind, *, overflow, rounding, out_dtype):
    acc_t = np.float64 if kind is None else np.int64
    acc = x.astype(acc_t) @ w.astype(acc_t).T
    return finish(acc, qx + qw, None if b is None else b.reshape(1, -1), qb, qo, kind,
                  overflow, rounding, out_dtype)
