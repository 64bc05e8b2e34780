"""RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR: resize the spatial dimensions of a 4-D image.

| input | meaning                                                              |
|-------|----------------------------------------------------------------------|
| 0     | 4-D tensor [batches, height, width, depth] (NHWC, or NCHW by input 3)|
| 1     | output width (INT32) or width scale (FLOAT32; FLOAT16 for fp16 data) |
| 2     | output height (INT32) or height scale (same scalar type as input 1)  |
| 3     | BOOL layout, true = NCHW (optional for RESIZE_BILINEAR, since 1.2)   |
| 4     | BOOL align_corners (optional, since 1.3)                             |
| 5     | BOOL half_pixel_centers (optional, since 1.3)                        |

Output 0: [batches, new_height, new_width, depth], same type and quantization as input 0.
By scale, new_size = floor(size * scale) computed in float32.

Types: RESIZE_BILINEAR TENSOR_FLOAT32 (1.0), TENSOR_FLOAT16 / TENSOR_QUANT8_ASYMM / the layout
input / scale form (1.2), TENSOR_QUANT8_ASYMM_SIGNED (1.3). RESIZE_NEAREST_NEIGHBOR (1.2,
layout input required): TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM;
TENSOR_QUANT8_ASYMM_SIGNED (1.3). Inputs 4 and 5 are 1.3 for both.

The arithmetic follows TFLite's built-in kernels: the sampling scale is in_size / out_size (or
(in - 1) / (out - 1) with align_corners), computed in float32. Quantized bilinear results
are their bits: QUANT8_ASYMM as TFLite's uint8 kernel, the four float32 weights
(1 - dy) * (1 - dx), (1 - dy) * dx, dy * (1 - dx), dy * dx first, then the weighted sum of the
(y0, x0), (y0, x1), (y1, x0), (y1, x1) values in that order, plus 0.5, truncated;
QUANT8_ASYMM_SIGNED as ResizeBilinearInteger, in 10-bit fixed point (scale_10 = round(1024 *
scale) in integers, positions y * scale_10 (half pixel: + scale_10 / 2 - 512), weights
1024 - frac and frac), the 20-bit sum rounded half away from zero.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import check_rank, check_same_quant
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig
from hal.types import HalVersion, OperandType

OT = OperandType

# (tensor type, float scalar type for the scale form, version of the tensor type per op)
_TYPES = [
    ("TENSOR_FLOAT32", "FLOAT32", {"RESIZE_BILINEAR": "V1_0", "RESIZE_NEAREST_NEIGHBOR": "V1_2"}),
    ("TENSOR_FLOAT16", "FLOAT16", {"RESIZE_BILINEAR": "V1_2", "RESIZE_NEAREST_NEIGHBOR": "V1_2"}),
    ("TENSOR_QUANT8_ASYMM", "FLOAT32",
     {"RESIZE_BILINEAR": "V1_2", "RESIZE_NEAREST_NEIGHBOR": "V1_2"}),
    ("TENSOR_QUANT8_ASYMM_SIGNED", "FLOAT32",
     {"RESIZE_BILINEAR": "V1_3", "RESIZE_NEAREST_NEIGHBOR": "V1_3"}),
]


def _signatures(op: str):
    out = []
    min_inputs = 3 if op == "RESIZE_BILINEAR" else 4
    for t, ft, versions in _TYPES:
        base = HalVersion[versions[op]]
        for count in range(min_inputs, 7):
            for scalar in ("INT32", ft):
                v = base
                if count >= 4 or scalar != "INT32":
                    v = max(v, HalVersion.V1_2)
                if count >= 5:
                    v = max(v, HalVersion.V1_3)
                out.append(sig(v, [t, scalar, scalar] + ["BOOL"] * (count - 3), [t]))
    return out


def resize_flags(ctx: OperationContext):
    """(nchw, align_corners, half_pixel_centers); None where not known yet."""
    flags = []
    for i in (3, 4, 5):
        if not ctx.has_input(i):
            flags.append(False)
        else:
            v = ctx.scalar(i)
            flags.append(None if v is None else bool(v))
    return tuple(flags)


def _out_size(ctx: OperationContext, index: int, in_size: int):
    """Output width (index 1) or height (index 2); None when not known yet."""
    v = ctx.scalar(index)
    if v is None:
        return None
    if ctx.input_type(index) == OT.INT32:
        return int(v)
    if in_size == 0:
        return None
    return int(np.floor(np.float32(in_size) * np.float32(v)))


def validate(ctx: OperationContext):
    check_rank(ctx, 0, 4)
    check_same_quant(ctx, ctx.inputs[0], ctx.outputs[0], "input 0 and output 0")
    for i, what in ((1, "output width"), (2, "output height")):
        v = ctx.scalar(i)
        if v is not None:
            kind = what if ctx.input_type(i) == OT.INT32 else what + " scale"
            ctx.require(v > 0, f"input {i} ({kind}) must be > 0, got {v}")
    _, align, half = resize_flags(ctx)
    ctx.require(not (align and half),
                "input 4 (align_corners) and input 5 (half_pixel_centers) cannot both be true")
    shape = ctx.input_shape(0)
    nchw = resize_flags(ctx)[0]
    if len(shape) == 4 and nchw is not None:
        h, w = (shape[2], shape[3]) if nchw else (shape[1], shape[2])
        for i, size, what in ((1, w, "width"), (2, h, "height")):
            if size:
                out = _out_size(ctx, i, size)
                ctx.require(out is None or out > 0,
                            f"the output {what} must be > 0, got {out}")


def prepare(ctx: OperationContext):
    n, a, b, c = ctx.input_shape(0)
    nchw = resize_flags(ctx)[0]
    h, w = (b, c) if nchw else (a, b)
    out_w = _out_size(ctx, 1, w)
    out_h = _out_size(ctx, 2, h)
    if out_w is None or out_h is None:
        raise LookupError(f"{ctx.name}: the output size is not known before execution")
    ctx.require(out_w > 0 and out_h > 0,
                f"the output size must be > 0, got height {out_h} and width {out_w}")
    return [(n, a, out_h, out_w) if nchw else (n, out_h, out_w, c)]


def _scale(in_size: int, out_size: int, align: bool) -> np.float32:
    if align and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def bilinear_axis(in_size, out_size, align, half):
    scale = _scale(in_size, out_size, align)
    pos = np.arange(out_size, dtype=np.float32)
    if half:
        src = (pos + np.float32(0.5)) * scale - np.float32(0.5)
    else:
        src = pos * scale
    lo = np.maximum(np.floor(src), 0).astype(np.int64)
    hi = np.minimum(np.ceil(src).astype(np.int64), in_size - 1)
    frac = (src - lo.astype(np.float32)).astype(np.float32)
    return lo, hi, frac


def nearest_axis(in_size, out_size, align, half):
    scale = _scale(in_size, out_size, align)
    pos = np.arange(out_size, dtype=np.float32)
    if half:
        pos = pos + np.float32(0.5)
    src = (pos * scale).astype(np.float32)
    if align:
        idx = (np.sign(src) * np.floor(np.abs(src) + np.float32(0.5))).astype(np.int64)
    else:
        idx = np.floor(src).astype(np.int64)
    idx = np.minimum(idx, in_size - 1)
    if half:
        idx = np.maximum(idx, 0)
    return idx


def _scale_10(in_size: int, out_size: int, align: bool) -> int:
    if align and out_size > 1:
        return ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    return ((1 << 10) * in_size + out_size // 2) // out_size


def _cdiv(a, b: int):
    """C++ integer division (truncating) of an int64 array."""
    return np.where(a >= 0, a // b, -((-a) // b))


def integer_axis(in_size, out_size, align, half):
    """ResizeBilinearInteger's positions (10-bit fixed point) and neighbours on one axis."""
    s10 = _scale_10(in_size, out_size, align)
    v = np.arange(out_size, dtype=np.int64) * s10
    if half:
        v = v + s10 // 2 - (1 << 9)
    lo = np.maximum(_cdiv(v, 1 << 10), 0)
    hi = np.minimum(_cdiv(v + (1 << 10) - 1, 1 << 10), in_size - 1)
    return v - (lo << 10), lo, hi


