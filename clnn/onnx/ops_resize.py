"""Resize and Upsample as RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR in NCHW.

NNAPI has two flags (align_corners, half_pixel_centers) where ONNX has coordinate
transformation modes and nearest rounding modes. Rather than keep a table of which pairs
agree, the importer computes, for the node's actual sizes, the interpolation matrix each
side uses on each spatial axis (ONNX's from its formulas, NNAPI's from the reference device's
own index functions) and takes the first NNAPI flags whose matrices are equal; when none are,
the node is an error naming its attributes. So e.g. half_pixel + round_prefer_floor maps when
the sizes give no rounding ties, and is refused when they do.
"""

from __future__ import annotations

import math

import numpy as np

from hal.operations.resize import bilinear_axis, nearest_axis

#: coordinate transformation modes with the formula below
MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
         "tf_half_pixel_for_nn")


def _onnx_coords(mode: str, in_size: int, out_size: int, scale: float) -> np.ndarray:
    x = np.arange(out_size, dtype=np.float64)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_size > 1 else np.zeros(out_size)
    if mode == "align_corners":
        return x * (in_size - 1) / (out_size - 1) if out_size > 1 else np.zeros(out_size)
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    return x / scale  # asymmetric


def _onnx_matrix(linear: bool, mode: str, rounding: str, in_size, out_size, scale):
    src = _onnx_coords(mode, in_size, out_size, scale)
    m = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    if linear:
        src = np.clip(src, 0, in_size - 1)
        lo = np.floor(src).astype(int)
        hi = np.minimum(lo + 1, in_size - 1)
        frac = src - lo
        np.add.at(m, (rows, lo), 1 - frac)
        np.add.at(m, (rows, hi), frac)
        return m
    if rounding == "round_prefer_floor":
        idx = np.ceil(src - 0.5)
    elif rounding == "round_prefer_ceil":
        idx = np.floor(src + 0.5)
    elif rounding == "floor":
        idx = np.floor(src)
    elif rounding == "ceil":
        idx = np.ceil(src)
    else:  # "simple" (Upsample, Resize-10): down-sampling rounds up, up-sampling truncates
        idx = np.ceil(src) if scale < 1 else np.trunc(src)
    m[rows, np.clip(idx, 0, in_size - 1).astype(int)] = 1
    return m


def _nnapi_matrix(linear: bool, align: bool, half: bool, in_size, out_size):
    m = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    if linear:
        lo, hi, frac = bilinear_axis(in_size, out_size, align, half)
        np.add.at(m, (rows, lo), 1 - frac.astype(np.float64))
        np.add.at(m, (rows, hi), frac.astype(np.float64))
    else:
        m[rows, nearest_axis(in_size, out_size, align, half)] = 1
    return m


def nnapi_flags(linear, mode, rounding, sizes_in, sizes_out, scales):
    """(align_corners, half_pixel_centers) that give ONNX's result on these sizes, or None."""
    for align, half in ((False, False), (False, True), (True, False)):
        if all(np.allclose(_onnx_matrix(linear, mode, rounding, i, o, s),
                           _nnapi_matrix(linear, align, half, i, o), atol=1e-5)
               for i, o, s in zip(sizes_in, sizes_out, scales)):
            return align, half
    return None


def _emit(imp, n, linear, mode, rounding, scales=None, sizes=None):
    x = n.input(0)
    s = imp.static_shape(x)
    if len(s) != 4:
        imp.fail(f"only rank-4 (NCHW) inputs are mapped, not rank {len(s)}")
    if sizes is not None:
        sizes = [int(v) for v in sizes]
        if list(sizes[:2]) != list(s[:2]):
            imp.fail(f"sizes {sizes} resize the batch or channel dimension")
        out = sizes[2:]
        scales = [o / i for o, i in zip(out, s[2:])]
    else:
        scales = [float(v) for v in scales]
        if scales[:2] != [1.0, 1.0]:
            imp.fail(f"scales {scales} resize the batch or channel dimension")
        scales = scales[2:]
        out = [int(math.floor(i * f)) for i, f in zip(s[2:], scales)]
    flags = nnapi_flags(linear, mode, rounding, s[2:], out, scales)
    if flags is None:
        what = f"'coordinate_transformation_mode'={mode!r}" + (
            "" if linear else f" with 'nearest_mode'={rounding!r}")
        imp.fail(f"attribute {what} has no NNAPI equivalent for sizes {list(s[2:])} -> {out}")
    y = imp.output(n.outputs[0], shape=(s[0], s[1], *out), like=x)
    imp.emit("RESIZE_BILINEAR" if linear else "RESIZE_NEAREST_NEIGHBOR",
             [imp.operand(x), imp.int32(out[1]), imp.int32(out[0]), imp.bool(True),
              imp.bool(flags[0]), imp.bool(flags[1])], [y])


def _mode(imp, n) -> bool:
    """True for linear interpolation; other modes are errors."""
    mode = n.attr("mode", "nearest")
    if mode in ("linear", "bilinear"):
        return True
    if mode != "nearest":
        imp.fail(f"attribute 'mode'={mode!r} has no mapping (NNAPI resizes nearest or linear)")
    return False


def resize(imp, n):
    linear = _mode(imp, n)
    if imp.opset < 11:
        _emit(imp, n, linear, "asymmetric", "simple",
              scales=imp.const_input(n, 1, "scales").reshape(-1))
        return
    mode = n.attr("coordinate_transformation_mode", "half_pixel")
    rounding = n.attr("nearest_mode", "round_prefer_floor")
    n.attr("cubic_coeff_a")
    n.attr("extrapolation_value")
    for name, ok in (("exclude_outside", 0), ("antialias", 0)):
        if n.attr(name, ok) != ok:
            imp.fail(f"attribute {name!r}={n.attrs[name]} has no mapping")
    if n.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        imp.fail(f"attribute 'keep_aspect_ratio_policy'="
                 f"{n.attrs['keep_aspect_ratio_policy']!r} has no mapping")
    if mode not in MODES:
        imp.fail(f"attribute 'coordinate_transformation_mode'={mode!r} has no mapping")
    axes = n.attr("axes")
    scales = imp.const(n.input(2)) if n.input(2) else None
    sizes = imp.const(n.input(3)) if n.input(3) else None
    if n.input(3) and sizes is None or n.input(2) and scales is None:
        imp.fail("the scales / sizes input must be a constant")
    if scales is not None and scales.size == 0:
        scales = None
    if scales is None and sizes is None:
        imp.fail("neither scales nor sizes is given")
    rank = imp.rank(n.input(0))
    if axes is not None:  # opset 18: the values cover these axes only
        s = imp.static_shape(n.input(0))
        full = [1.0] * rank if scales is not None else list(s)
        for a, v in zip(axes, (scales if scales is not None else sizes).reshape(-1)):
            full[a + rank if a < 0 else a] = v
        if scales is not None:
            scales = np.asarray(full)
        else:
            sizes = np.asarray(full)
    _emit(imp, n, linear, mode, rounding, scales=None if scales is None else scales.reshape(-1),
          sizes=None if sizes is None else sizes.reshape(-1))


def upsample(imp, n):
    linear = _mode(imp, n)
    scales = n.attr("scales") if imp.opset < 9 else imp.const_input(n, 1, "scales")
    if scales is None:
        imp.fail("the scales are missing")
    _emit(imp, n, linear, "asymmetric", "simple", scales=np.asarray(scales).reshape(-1))


CONVERTERS = {"Resize": resize, "Upsample": upsample}
