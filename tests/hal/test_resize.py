"""RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR against a plain per-pixel transcription of the
reference formulas, plus layout, scale form, quantization, zero batches and validation."""

import math

import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.direct_call import call, info
from tests.kits.one_op_models import execute, one_op_model, rejected, run, scalar, tensor

F32 = "TENSOR_FLOAT32"


def _model(op, shape, out_shape, params, type_=F32, q=None, value=None):
    q = q or {}
    ins = [tensor(type_, shape, value, **q)] + params
    return one_op_model(op, ins, [tensor(type_, out_shape, **q)])


def _flags(nchw=False, align=False, half=False):
    return [scalar("BOOL", nchw), scalar("BOOL", align), scalar("BOOL", half)]


def _src_scale(n_in, n_out, align):
    if align and n_out > 1:
        return np.float32(n_in - 1) / np.float32(n_out - 1)
    return np.float32(n_in) / np.float32(n_out)


def _bilinear_loop(x, oh, ow, align, half):
    n, h, w, c = x.shape
    out = np.zeros((n, oh, ow, c), np.float64)
    sy, sx = _src_scale(h, oh, align), _src_scale(w, ow, align)
    for i in range(oh):
        fy = float((np.float32(i) + np.float32(0.5)) * sy - np.float32(0.5)) if half \
            else float(np.float32(i) * sy)
        y0, y1 = max(math.floor(fy), 0), min(math.ceil(fy), h - 1)
        for j in range(ow):
            fx = float((np.float32(j) + np.float32(0.5)) * sx - np.float32(0.5)) if half \
                else float(np.float32(j) * sx)
            x0, x1 = max(math.floor(fx), 0), min(math.ceil(fx), w - 1)
            dy, dx = fy - y0, fx - x0
            out[:, i, j] = (x[:, y0, x0] * (1 - dy) * (1 - dx) + x[:, y1, x0] * dy * (1 - dx)
                            + x[:, y0, x1] * (1 - dy) * dx + x[:, y1, x1] * dy * dx)
    return out


def _nearest_loop(x, oh, ow, align, half):
    n, h, w, c = x.shape

    def src(i, n_in, n_out):
        s = float(_src_scale(n_in, n_out, align))
        v = (i + (0.5 if half else 0.0)) * s
        k = math.floor(v + 0.5) if align else math.floor(v)
        k = min(k, n_in - 1)
        return max(k, 0) if half else k

    out = np.zeros((n, oh, ow, c), x.dtype)
    for i in range(oh):
        for j in range(ow):
            out[:, i, j] = x[:, src(i, h, oh), src(j, w, ow)]
    return out


@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("out_hw", [(3, 5), (1, 1), (6, 2)])
def test_bilinear_float_matches_formula(align, half, out_hw):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 2)).astype(np.float32)
    oh, ow = out_hw
    m = _model("RESIZE_BILINEAR", x.shape, (2, oh, ow, 2),
               [scalar("INT32", ow), scalar("INT32", oh)] + _flags(False, align, half))
    (y,) = run(m, [x])
    np.testing.assert_allclose(y, _bilinear_loop(x, oh, ow, align, half), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
def test_nearest_matches_formula(align, half):
    x = np.arange(2 * 5 * 3 * 1, dtype=np.float32).reshape(2, 5, 3, 1)
    m = _model("RESIZE_NEAREST_NEIGHBOR", x.shape, (2, 7, 2, 1),
               [scalar("INT32", 2), scalar("INT32", 7)] + _flags(False, align, half))
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, _nearest_loop(x, 7, 2, align, half))


def test_bilinear_simple_upscale():
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    m = _model("RESIZE_BILINEAR", (1, 2, 2, 1), (1, 3, 3, 1),
               [scalar("INT32", 3), scalar("INT32", 3)])
    (y,) = run(m, [x])
    want = [[1, 5 / 3, 2], [7 / 3, 3, 10 / 3], [3, 11 / 3, 4]]
    np.testing.assert_allclose(y.reshape(3, 3), want, rtol=1e-6)


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
def test_nchw_is_transposed_nhwc(op):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 3, 4, 5)).astype(np.float32)  # NHWC
    params = [scalar("INT32", 7), scalar("INT32", 5)]
    (nhwc,) = run(_model(op, x.shape, (1, 5, 7, 5), params + [scalar("BOOL", False)]), [x])
    xc = x.transpose(0, 3, 1, 2)
    (nchw,) = run(_model(op, xc.shape, (1, 5, 5, 7), params + [scalar("BOOL", True)]), [xc])
    np.testing.assert_allclose(nchw, nhwc.transpose(0, 3, 1, 2), rtol=1e-6)


