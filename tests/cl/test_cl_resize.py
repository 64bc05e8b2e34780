"""RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR on OpenCL vs the reference device: up and down
scaling by size and by scale, align_corners, half_pixel_centers, NCHW, float32/float16/quant8
asymm and signed."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check, launch_names
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import scalar, tensor


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback and without the layout pass (clnn/layout.py, tested
    in test_cl_layout.py and by the CTS): this module's NCHW cases run the NCHW kernels."""
    return open_or_skip("opencl", fallback=False, nhwc=False)


TYPES = {"TENSOR_FLOAT32": np.float32, "TENSOR_FLOAT16": np.float16,
         "TENSOR_QUANT8_ASYMM": np.uint8, "TENSOR_QUANT8_ASYMM_SIGNED": np.int8}


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
@pytest.mark.parametrize("t", list(TYPES))
@pytest.mark.parametrize("size", [(7, 5), (2, 3)])
@pytest.mark.parametrize("flags", [(False, False, False), (True, False, False),
                                   (False, True, False), (False, False, True)])
def test_by_size(cl_device, op, t, size, flags):
    nchw, align, half = flags
    rng = np.random.default_rng(3)
    n, h, w, c = 2, 4, 3, 2
    oh, ow = size
    shape = [n, c, h, w] if nchw else [n, h, w, c]
    out = [n, c, oh, ow] if nchw else [n, oh, ow, c]
    dt = TYPES[t]
    if "QUANT" in t:
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max + 1, shape).astype(dt)
        q = dict(scale=0.5, zero_point=1)
    else:
        x, q = rng.uniform(-2, 2, shape).astype(dt), {}
    ins = [tensor(t, shape, **q), scalar("INT32", ow), scalar("INT32", oh),
           scalar("BOOL", nchw), scalar("BOOL", align), scalar("BOOL", half)]
    kind = "quant" if "QUANT" in t else ("f16" if t == "TENSOR_FLOAT16" else "f32")
    check(op, ins, [tensor(t, out, **q)], [x], cl_device, kind)


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
def test_by_scale(cl_device, op):
    x = np.arange(12, dtype=np.float32).reshape(1, 3, 4, 1)
    ins = [tensor("TENSOR_FLOAT32", [1, 3, 4, 1]), scalar("FLOAT32", 1.5),
           scalar("FLOAT32", 2.0), scalar("BOOL", False)]
    (y,) = check(op, ins, [tensor("TENSOR_FLOAT32", [1, 6, 6, 1])], [x], cl_device, "f32")
    assert y.shape == (1, 6, 6, 1)


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
@pytest.mark.parametrize("c", [4, 8, 16, 48, 6, 20, 42])
@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("size", [(9, 13), (3, 2)])
def test_nhwc_float32_channel_vectors(cl_device, op, c, flags, size):
    """NHWC float32 of 4 channels or more takes resize_vec (vectors of channels; where the
    vector does not divide C, a row's last one overlaps its neighbour): up and down scaling."""
    from tests.kits.one_op_models import one_op_model

    align, half = flags
    rng = np.random.default_rng(c)
    shape, out = [2, 5, 6, c], [2, *size, c]
    x = rng.uniform(-2, 2, shape).astype(np.float32)
    ins = [tensor("TENSOR_FLOAT32", shape), scalar("INT32", size[1]), scalar("INT32", size[0]),
           scalar("BOOL", False), scalar("BOOL", align), scalar("BOOL", half)]
    check(op, ins, [tensor("TENSOR_FLOAT32", out)], [x], cl_device, "f32")
    pm = cl_device.prepare_model(one_op_model(op, ins, [tensor("TENSOR_FLOAT32", out)]))
    names = launch_names(pm)
    assert names == {"resize.resize_vec"}


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
@pytest.mark.parametrize("t", ["TENSOR_FLOAT32", "TENSOR_FLOAT16"])
@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("w,f", [(40, 2), (26, 2), (9, 4), (12, 4), (37, 1), (5, 2)])
def test_nchw_whole_factor_rows(cl_device, op, t, flags, w, f):
    """NCHW float at a whole factor along the rows (dividing 16) takes resize_rep (vectors of a
    row, the source columns repeating every f outputs; the row's ends from the tables), any
    other factor resize_row; both match the reference."""
    from clnn.kernels.resize import repeating_columns
    from tests.kits.one_op_models import one_op_model

    align, half = flags
    rng = np.random.default_rng(w * f)
    shape, out = [1, 3, 6, w], [1, 3, 11, w * f]
    x = rng.uniform(-2, 2, shape).astype(TYPES[t])
    ins = [tensor(t, shape), scalar("INT32", w * f), scalar("INT32", 11),
           scalar("BOOL", True), scalar("BOOL", align), scalar("BOOL", half)]
    check(op, ins, [tensor(t, out)], [x], cl_device, "f16" if "16" in t else "f32")
    pm = cl_device.prepare_model(one_op_model(op, ins, [tensor(t, out)]))
    names = launch_names(pm)
    rep = repeating_columns(op, w, w * f, align, half)
    assert names == {"resize.resize_rep" if rep else "resize.resize_row"}, (names, rep)
    if w >= 26:
        assert rep is not None and rep[0] == f


def test_repeating_columns_only_whole_factors_dividing_16():
    from clnn.kernels.resize import repeating_columns

    assert repeating_columns("RESIZE_BILINEAR", 20, 40, False, True)[:3] == (2, "-1,0", "0,1")
    assert repeating_columns("RESIZE_NEAREST_NEIGHBOR", 20, 40, False, False)[:3] == \
        (2, "0,0", "0,0")
    # the tables clamped at the row's end still repeat (the kernel clamps that vector): the
    # fast columns reach the row's end
    assert repeating_columns("RESIZE_BILINEAR", 24, 48, False, False)[3:] == (0, 48)
    assert repeating_columns("RESIZE_BILINEAR", 12, 48, True, False) is None
    for w, ow in ((20, 60), (20, 30), (40, 20), (20, 20 * 32)):
        assert repeating_columns("RESIZE_BILINEAR", w, ow, False, False) is None, (w, ow)
