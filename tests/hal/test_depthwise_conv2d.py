"""DEPTHWISE_CONV_2D: against the grouped loop reference, multiplier, layouts, quantization,
validation mutations."""

import numpy as np
import pytest

from tests.kits.conv_reference import execute_direct, naive_conv, requant_ref
from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

RNG = np.random.default_rng(11)


def naive_depthwise(x, f, b, stride=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1)):
    """Depthwise = grouped conv with one group per input channel."""
    c = x.shape[3]
    return naive_conv(x, f[0].transpose(2, 0, 1)[..., None], b, stride, pads, dil, groups=c)


def dw_scalars(pads, stride, mult, act=0, nchw=None, dil=None):
    top, bottom, left, right = pads
    s = [scalar("INT32", v) for v in (left, right, top, bottom, stride[1], stride[0], mult, act)]
    if nchw is not None:
        s.append(scalar("BOOL", nchw))
    if dil is not None:
        s += [scalar("INT32", dil[1]), scalar("INT32", dil[0])]
    return s


@pytest.mark.parametrize("mult,stride,pads,dil,nchw", [
    (1, (1, 1), (0, 0, 0, 0), None, None), (2, (2, 1), (1, 1, 0, 2), None, False),
    (3, (1, 2), (1, 0, 1, 1), (2, 1), True), (1, (2, 2), (1, 1, 1, 1), (1, 1), True)])
