"""ROI_ALIGN and ROI_POOLING: resample regions of interest of a feature map (HAL 1.2).

| op          | inputs                                                            | output 0     |
|-------------|-------------------------------------------------------------------|--------------|
| ROI_ALIGN   | 0: feature map [N, H, W, C]; 1: rois [R, 4] (x1, y1, x2, y2);     | [R, oh, ow,  |
|             | 2: TENSOR_INT32 batch index [R]; 3, 4: INT32 out height, width;   |  C] (NCHW:   |
|             | 5, 6: height, width stride; 7, 8: INT32 sampling ratio h, w       |  [R, C, oh,  |
|             | (0 = adaptive); 9: BOOL NCHW                                      |  ow])        |
| ROI_POOLING | 0..4 as ROI_ALIGN; 5, 6: height, width stride; 7: BOOL NCHW       | idem         |

Types: TENSOR_FLOAT32 (rois TENSOR_FLOAT32, strides FLOAT32), TENSOR_FLOAT16 (rois
TENSOR_FLOAT16, strides FLOAT16), TENSOR_QUANT8_ASYMM (1.2) and TENSOR_QUANT8_ASYMM_SIGNED (1.3)
with rois TENSOR_QUANT16_ASYMM of scale 0.125 and zero point 0 and FLOAT32 strides. ROI_ALIGN's
quantized output may have its own scale and zero point; ROI_POOLING's must equal the input's.
Zero rois give a zero-sized output. Malformed rois (out of the feature map, x2 < x1, batch index
out of range) fail the execution.

The coordinate arithmetic follows the reference in the input's float type (float16 for
TENSOR_FLOAT16 models), so bins and sampling points fall where the reference puts them.
"""

from __future__ import annotations

import numpy as np

from hal.errors import GeneralFailure
from hal.operations.common import QUANT8_TENSORS, check_rank, qrange
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