def test_scale_form_output_size_is_floor():
    x = np.ones((1, 3, 5, 1), np.float32)
    m = _model("RESIZE_NEAREST_NEIGHBOR", x.shape, (1, 0, 0, 1),
               [scalar("FLOAT32", 1.5), scalar("FLOAT32", 1.7), scalar("BOOL", False)])
    status, shapes, (y,) = execute(m, [x])
    assert status == ErrorStatus.NONE
    assert y.shape == (1, 5, 7, 1)  # floor(3 * 1.7), floor(5 * 1.5)


def test_float16_scale_form():
    x = np.arange(4, dtype=np.float16).reshape(1, 2, 2, 1)
    m = _model("RESIZE_BILINEAR", x.shape, (1, 4, 4, 1),
               [scalar("FLOAT16", 2.0), scalar("FLOAT16", 2.0)], type_="TENSOR_FLOAT16")
    (y,) = run(m, [x])
    assert y.dtype == np.float16
    np.testing.assert_allclose(y[0, :, :, 0], _bilinear_loop(x.astype(np.float32), 4, 4, False,
                                                             False)[0, :, :, 0], atol=5e-3)


@pytest.mark.parametrize("type_,dtype,zp", [("TENSOR_QUANT8_ASYMM", np.uint8, 128),
                                            ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8, 0)])
def test_bilinear_quant_rounds_half_up(type_, dtype, zp):
    x = np.array([0, 1, 2, 3], dtype).reshape(1, 1, 4, 1) + np.array(zp).astype(dtype)
    q = dict(scale=0.5, zero_point=zp)
    m = _model("RESIZE_BILINEAR", x.shape, (1, 1, 8, 1),
               [scalar("INT32", 8), scalar("INT32", 1)], type_=type_, q=q)
    (y,) = run(m, [x])
    # source positions 0, .5, 1, 1.5, ...: the halves round up
    np.testing.assert_array_equal(y.reshape(-1).astype(int) - zp, [0, 1, 1, 2, 2, 3, 3, 3])


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
def test_zero_batches(op):
    x = np.zeros((0, 2, 2, 3), np.uint8)
    q = dict(scale=0.5, zero_point=3)
    (y,) = call(op, [info("TENSOR_QUANT8_ASYMM", x, **q), info("INT32", 4), info("INT32", 5),
                     info("BOOL", True)], [info("TENSOR_QUANT8_ASYMM", shape=(0, 0, 0, 0), **q)])
    assert y.shape == (0, 2, 5, 4) and y.dtype == np.uint8


# ----------------------------------------------------------------------------- validation

def test_rejects_align_corners_with_half_pixel_centers():
    m = _model("RESIZE_BILINEAR", (1, 2, 2, 1), (1, 4, 4, 1),
               [scalar("INT32", 4), scalar("INT32", 4)] + _flags(False, True, True))
    assert "half_pixel_centers" in rejected(m)


def test_rejects_zero_output_size():
    m = _model("RESIZE_BILINEAR", (1, 2, 2, 1), (1, 4, 4, 1),
               [scalar("INT32", 0), scalar("INT32", 4)])
    assert "must be > 0" in rejected(m)


def test_rejects_scale_giving_empty_output():
    m = _model("RESIZE_NEAREST_NEIGHBOR", (1, 2, 2, 1), (1, 0, 0, 1),
               [scalar("FLOAT32", 0.2), scalar("FLOAT32", 1.0), scalar("BOOL", False)])
    assert "output width must be > 0" in rejected(m)


def test_rejects_bad_rank():
    m = _model("RESIZE_BILINEAR", (2, 2, 1), (4, 4, 1), [scalar("INT32", 4), scalar("INT32", 4)])
    assert "rank 4" in rejected(m)


def test_rejects_float16_scale_for_float32_tensor():
    m = _model("RESIZE_BILINEAR", (1, 2, 2, 1), (1, 4, 4, 1),
               [scalar("FLOAT16", 2.0), scalar("FLOAT16", 2.0)])
    assert "match no signature" in rejected(m)


def test_nearest_needs_layout_input():
    m = _model("RESIZE_NEAREST_NEIGHBOR", (1, 2, 2, 1), (1, 4, 4, 1),
               [scalar("INT32", 4), scalar("INT32", 4)])
    assert "match no signature" in rejected(m)


def test_rejects_quant_mismatch():
    m = one_op_model("RESIZE_BILINEAR",
                     [tensor("TENSOR_QUANT8_ASYMM", (1, 2, 2, 1), scale=0.5, zero_point=0),
                      scalar("INT32", 4), scalar("INT32", 4)],
                     [tensor("TENSOR_QUANT8_ASYMM", (1, 4, 4, 1), scale=0.25, zero_point=0)])
    assert "same scale" in rejected(m)
