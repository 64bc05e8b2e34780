"""GROUPED_CONV_2D: against the loop reference, layouts, padding forms, quantization and
validation mutations."""

import numpy as np
import pytest

from tests.kits.conv_reference import execute_direct, naive_conv, requant_ref
from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

RNG = np.random.default_rng(5)


def g_scalars(pads, stride, groups, act=0, nchw=False):
    top, bottom, left, right = pads
    return [scalar("INT32", v) for v in (left, right, top, bottom, stride[1], stride[0],
                                         groups, act)] + [scalar("BOOL", nchw)]


@pytest.mark.parametrize("groups,stride,pads,nchw", [(1, (1, 1), (0, 0, 0, 0), False),
                                                     (2, (2, 1), (1, 0, 1, 1), True),
                                                     (3, (1, 2), (0, 1, 2, 0), False)])
def test_float_matches_loop_reference(groups, stride, pads, nchw):
    cg, per = 2, 2
    x = RNG.standard_normal((2, 5, 6, groups * cg)).astype(np.float32)
    f = RNG.standard_normal((groups * per, 2, 3, cg)).astype(np.float32)
    b = RNG.standard_normal(groups * per).astype(np.float32)
    want = naive_conv(x, f, b, stride, pads, groups=groups)
    xin = x.transpose(0, 3, 1, 2) if nchw else x
    m = one_op_model("GROUPED_CONV_2D", [
        tensor("TENSOR_FLOAT32", xin.shape), tensor("TENSOR_FLOAT32", f.shape, f),
        tensor("TENSOR_FLOAT32", b.shape, b)] + g_scalars(pads, stride, groups, 0, nchw),
        [tensor("TENSOR_FLOAT32", [0, 0, 0, 0])])
    (y,) = run(m, [xin])
    if nchw:
        y = y.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_implicit_valid_and_float16():
    x = RNG.standard_normal((1, 4, 4, 4)).astype(np.float16)
    f = RNG.standard_normal((4, 2, 2, 2)).astype(np.float16)
    b = RNG.standard_normal(4).astype(np.float16)
    m = one_op_model("GROUPED_CONV_2D", [
        tensor("TENSOR_FLOAT16", x.shape), tensor("TENSOR_FLOAT16", f.shape, f),
        tensor("TENSOR_FLOAT16", b.shape, b)] + [scalar("INT32", v) for v in (2, 1, 1, 2, 0)]
        + [scalar("BOOL", False)], [tensor("TENSOR_FLOAT16", [1, 3, 3, 4])])
    (y,) = run(m, [x])
    want = naive_conv(*(a.astype(np.float64) for a in (x, f, b)), groups=2)
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=5 * 2**-10, atol=5 * 2**-10)


@pytest.mark.parametrize("per_channel", [False, True])
def test_quant8_signed(per_channel):
    t = "TENSOR_QUANT8_ASYMM_SIGNED"
    xq = RNG.integers(-128, 128, (1, 3, 3, 4)).astype(np.int8)
    fq = RNG.integers(-127, 128, (4, 2, 2, 2)).astype(np.int8)
    bq = RNG.integers(-300, 300, 4).astype(np.int32)
    if per_channel:
        scales, fz = [0.1, 0.2, 0.05, 0.3], 0
        ft = tensor("TENSOR_QUANT8_SYMM_PER_CHANNEL", fq.shape, fq, channel_quant=(scales, 0))
        bt = tensor("TENSOR_INT32", [4], bq)
    else:
        scales, fz = [0.1] * 4, -2
        ft = tensor(t, fq.shape, fq, 0.1, fz)
        bt = tensor("TENSOR_INT32", [4], bq, 0.25 * 0.1)
    m = one_op_model("GROUPED_CONV_2D", [tensor(t, xq.shape, None, 0.25, 4), ft, bt]
                     + g_scalars((0,) * 4, (1, 1), 2), [tensor(t, [1, 2, 2, 4], None, 0.5, -1)])
    (y,) = run(m, [xq])
    acc = naive_conv(xq.astype(np.float64) - 4, fq.astype(np.float64) - fz, bq, groups=2)
    want = np.clip(requant_ref(acc, np.array(scales) * 0.25 / 0.5) - 1, -128, 127)
    assert np.abs(y.astype(np.int64) - want).max() <= 1


def _valid():
    f = np.ones((4, 1, 1, 2), np.float32)
    return [tensor("TENSOR_FLOAT32", [1, 2, 2, 4]), tensor("TENSOR_FLOAT32", f.shape, f),
            tensor("TENSOR_FLOAT32", [4], np.zeros(4))] + g_scalars((0,) * 4, (1, 1), 2)


def test_valid_runs():
    m = one_op_model("GROUPED_CONV_2D", _valid(), [tensor("TENSOR_FLOAT32", [1, 2, 2, 4])])
    x = np.arange(16, dtype=np.float32).reshape(1, 2, 2, 4)
    (y,) = run(m, [x])
    np.testing.assert_allclose(y[..., :2], np.repeat(x[..., :2].sum(-1, keepdims=True), 2, -1))


@pytest.mark.parametrize("index,spec,needle", [
    (9, scalar("INT32", 3), "number of groups"),
    (9, scalar("INT32", 0), "number of groups"),
    (10, scalar("INT32", 7), "fused activation"),
    (7, scalar("INT32", 0), "stride width"),
    (0, tensor("TENSOR_FLOAT32", [2, 2, 4]), "rank 4"),
    (11, scalar("INT32", 0), "match no signature"),
])
def test_rejects(index, spec, needle):
    ins = _valid()
    ins[index] = spec
    m = one_op_model("GROUPED_CONV_2D", ins, [tensor("TENSOR_FLOAT32", [1, 2, 2, 4])])
    assert needle in rejected(m)


def test_rejects_missing_layout_and_bad_scheme():
    m = one_op_model("GROUPED_CONV_2D", _valid()[:-1], [tensor("TENSOR_FLOAT32", [1, 2, 2, 4])])
    assert "match no signature" in rejected(m)
    ins = _valid()[:3] + [scalar("INT32", v) for v in (0, 1, 1, 2, 0)] + [scalar("BOOL", False)]
    m = one_op_model("GROUPED_CONV_2D", ins, [tensor("TENSOR_FLOAT32", [1, 2, 2, 4])])
    assert "padding scheme" in rejected(m)


def test_zero_sized_batch():
    x = np.zeros((0, 3, 3, 4), np.float32)
    f = np.ones((2, 2, 2, 2), np.float32)
    y = execute_direct("GROUPED_CONV_2D", [("TENSOR_FLOAT32", x), ("TENSOR_FLOAT32", f),
                                           ("TENSOR_FLOAT32", np.zeros(2, np.float32))],
                       [0, 0, 0, 0, 1, 1, 2, 0, False])
    assert y.shape == (0, 2, 2, 2)
