"""TRANSPOSE_CONV_2D: against a scatter loop reference, both padding forms, layouts,
quantization (per-tensor and per-channel) and validation mutations."""

import numpy as np
import pytest

from tests.kits.conv_reference import execute_direct, requant_ref
from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

RNG = np.random.default_rng(3)


def naive_transpose(x, f, b, stride, top, left, oh, ow):
    n, h, w, c = x.shape
    o, kh, kw, _ = f.shape
    out = np.zeros((n, oh, ow, o))
    for bi in range(n):
        for iy in range(h):
            for ix in range(w):
                for i in range(kh):
                    for j in range(kw):
                        oy, ox = iy * stride[0] + i - top, ix * stride[1] + j - left
                        if 0 <= oy < oh and 0 <= ox < ow:
                            out[bi, oy, ox] += f[:, i, j, :] @ x[bi, iy, ix]
    return out + b


def explicit(pads, stride, act=0, nchw=False):
    top, bottom, left, right = pads
    return [scalar("INT32", v) for v in (left, right, top, bottom, stride[1], stride[0], act)] \
        + [scalar("BOOL", nchw)]


@pytest.mark.parametrize("stride,pads,nchw", [((1, 1), (0, 0, 0, 0), False),
                                              ((2, 2), (1, 0, 0, 1), True),
                                              ((3, 2), (1, 2, 2, 1), False)])
def test_explicit_float(stride, pads, nchw):
    x = RNG.standard_normal((2, 3, 4, 2)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 3, 2)).astype(np.float32)
    b = RNG.standard_normal(3).astype(np.float32)
    oh = stride[0] * 2 + 3 - pads[0] - pads[1]
    ow = stride[1] * 3 + 3 - pads[2] - pads[3]
    want = naive_transpose(x, f, b, stride, pads[0], pads[2], oh, ow)
    xin = x.transpose(0, 3, 1, 2) if nchw else x
    m = one_op_model("TRANSPOSE_CONV_2D", [
        tensor("TENSOR_FLOAT32", xin.shape), tensor("TENSOR_FLOAT32", f.shape, f),
        tensor("TENSOR_FLOAT32", b.shape, b)] + explicit(pads, stride, 0, nchw),
        [tensor("TENSOR_FLOAT32", [0, 0, 0, 0])])
    (y,) = run(m, [xin])
    if nchw:
        y = y.transpose(0, 2, 3, 1)
    assert y.shape == (2, oh, ow, 3)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scheme,out_hw", [(1, (6, 8)), (1, (5, 7)), (2, (7, 9)), (2, (8, 9))])
