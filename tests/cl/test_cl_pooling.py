"""AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D on OpenCL vs the reference device: explicit and
implicit (SAME/VALID) padding, strides, NCHW, fused activations, windows partly outside the
input (averages count only inside taps), float32/float16/quant8 asymm and signed."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check, launch_names
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import scalar, tensor
from tests.kits.slices import slow_unless


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback and without the layout pass (clnn/layout.py, tested
    in test_cl_layout.py and by the CTS): this module's NCHW cases run the NCHW kernels."""
    return open_or_skip("opencl", fallback=False, nhwc=False)


OPS = ["AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"]


def _conv_out(size, f, s, head, tail):
    return (size - f + s + head + tail) // s


def _data(rng, t, shape):
    if t == "TENSOR_QUANT8_ASYMM":
        return rng.integers(0, 256, shape).astype(np.uint8)
    if t == "TENSOR_QUANT8_ASYMM_SIGNED":
        return rng.integers(-128, 128, shape).astype(np.int8)
    return rng.uniform(-4, 4, shape).astype(np.float16 if t == "TENSOR_FLOAT16" else np.float32)


EXPLICIT = [((0, 0, 0, 0), 1, 2, 0), ((1, 2, 0, 1), 2, 3, 1), ((2, 2, 2, 2), 1, 3, 3)]


# L2_POOL_2D has no quantized form; NCHW float takes pool_planes, whose float16 cases are
# test_nchw_float_row_vectors' (a kernel compiled per window: 1-4 s each): make test runs its
# float32 NCHW form once an operation (each in another of the three windows), make test-full
# all three
@pytest.mark.parametrize("op,t,nchw,pads,stride,filt,act", [
    slow_unless(not nchw or t != "TENSOR_FLOAT32" or i == j, op, t, nchw, *e,
                id=f"{op}-{t}-{nchw}-case{j}")
    for e in EXPLICIT for i, op in enumerate(OPS) for t in (
        "TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED")
    for nchw in (False, True)
    if (op != "L2_POOL_2D" or "QUANT" not in t) and not (nchw and t == "TENSOR_FLOAT16")
    for j in [EXPLICIT.index(e)]])
def test_explicit(cl_device, op, t, nchw, pads, stride, filt, act):
    rng = np.random.default_rng(4)
    n, h, w, c = 2, 5, 6, 3
    left, right, top, bottom = pads
    oh, ow = _conv_out(h, filt, stride, top, bottom), _conv_out(w, filt, stride, left, right)
    shape = [n, c, h, w] if nchw else [n, h, w, c]
    out = [n, c, oh, ow] if nchw else [n, oh, ow, c]
    q = dict(scale=0.5, zero_point=(3 if t.endswith("SIGNED") else 130)) if "QUANT" in t else {}
    ins = [tensor(t, shape, **q), *[scalar("INT32", v) for v in pads],
           scalar("INT32", stride), scalar("INT32", stride), scalar("INT32", filt),
           scalar("INT32", filt), scalar("INT32", act), scalar("BOOL", nchw)]
    kind = "quant" if "QUANT" in t else ("f16" if t == "TENSOR_FLOAT16" else "f32")
    check(op, ins, [tensor(t, out, **q)], [_data(rng, t, shape)], cl_device, kind)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("scheme", [1, 2])