_FORMS = [("V1_2", "TENSOR_FLOAT32", "TENSOR_FLOAT32", "FLOAT32"),
          ("V1_2", "TENSOR_FLOAT16", "TENSOR_FLOAT16", "FLOAT16"),
          ("V1_2", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT16_ASYMM", "FLOAT32"),
          ("V1_3", "TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT16_ASYMM", "FLOAT32")]

ALIGN_SIGNATURES = [sig(v, [t, r, "TENSOR_INT32", "INT32", "INT32", f, f, "INT32", "INT32",
                            "BOOL"], [t]) for v, t, r, f in _FORMS]
POOLING_SIGNATURES = [sig(v, [t, r, "TENSOR_INT32", "INT32", "INT32", f, f, "BOOL"], [t])
                      for v, t, r, f in _FORMS]

_LAYOUT = {"ROI_ALIGN": 9, "ROI_POOLING": 7}


def _nchw(ctx: OperationContext) -> bool | None:
    v = ctx.scalar(_LAYOUT[ctx.name])
    return None if v is None else bool(v)


def validate(ctx: OperationContext):
    check_rank(ctx, 0, 4)
    check_rank(ctx, 1, 2)
    check_rank(ctx, 2, 1)
    rois, batch = ctx.inputs[1].shape, ctx.inputs[2].shape
    if len(rois) == 2 and rois[1]:
        ctx.require(rois[1] == 4, f"input 1 (rois) must have shape [num_rois, 4], got {list(rois)}")
    if len(rois) == 2 and len(batch) == 1 and rois[0] and batch[0]:
        ctx.require(rois[0] == batch[0], f"input 2 (batch indexes) has {batch[0]} entries for "
                                         f"{rois[0]} rois")
    for i, what in ((3, "output height"), (4, "output width")):
        v = ctx.scalar(i)
        ctx.require(v is None or v > 0, f"input {i} ({what}) must be > 0, got {v}")
    for i, what in ((5, "height stride"), (6, "width stride")):
        v = ctx.scalar(i)
        ctx.require(v is None or v > 0, f"input {i} ({what}) must be > 0, got {v}")
    if ctx.name == "ROI_ALIGN":
        for i, what in ((7, "height sampling ratio"), (8, "width sampling ratio")):
            v = ctx.scalar(i)
            ctx.require(v is None or v >= 0, f"input {i} ({what}) must be >= 0, got {v}")
    roi = ctx.inputs[1]
    if ctx.inputs[0].type in QUANT8_TENSORS:
        ctx.require(roi.scale == 0.125 and roi.zero_point == 0,
                    "input 1 (rois, TENSOR_QUANT16_ASYMM) must have scale 0.125 and zero point 0,"
                    f" got {roi.scale} and {roi.zero_point}")
        if ctx.name == "ROI_POOLING":
            i, o = ctx.inputs[0], ctx.outputs[0]
            ctx.require(i.scale == o.scale and i.zero_point == o.zero_point,
                        "input 0 and output 0 must have the same scale and zero point")


def prepare(ctx: OperationContext):
    nchw = _nchw(ctx)
    oh, ow = ctx.scalar(3), ctx.scalar(4)
    shape = ctx.input_shape(0)
    if nchw is None or oh is None or ow is None or len(shape) != 4:
        return None
    r = ctx.input_shape(1)[0] if ctx.inputs[1].rank == 2 else 0
    c = shape[1] if nchw else shape[3]
    return [(r, c, oh, ow) if nchw else (r, oh, ow, c)]


# ----------------------------------------------------------------------------- shared

def _setup(ctx: OperationContext):
    """(feature map NHWC as given dtype, rois in the coordinate float type, batch ids, ft)."""
    nchw = bool(ctx.scalar(_LAYOUT[ctx.name]))
    x = ctx.input(0)
    if nchw:
        x = x.transpose(0, 2, 3, 1)
    ft = np.float16 if x.dtype == np.float16 else np.float32
    rois = ctx.input(1)
    if ctx.inputs[0].type in QUANT8_TENSORS:
        rois = rois.astype(np.float32) * np.float32(0.125)
    rois = rois.astype(ft).reshape(-1, 4)
    batch = ctx.input(2).reshape(-1).astype(np.int64)
    if 0 in x.shape:
        raise GeneralFailure(f"{ctx.name}: the feature map {list(x.shape)} (NHWC) is empty; only "
                             "num_rois may be zero")
    if batch.size != rois.shape[0]:
        raise GeneralFailure(f"{ctx.name}: {batch.size} batch indexes for {rois.shape[0]} rois")
    return nchw, x, rois, batch, ft


def _inverse(stride, ft):
    """1.0f / stride in float32, then stored in the coordinate type (as the reference)."""
    with np.errstate(divide="ignore"):
        return ft(np.float32(1.0) / np.float32(stride))


def _check_roi(ctx, k, roi, b, x, h_scale, w_scale):
    n, h, w, _ = x.shape
    x1, y1, x2, y2 = roi
    ok = (0 <= b < n and x1 >= 0 and y1 >= 0 and x2 >= 0 and y2 >= 0
          and x1 * w_scale <= w and y1 * h_scale <= h and x2 * w_scale <= w
          and y2 * h_scale <= h and x1 <= x2 and y1 <= y2)
    if not ok:
        raise GeneralFailure(f"{ctx.name} (operation {ctx.op_index}): roi {k} "
                             f"{[float(v) for v in roi]} with batch index {b} is malformed or "
                             f"outside the feature map [{n}, {h}, {w}]")


def _finish(ctx, out, nchw):
    return [out.transpose(0, 3, 1, 2) if nchw else out]


# ----------------------------------------------------------------------------- ROI_ALIGN

def _align_weights(start, step, ratio, out_size, in_size, ft):
    """[out_size, in_size] bilinear weights summed over a bin's sampling points."""
    bin_size = step / ft(ratio)
    half = bin_size / ft(2)
    wts = np.zeros((out_size, in_size), dtype=np.float64)
    for i in range(out_size):
        b_start = step * ft(i) + start
        for s in range(ratio):
            p = b_start + half + bin_size * ft(s)
            lo = int(np.floor(np.float32(p)))
            d = float(p - ft(lo))
            if lo >= in_size - 1:
                lo = in_size - 1
                d = 0.0
            hi = min(lo + 1, in_size - 1)
            wts[i, lo] += 1.0 - d
            wts[i, hi] += d
    return wts


def execute_align(ctx: OperationContext):
    nchw, x, rois, batch, ft = _setup(ctx)
    oh, ow = int(ctx.scalar(3)), int(ctx.scalar(4))
    h_scale, w_scale = _inverse(ctx.scalar(5), ft), _inverse(ctx.scalar(6), ft)
    h_ratio, w_ratio = int(ctx.scalar(7)), int(ctx.scalar(8))
    _, in_h, in_w, depth = x.shape
    inp, out_info = ctx.inputs[0], ctx.outputs[0]
    quant = inp.type in QUANT8_TENSORS
    xf = x.astype(np.float64) - (inp.zero_point if quant else 0)
    acc = np.zeros((rois.shape[0], oh, ow, depth), dtype=np.float64)
    for k, (roi, b) in enumerate(zip(rois, batch)):
        _check_roi(ctx, k, roi, b, x, h_scale, w_scale)
        w0, h0, w1, h1 = roi[0] * w_scale, roi[1] * h_scale, roi[2] * w_scale, roi[3] * h_scale
        roi_w = ft(max(np.float32(w1 - w0), np.float32(1.0)))
        roi_h = ft(max(np.float32(h1 - h0), np.float32(1.0)))
        w_step, h_step = roi_w / ft(ow), roi_h / ft(oh)
        wr = w_ratio if w_ratio > 0 else int(np.ceil(np.float32(w_step)))
        hr = h_ratio if h_ratio > 0 else int(np.ceil(np.float32(h_step)))
        wy = _align_weights(h0, h_step, hr, oh, in_h, ft)
        wx = _align_weights(w0, w_step, wr, ow, in_w, ft)
        acc[k] = np.einsum("ih,hwc,jw->ijc", wy, xf[b], wx, optimize=True) / (hr * wr)
    if quant:
        lo, hi = qrange(out_info.type)
        q = acc * (np.float64(inp.scale) / np.float64(out_info.scale))
        q = np.sign(q) * np.floor(np.abs(q) + 0.5) + out_info.zero_point
        out = np.clip(q, lo, hi).astype(out_info.dtype)
    else:
        out = acc.astype(out_info.dtype)
    return _finish(ctx, out, nchw)


# ----------------------------------------------------------------------------- ROI_POOLING

def execute_pooling(ctx: OperationContext):
    nchw, x, rois, batch, ft = _setup(ctx)
    oh, ow = int(ctx.scalar(3)), int(ctx.scalar(4))
    h_scale, w_scale = _inverse(ctx.scalar(5), ft), _inverse(ctx.scalar(6), ft)
    _, in_h, in_w, depth = x.shape
    inp = ctx.inputs[0]
    empty = inp.zero_point if inp.type in QUANT8_TENSORS else 0
    out = np.zeros((rois.shape[0], oh, ow, depth), dtype=x.dtype)

    def rnd(v):  # std::round of a non-negative value
        return int(np.floor(np.float32(v) + np.float32(0.5)))

    for k, (roi, b) in enumerate(zip(rois, batch)):
        _check_roi(ctx, k, roi, b, x, h_scale, w_scale)
        w0, h0 = rnd(roi[0] * w_scale), rnd(roi[1] * h_scale)
        w1, h1 = rnd(roi[2] * w_scale), rnd(roi[3] * h_scale)
        roi_w, roi_h = ft(max(w1 - w0 + 1, 1)), ft(max(h1 - h0 + 1, 1))
        w_step, h_step = roi_w / ft(ow), roi_h / ft(oh)
        img = x[b]
        for i in range(oh):
            hs = min(int(np.floor(np.float32(h_step * ft(i) + ft(h0)))), in_h)
            he = min(int(np.ceil(np.float32(h_step * ft(i + 1) + ft(h0)))), in_h)
            for j in range(ow):
                ws = min(int(np.floor(np.float32(w_step * ft(j) + ft(w0)))), in_w)
                we = min(int(np.ceil(np.float32(w_step * ft(j + 1) + ft(w0)))), in_w)
                if hs < he and ws < we:
                    out[k, i, j] = img[hs:he, ws:we].max(axis=(0, 1))
                else:
                    out[k, i, j] = empty
    return _finish(ctx, out, nchw)


register("ROI_ALIGN", execute_align, signatures=ALIGN_SIGNATURES, validate=validate,
         prepare=prepare, family="roi")
register("ROI_POOLING", execute_pooling, signatures=POOLING_SIGNATURES, validate=validate,
         prepare=prepare, family="roi")