def test_float_matches_loop_reference(mult, stride, pads, dil, nchw):
    x = RNG.standard_normal((2, 6, 5, 2)).astype(np.float32)
    f = RNG.standard_normal((1, 3, 2, 2 * mult)).astype(np.float32)
    b = RNG.standard_normal(2 * mult).astype(np.float32)
    want = naive_depthwise(x, f, b, stride, pads, dil or (1, 1))
    xin = x.transpose(0, 3, 1, 2) if nchw else x
    m = one_op_model("DEPTHWISE_CONV_2D", [
        tensor("TENSOR_FLOAT32", xin.shape), tensor("TENSOR_FLOAT32", f.shape, f),
        tensor("TENSOR_FLOAT32", b.shape, b)] + dw_scalars(pads, stride, mult, 0, nchw, dil),
        [tensor("TENSOR_FLOAT32", [0, 0, 0, 0])])
    (y,) = run(m, [xin])
    if nchw:
        y = y.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_implicit_same_padding():
    x = RNG.standard_normal((1, 5, 5, 2)).astype(np.float32)
    f = RNG.standard_normal((1, 3, 3, 2)).astype(np.float32)
    b = np.zeros(2, np.float32)
    m = one_op_model("DEPTHWISE_CONV_2D", [
        tensor("TENSOR_FLOAT32", x.shape), tensor("TENSOR_FLOAT32", f.shape, f),
        tensor("TENSOR_FLOAT32", b.shape, b)] + [scalar("INT32", v) for v in (1, 1, 1, 1, 0)],
        [tensor("TENSOR_FLOAT32", [1, 5, 5, 2])])
    (y,) = run(m, [x])
    np.testing.assert_allclose(y, naive_depthwise(x, f, b, pads=(1, 1, 1, 1)), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("signed,per_channel", [(False, False), (False, True), (True, False),
                                                (True, True)])
def test_quantized(signed, per_channel):
    t = "TENSOR_QUANT8_ASYMM_SIGNED" if signed else "TENSOR_QUANT8_ASYMM"
    lo, hi = (-128, 127) if signed else (0, 255)
    dt = np.int8 if signed else np.uint8
    xq = RNG.integers(lo, hi + 1, (1, 4, 4, 2)).astype(dt)
    bq = RNG.integers(-300, 300, 4).astype(np.int32)
    if per_channel:
        fq = RNG.integers(-127, 128, (1, 2, 2, 4)).astype(np.int8)
        scales = [0.05, 0.1, 0.2, 0.4]
        ft = tensor("TENSOR_QUANT8_SYMM_PER_CHANNEL", fq.shape, fq, channel_quant=(scales, 3))
        bt, fz = tensor("TENSOR_INT32", [4], bq), 0
    else:
        fq = RNG.integers(lo, hi + 1, (1, 2, 2, 4)).astype(dt)
        scales, fz = [0.1] * 4, 3
        ft = tensor(t, fq.shape, fq, 0.1, fz)
        bt = tensor("TENSOR_INT32", [4], bq, 0.5 * 0.1)
    m = one_op_model("DEPTHWISE_CONV_2D", [tensor(t, xq.shape, None, 0.5, 1), ft, bt]
                     + dw_scalars((0, 0, 0, 0), (1, 1), 2, 1),
                     [tensor(t, [1, 3, 3, 4], None, 0.7, 2)])
    (y,) = run(m, [xq])
    acc = naive_depthwise(xq.astype(np.float64) - 1, fq.astype(np.float64) - fz, bq)
    want = np.clip(requant_ref(acc, np.array(scales) * 0.5 / 0.7) + 2, max(lo, 2), hi)  # RELU
    assert np.abs(y.astype(np.int64) - want).max() <= 1


def _valid():
    f = np.ones((1, 2, 2, 4), np.float32)
    return [tensor("TENSOR_FLOAT32", [1, 3, 3, 2]), tensor("TENSOR_FLOAT32", f.shape, f),
            tensor("TENSOR_FLOAT32", [4], np.zeros(4))] + dw_scalars((0,) * 4, (1, 1), 2)


def test_valid_runs():
    m = one_op_model("DEPTHWISE_CONV_2D", _valid(), [tensor("TENSOR_FLOAT32", [1, 2, 2, 4])])
    (y,) = run(m, [np.ones((1, 3, 3, 2), np.float32)])
    np.testing.assert_allclose(y, 4.0)


@pytest.mark.parametrize("index,spec,needle", [
    (9, scalar("INT32", 3), "depth multiplier"),
    (9, scalar("INT32", 0), "depth multiplier"),
    (10, scalar("INT32", 4), "fused activation"),
    (8, scalar("INT32", -2), "stride height"),
    (0, tensor("TENSOR_FLOAT32", [3, 3, 2]), "rank 4"),
    (0, tensor("TENSOR_INT32", [1, 3, 3, 2]), "match no signature"),
    (1, tensor("TENSOR_FLOAT32", [2, 2, 2, 4], np.ones((2, 2, 2, 4))), "first dimension"),
])
def test_rejects(index, spec, needle):
    ins = _valid()
    ins[index] = spec
    m = one_op_model("DEPTHWISE_CONV_2D", ins, [tensor("TENSOR_FLOAT32", [1, 2, 2, 4])])
    assert needle in rejected(m)


def test_rejects_wrong_input_count_and_per_channel_axis():
    m = one_op_model("DEPTHWISE_CONV_2D", _valid()[:-1], [tensor("TENSOR_FLOAT32", [1, 2, 2, 4])])
    assert "match no signature" in rejected(m)
    fq = np.ones((1, 1, 1, 2), np.int8)
    m = one_op_model("DEPTHWISE_CONV_2D", [
        tensor("TENSOR_QUANT8_ASYMM", [1, 2, 2, 2], None, 0.5, 0),
        tensor("TENSOR_QUANT8_SYMM_PER_CHANNEL", [1, 1, 1, 2], fq, channel_quant=([0.1], 0)),
        tensor("TENSOR_INT32", [2], np.zeros(2))] + dw_scalars((0,) * 4, (1, 1), 1),
        [tensor("TENSOR_QUANT8_ASYMM", [1, 2, 2, 2], None, 1.0, 0)])
    assert "channel dimension 3" in rejected(m)


def test_zero_sized_batch_quantized():
    x = np.zeros((0, 3, 3, 2), np.uint8)
    f = np.ones((1, 2, 2, 4), np.uint8)
    tensors = [("TENSOR_QUANT8_ASYMM", x, 0.5, 3), ("TENSOR_QUANT8_ASYMM", f, 0.5, 0),
               ("TENSOR_INT32", np.zeros(4, np.int32), 0.25)]
    y = execute_direct("DEPTHWISE_CONV_2D", tensors, [0, 0, 0, 0, 1, 1, 2, 0],
                       "TENSOR_QUANT8_ASYMM", (1.0, 0))
    assert y.shape == (0, 2, 2, 4) and y.dtype == np.uint8