def _bilinear_int8(x, out_h, out_w, align, half):
    fy, y0, y1 = integer_axis(x.shape[1], out_h, align, half)
    fx, x0, x1 = integer_axis(x.shape[2], out_w, align, half)
    xi = x.astype(np.int64)
    fy, fx = fy[None, :, None, None], fx[None, None, :, None]
    r0, r1, c0, c1 = y0[:, None], y1[:, None], x0[None, :], x1[None, :]
    acc = (xi[:, r0, c0] * (1024 - fy) * (1024 - fx) + xi[:, r1, c0] * fy * (1024 - fx)
           + xi[:, r0, c1] * (1024 - fy) * fx + xi[:, r1, c1] * fy * fx)
    return _cdiv(acc + np.where(acc > 0, 1 << 19, -(1 << 19)), 1 << 20)


def _bilinear_float(x, out_h, out_w, align, half, integer):
    y0, y1, dy = bilinear_axis(x.shape[1], out_h, align, half)
    x0, x1, dx = bilinear_axis(x.shape[2], out_w, align, half)
    xf = x.astype(np.float32)
    one = np.float32(1)
    dy, dx = dy[None, :, None, None], dx[None, None, :, None]
    r0, r1 = y0[:, None], y1[:, None]
    c0, c1 = x0[None, :], x1[None, :]
    if not integer:
        return (xf[:, r0, c0, :] * (one - dy) * (one - dx) + xf[:, r1, c0, :] * dy * (one - dx)
                + xf[:, r0, c1, :] * (one - dy) * dx + xf[:, r1, c1, :] * dy * dx)
    w = [(one - dy) * (one - dx), (one - dy) * dx, dy * (one - dx), dy * dx]
    res = xf[:, r0, c0, :] * w[0] + xf[:, r0, c1, :] * w[1]
    res = res + xf[:, r1, c0, :] * w[2]
    res = res + xf[:, r1, c1, :] * w[3]
    return np.trunc(res + np.float32(0.5))


