import numpy as np
import pytest

from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

F32 = "TENSOR_FLOAT32"


def _model(shape, groups, axis, t=F32, q=None):
    q = q or {}
    return one_op_model("CHANNEL_SHUFFLE", [tensor(t, shape, **q), scalar("INT32", groups),
                                            scalar("INT32", axis)], [tensor(t, shape, **q)])


def _formula(x, groups, axis):
    c = x.shape[axis]
    gs = c // groups
    out = np.empty_like(x)
    for k in range(gs):
        for g in range(groups):
            src = np.take(x, [g * gs + k], axis=axis)
            idx = [slice(None)] * x.ndim
            idx[axis] = slice(k * groups + g, k * groups + g + 1)
            out[tuple(idx)] = src
    return out


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_channel_shuffle_formula(axis):
    x = np.arange(6 * 6 * 6, dtype=np.float32).reshape(6, 6, 6)
    (y,) = run(_model(x.shape, 3, axis), [x])
    np.testing.assert_array_equal(y, _formula(x, 3, axis % 3))


def test_channel_shuffle_known_order():
    x = np.arange(6, dtype=np.uint8)
    (y,) = run(_model([6], 2, 0, "TENSOR_QUANT8_ASYMM", dict(scale=0.5, zero_point=0)), [x])
    np.testing.assert_array_equal(y, [0, 3, 1, 4, 2, 5])


def test_channel_shuffle_rejects_indivisible():
    assert "divide" in rejected(_model([2, 5], 2, 1))


def test_channel_shuffle_rejects_zero_groups():
    assert "num_groups" in rejected(_model([2, 4], 0, 1))


def test_channel_shuffle_rejects_axis():
    assert "axis" in rejected(_model([2, 4], 2, 2))


def test_channel_shuffle_rejects_int32():
    assert "match no signature" in rejected(_model([4], 2, 0, "TENSOR_INT32"))
