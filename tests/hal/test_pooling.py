"""AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D: against a loop reference (padding excluded from
averages), layouts, quantized rounding, activations and validation mutations."""

import numpy as np
import pytest

from tests.kits.conv_reference import execute_direct
from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

RNG = np.random.default_rng(9)


def naive_pool(x, kind, f, stride, pads):
    """x NHWC float64; f (h, w); pads (top, bottom, left, right)."""
    n, h, w, c = x.shape
    top, bottom, left, right = pads
    oh = (h + top + bottom - f[0]) // stride[0] + 1
    ow = (w + left + right - f[1]) // stride[1] + 1
    out = np.zeros((n, oh, ow, c))
    for y in range(oh):
        for xx in range(ow):
            r0, c0 = y * stride[0] - top, xx * stride[1] - left
            win = x[:, max(r0, 0):max(r0 + f[0], 0), max(c0, 0):max(c0 + f[1], 0), :]
            win = win.reshape(n, -1, c)
            if kind == "AVERAGE_POOL_2D":
                out[:, y, xx] = win.mean(axis=1)
            elif kind == "MAX_POOL_2D":
                out[:, y, xx] = win.max(axis=1)
            else:
                out[:, y, xx] = np.sqrt((win ** 2).mean(axis=1))
    return out


def explicit(pads, stride, f, act=0, nchw=None):
    top, bottom, left, right = pads
    s = [scalar("INT32", v) for v in (left, right, top, bottom, stride[1], stride[0], f[1], f[0],
                                      act)]
    return s + ([scalar("BOOL", nchw)] if nchw is not None else [])


OPS = ["AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("f,stride,pads,nchw", [((2, 2), (2, 2), (0, 0, 0, 0), None),
                                                ((3, 3), (1, 1), (1, 1, 1, 1), True),
                                                ((3, 2), (2, 1), (2, 0, 1, 1), False)])
def test_float_matches_loop_reference(op, f, stride, pads, nchw):
    x = RNG.standard_normal((2, 5, 6, 3)).astype(np.float32)
    want = naive_pool(x.astype(np.float64), op, f, stride, pads)
    xin = x.transpose(0, 3, 1, 2) if nchw else x
    m = one_op_model(op, [tensor("TENSOR_FLOAT32", xin.shape)]
                     + explicit(pads, stride, f, 0, nchw), [tensor("TENSOR_FLOAT32", [0] * 4)])
    (y,) = run(m, [xin])
    if nchw:
        y = y.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", OPS)
def test_implicit_same_and_float16(op):
    x = RNG.standard_normal((1, 5, 5, 2)).astype(np.float16)
    ins = [tensor("TENSOR_FLOAT16", x.shape)] + [scalar("INT32", v) for v in (1, 2, 2, 3, 3, 0)]
    (y,) = run(one_op_model(op, ins, [tensor("TENSOR_FLOAT16", [1, 3, 3, 2])]), [x])
    want = naive_pool(x.astype(np.float64), op, (3, 3), (2, 2), (1, 1, 1, 1))
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=5 * 2**-10, atol=5 * 2**-10)


@pytest.mark.parametrize("t,lo,hi,dt", [("TENSOR_QUANT8_ASYMM", 0, 255, np.uint8),
                                        ("TENSOR_QUANT8_ASYMM_SIGNED", -128, 127, np.int8)])