def test_implicit(cl_device, op, scheme):
    rng = np.random.default_rng(9)
    shape = [1, 7, 5, 2]
    oh, ow = ((7 + 1) // 2, (5 + 1) // 2) if scheme == 1 else (3, 2)
    ins = [tensor("TENSOR_FLOAT32", shape), scalar("INT32", scheme), scalar("INT32", 2),
           scalar("INT32", 2), scalar("INT32", 3), scalar("INT32", 3), scalar("INT32", 0)]
    check(op, ins, [tensor("TENSOR_FLOAT32", [1, oh, ow, 2])],
          [_data(rng, "TENSOR_FLOAT32", shape)], cl_device, "f32")


def test_average_counts_inside_taps_only(cl_device):
    x = np.ones((1, 2, 2, 1), np.float32)
    ins = [tensor("TENSOR_FLOAT32", [1, 2, 2, 1]), *[scalar("INT32", 1)] * 4,
           scalar("INT32", 1), scalar("INT32", 1), scalar("INT32", 3), scalar("INT32", 3),
           scalar("INT32", 0)]
    (y,) = check("AVERAGE_POOL_2D", ins, [tensor("TENSOR_FLOAT32", [1, 2, 2, 1])], [x],
                 cl_device, "f32")
    np.testing.assert_array_equal(y, np.ones((1, 2, 2, 1)))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("c", [4, 8, 16, 48, 5, 12, 24, 42])
@pytest.mark.parametrize("pads,stride,filt,act", [((0, 0, 0, 0), 2, 2, 0),
                                                  ((1, 2, 0, 1), 2, 3, 1),
                                                  ((2, 2, 2, 2), 1, 3, 2)])
def test_nhwc_float32_channel_vectors(cl_device, op, c, pads, stride, filt, act):
    """NHWC float32 of 4 channels or more takes pool_vec (vectors of channels; where the
    vector does not divide C, a row's last one overlaps its neighbour)."""
    from tests.kits.one_op_models import one_op_model

    rng = np.random.default_rng(c)
    n, h, w = 2, 7, 6
    left, right, top, bottom = pads
    oh, ow = _conv_out(h, filt, stride, top, bottom), _conv_out(w, filt, stride, left, right)
    t = "TENSOR_FLOAT32"
    ins = [tensor(t, [n, h, w, c]), *[scalar("INT32", v) for v in pads],
           scalar("INT32", stride), scalar("INT32", stride), scalar("INT32", filt),
           scalar("INT32", filt), scalar("INT32", act)]
    outs = [tensor(t, [n, oh, ow, c])]
    check(op, ins, outs, [_data(rng, t, [n, h, w, c])], cl_device, "f32")
    pm = cl_device.prepare_model(one_op_model(op, ins, outs))
    names = launch_names(pm)
    assert names == {"pooling.pool_vec"}


ROW_CASES = [  # (h, w), pads, strides, filter, activation
    ((9, 21), (1, 1, 1, 1), (1, 1), (3, 3), 0),  # rows of 2 vectors and a part
    ((8, 19), (0, 1, 0, 1), (2, 2), (3, 3), 1),  # stride 2, a right pad
    ((5, 6), (2, 2, 2, 2), (1, 2), (5, 5), 3),   # a row shorter than a vector
    ((7, 40), (0, 0, 0, 0), (2, 1), (1, 2), 0),  # windows inside the row everywhere
    ((6, 17), (3, 3, 1, 1), (1, 1), (2, 7), 2),  # windows wider than the pads reach
    ((11, 9), (1, 1, 1, 1), (1, 3), (3, 3), 0)]  # row stride 3: a row per work-item
FLOATS = ["TENSOR_FLOAT32", "TENSOR_FLOAT16"]


# every (operation, case) once, the float type alternating: every case meets both types and
# every operation both types three times (pool_planes compiles its window unrolled, 1-6 s a
# kernel: the whole product was a third of this module's cold time). make test runs every case
# once (its operation in turn: every operation in two cases, one of each type), make
# test-full all 18
@pytest.mark.parametrize("op,t,case", [
    slow_unless((i + k) % 3 == 1, op, FLOATS[(i + k) % 2], k) for i, op in enumerate(OPS)
    for k in range(len(ROW_CASES))])
def test_nchw_float_row_vectors(cl_device, op, t, case):
    """NCHW float with a row stride of 1 or 2 takes pool_planes (vectors of outputs along a
    row, lane by lane where the row does not cover a vector's span, counts per lane)."""
    from tests.kits.one_op_models import one_op_model

    hw, pads, strides, filt, act = ROW_CASES[case]
    rng = np.random.default_rng(hw[1])
    (h, w), (left, right, top, bottom), (sw, sh), (fw, fh) = hw, pads, strides, filt
    n, c = 2, 3
    oh, ow = _conv_out(h, fh, sh, top, bottom), _conv_out(w, fw, sw, left, right)
    ins = [tensor(t, [n, c, h, w]), *[scalar("INT32", v) for v in pads], scalar("INT32", sw),
           scalar("INT32", sh), scalar("INT32", fw), scalar("INT32", fh), scalar("INT32", act),
           scalar("BOOL", True)]
    outs = [tensor(t, [n, c, oh, ow])]
    check(op, ins, outs, [_data(rng, t, [n, c, h, w])], cl_device,
          "f16" if t == "TENSOR_FLOAT16" else "f32")
    pm = cl_device.prepare_model(one_op_model(op, ins, outs))
    names = launch_names(pm)
    assert names == {"pooling.pool_planes"}