def test_implicit_output_shape(scheme, out_hw):
    x = RNG.standard_normal((1, 3, 4, 2)).astype(np.float32)
    f = RNG.standard_normal((2, 3, 3, 2)).astype(np.float32)
    b = np.zeros(2, np.float32)
    oh, ow = out_hw
    shape = np.array([1, oh, ow, 2], np.int32)
    m = one_op_model("TRANSPOSE_CONV_2D", [
        tensor("TENSOR_FLOAT32", x.shape), tensor("TENSOR_FLOAT32", f.shape, f),
        tensor("TENSOR_FLOAT32", b.shape, b), tensor("TENSOR_INT32", [4], shape)]
        + [scalar("INT32", v) for v in (scheme, 2, 2, 0)] + [scalar("BOOL", False)],
        [tensor("TENSOR_FLOAT32", [1, oh, ow, 2])])
    (y,) = run(m, [x])
    # SAME: the padding CONV_2D would use to go from the output size back to the input
    top = max(0, ((oh + 1) // 2 - 1) * 2 + 3 - oh) // 2 if scheme == 1 else 0
    left = max(0, ((ow + 1) // 2 - 1) * 2 + 3 - ow) // 2 if scheme == 1 else 0
    np.testing.assert_allclose(y, naive_transpose(x, f, b, (2, 2), top, left, oh, ow),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("t,per_channel", [("TENSOR_QUANT8_ASYMM", False),
                                           ("TENSOR_QUANT8_ASYMM", True),
                                           ("TENSOR_QUANT8_ASYMM_SIGNED", True)])
def test_quantized(t, per_channel):
    signed = t.endswith("SIGNED")
    lo, hi = (-128, 127) if signed else (0, 255)
    dt = np.int8 if signed else np.uint8
    xq = RNG.integers(lo, hi + 1, (1, 2, 3, 2)).astype(dt)
    bq = RNG.integers(-300, 300, 3).astype(np.int32)
    if per_channel:
        fq = RNG.integers(-127, 128, (3, 2, 2, 2)).astype(np.int8)
        scales, fz = [0.1, 0.2, 0.4], 0
        ft = tensor("TENSOR_QUANT8_SYMM_PER_CHANNEL", fq.shape, fq, channel_quant=(scales, 0))
        bt = tensor("TENSOR_INT32", [3], bq)
    else:
        fq = RNG.integers(0, 256, (3, 2, 2, 2)).astype(np.uint8)
        scales, fz = [0.1] * 3, 128
        ft = tensor(t, fq.shape, fq, 0.1, fz)
        bt = tensor("TENSOR_INT32", [3], bq, 0.5 * 0.1)
    zp = 0 if signed else 128
    m = one_op_model("TRANSPOSE_CONV_2D", [tensor(t, xq.shape, None, 0.5, zp), ft, bt]
                     + explicit((0, 0, 0, 0), (2, 2)), [tensor(t, [1, 4, 6, 3], None, 2.0, zp)])
    (y,) = run(m, [xq])
    acc = naive_transpose(xq.astype(np.float64) - zp, fq.astype(np.float64) - fz, bq, (2, 2),
                          0, 0, 4, 6)
    want = np.clip(requant_ref(acc, np.array(scales) * 0.5 / 2.0) + zp, lo, hi)
    assert np.abs(y.astype(np.int64) - want).max() <= 1


def _valid():
    f = np.ones((2, 2, 2, 1), np.float32)
    return [tensor("TENSOR_FLOAT32", [1, 2, 2, 1]), tensor("TENSOR_FLOAT32", f.shape, f),
            tensor("TENSOR_FLOAT32", [2], np.zeros(2))] + explicit((0,) * 4, (1, 1))


def test_valid_runs():
    m = one_op_model("TRANSPOSE_CONV_2D", _valid(), [tensor("TENSOR_FLOAT32", [1, 3, 3, 2])])
    (y,) = run(m, [np.ones((1, 2, 2, 1), np.float32)])
    np.testing.assert_allclose(y[0, :, :, 0], [[1, 2, 1], [2, 4, 2], [1, 2, 1]])


@pytest.mark.parametrize("index,spec,needle", [
    (9, scalar("INT32", 9), "fused activation"),
    (8, scalar("INT32", 0), "stride height"),
    (5, scalar("INT32", -1), "padding top"),
    (0, tensor("TENSOR_FLOAT32", [2, 2, 1]), "rank 4"),
    (2, tensor("TENSOR_FLOAT32", [3], np.zeros(3)), "bias"),
    (10, scalar("INT32", 0), "match no signature"),
])
def test_rejects(index, spec, needle):
    ins = _valid()
    ins[index] = spec
    m = one_op_model("TRANSPOSE_CONV_2D", ins, [tensor("TENSOR_FLOAT32", [1, 3, 3, 2])])
    assert needle in rejected(m)


def test_rejects_bad_output_shape_tensor_and_scheme():
    base = _valid()[:3]
    tail = [scalar("INT32", v) for v in (1, 1, 1, 0)] + [scalar("BOOL", False)]
    m = one_op_model("TRANSPOSE_CONV_2D", base + [tensor("TENSOR_INT32", [3], [1, 3, 3])] + tail,
                     [tensor("TENSOR_FLOAT32", [1, 3, 3, 2])])
    assert "output shape" in rejected(m)
    tail[0] = scalar("INT32", 4)
    m = one_op_model("TRANSPOSE_CONV_2D", base + [tensor("TENSOR_INT32", [4], [1, 3, 3, 2])]
                     + tail, [tensor("TENSOR_FLOAT32", [1, 3, 3, 2])])
    assert "padding scheme" in rejected(m)


def test_zero_sized_batch():
    x = np.zeros((0, 2, 2, 1), np.float32)
    f = np.ones((3, 2, 2, 1), np.float32)
    y = execute_direct("TRANSPOSE_CONV_2D", [("TENSOR_FLOAT32", x), ("TENSOR_FLOAT32", f),
                                             ("TENSOR_FLOAT32", np.zeros(3, np.float32))],
                       [0, 0, 0, 0, 2, 2, 0, False])
    assert y.shape == (0, 4, 4, 3)