def test_quantized_average_rounds_half_away_and_max(t, lo, hi, dt):
    # one 2x1 window per output; sums chosen to land on .5 ties both signs
    x = np.array([lo + 1, lo + 2, -3 if lo < 0 else 7, -2 if lo < 0 else 8], dt)
    x = x.reshape(1, 4, 1, 1)
    q = dict(scale=0.5, zero_point=lo + 10)
    for op in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        m = one_op_model(op, [tensor(t, [1, 4, 1, 1], None, **q)]
                         + explicit((0, 0, 0, 0), (2, 1), (2, 1)),
                         [tensor(t, [1, 2, 1, 1], None, **q)])
        (y,) = run(m, [x])
        xs = x.reshape(2, 2).astype(np.int64)
        if op == "AVERAGE_POOL_2D":
            s = xs.sum(axis=1)
            want = np.sign(s) * ((np.abs(s) + 1) // 2)
        else:
            want = xs.max(axis=1)
        np.testing.assert_array_equal(y.reshape(-1), want)


def test_quantized_average_excludes_padding_and_applies_relu6():
    x = np.array([[10, 20], [30, 40]], np.uint8).reshape(1, 2, 2, 1)
    q = dict(scale=0.25, zero_point=12)
    m = one_op_model("AVERAGE_POOL_2D", [tensor("TENSOR_QUANT8_ASYMM", [1, 2, 2, 1], None, **q)]
                     + explicit((1, 1, 1, 1), (1, 1), (2, 2), 3),
                     [tensor("TENSOR_QUANT8_ASYMM", [1, 3, 3, 1], None, **q)])
    (y,) = run(m, [x])
    # corners average one element, edges two, the centre four; RELU6 clamps to [12, 36]
    want = np.array([[10, 15, 20], [20, 25, 30], [30, 35, 40]])
    np.testing.assert_array_equal(y.reshape(3, 3), np.clip(want, 12, 36))


def test_max_pool_relu1_float():
    x = np.array([-3, -0.5, 0.25, 4], np.float32).reshape(1, 2, 2, 1)
    m = one_op_model("MAX_POOL_2D", [tensor("TENSOR_FLOAT32", [1, 2, 2, 1])]
                     + explicit((0, 1, 0, 1), (1, 1), (2, 2), 2),
                     [tensor("TENSOR_FLOAT32", [1, 2, 2, 1])])
    np.testing.assert_array_equal(run(m, [x])[0].reshape(-1), [1, 1, 1, 1])


def _valid():
    return [tensor("TENSOR_FLOAT32", [1, 4, 4, 1])] + explicit((0,) * 4, (2, 2), (2, 2))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("index,spec,needle", [
    (9, scalar("INT32", -1), "fused activation"),
    (5, scalar("INT32", 0), "stride width"),
    (7, scalar("INT32", 0), "filter width"),
    (2, scalar("INT32", -1), "padding right"),
    (0, tensor("TENSOR_FLOAT32", [4, 4, 1]), "rank 4"),
    (0, tensor("TENSOR_INT32", [1, 4, 4, 1]), "match no signature"),
])
def test_rejects(op, index, spec, needle):
    ins = _valid()
    ins[index] = spec
    assert needle in rejected(one_op_model(op, ins, [tensor("TENSOR_FLOAT32", [1, 2, 2, 1])]))


@pytest.mark.parametrize("op", OPS)
def test_rejects_count_and_scheme(op):
    m = one_op_model(op, _valid()[:-1], [tensor("TENSOR_FLOAT32", [1, 2, 2, 1])])
    assert "match no signature" in rejected(m)
    ins = [tensor("TENSOR_FLOAT32", [1, 4, 4, 1])]
    ins += [scalar("INT32", v) for v in (0, 2, 2, 2, 2, 0)]
    m = one_op_model(op, ins, [tensor("TENSOR_FLOAT32", [1, 2, 2, 1])])
    assert "padding scheme" in rejected(m)


def test_rejects_quant_output_mismatch_and_l2_quant():
    ins = [tensor("TENSOR_QUANT8_ASYMM", [1, 4, 4, 1], None, 0.5, 3)] + _valid()[1:]
    out = [tensor("TENSOR_QUANT8_ASYMM", [1, 2, 2, 1], None, 0.5, 4)]
    assert "same scale" in rejected(one_op_model("MAX_POOL_2D", ins, out))
    out = [tensor("TENSOR_QUANT8_ASYMM", [1, 2, 2, 1], None, 0.5, 3)]
    m = one_op_model("L2_POOL_2D", ins, out)
    assert "match no signature" in rejected(m)


@pytest.mark.parametrize("op", OPS)
def test_zero_sized_batch(op):
    x = np.zeros((0, 4, 4, 2), np.float32)
    y = execute_direct(op, [("TENSOR_FLOAT32", x)], [1, 2, 2, 2, 2, 0])
    assert y.shape == (0, 2, 2, 2)


def test_window_outside_input_fails_cleanly():
    m = one_op_model("MAX_POOL_2D", [tensor("TENSOR_FLOAT32", [1, 2, 2, 1])]
                     + explicit((0, 0, 0, 0), (1, 1), (3, 3)), [tensor("TENSOR_FLOAT32", [0] * 4)])
    from tests.kits.one_op_models import execute
    status, _, _ = execute(m, [np.ones((1, 2, 2, 1), np.float32)])
    assert status.name == "GENERAL_FAILURE"