def _resize_nhwc(op: str, x: np.ndarray, out_h: int, out_w: int, align: bool, half: bool,
                 integer: bool) -> np.ndarray:
    _, in_h, in_w, _ = x.shape
    if op == "RESIZE_NEAREST_NEIGHBOR":
        yi = nearest_axis(in_h, out_h, align, half)
        xi = nearest_axis(in_w, out_w, align, half)
        return x[:, yi[:, None], xi[None, :], :]
    if x.dtype == np.int8:
        return _bilinear_int8(x, out_h, out_w, align, half)
    return _bilinear_float(x, out_h, out_w, align, half, integer)


def execute(ctx: OperationContext):
    x = ctx.input(0)
    out_shape = ctx.outputs[0].shape
    nchw, align, half = resize_flags(ctx)
    if nchw:
        x = x.transpose(0, 2, 3, 1)
        out_h, out_w = out_shape[2], out_shape[3]
    else:
        out_h, out_w = out_shape[1], out_shape[2]
    info = ctx.outputs[0]
    integer = np.issubdtype(info.dtype, np.integer)
    if x.size == 0:
        res = np.zeros((x.shape[0], out_h, out_w, x.shape[3]), dtype=info.dtype)
    else:
        res = _resize_nhwc(ctx.name, x, out_h, out_w, align, half, integer)
    if integer:
        lo, hi = np.iinfo(info.dtype).min, np.iinfo(info.dtype).max
        res = np.clip(res, lo, hi)
    res = res.astype(info.dtype)
    if nchw:
        res = res.transpose(0, 3, 1, 2)
    return [np.ascontiguousarray(res)]


for _op in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"):
    register(_op, execute, signatures=_signatures(_op), validate=validate, prepare=prepare,
             family="resize")
