import numpy as np
import pytest

from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

F32 = "TENSOR_FLOAT32"


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_split(axis):
    x = np.arange(6 * 6, dtype=np.float32).reshape(6, 6)
    parts = np.split(x, 3, axis=axis)
    m = one_op_model("SPLIT", [tensor(F32, x.shape), scalar("INT32", axis), scalar("INT32", 3)],
                     [tensor(F32, p.shape) for p in parts])
    ys = run(m, [x])
    assert len(ys) == 3
    for y, p in zip(ys, parts):
        np.testing.assert_array_equal(y, p)


def test_split_quant_int32():
    x = np.arange(8, dtype=np.int32)
    m = one_op_model("SPLIT", [tensor("TENSOR_INT32", [8]), scalar("INT32", 0),
                               scalar("INT32", 2)], [tensor("TENSOR_INT32", [4])] * 2)
    a, b = run(m, [x])
    np.testing.assert_array_equal(a, [0, 1, 2, 3])
    np.testing.assert_array_equal(b, [4, 5, 6, 7])


def test_split_rejects_count_mismatch():
    m = one_op_model("SPLIT", [tensor(F32, [4]), scalar("INT32", 0), scalar("INT32", 2)],
                     [tensor(F32, [4])] * 1)
    assert "outputs" in rejected(m)


def test_split_rejects_indivisible():
    m = one_op_model("SPLIT", [tensor(F32, [5]), scalar("INT32", 0), scalar("INT32", 2)],
                     [tensor(F32, [2])] * 2)
    assert "divide" in rejected(m)


def test_split_rejects_axis():
    m = one_op_model("SPLIT", [tensor(F32, [4]), scalar("INT32", 1), scalar("INT32", 2)],
                     [tensor(F32, [2])] * 2)
    assert "axis" in rejected(m)


def test_split_rejects_quant_change():
    t = "TENSOR_QUANT8_ASYMM"
    m = one_op_model("SPLIT", [tensor(t, [4], scale=0.5), scalar("INT32", 0), scalar("INT32", 2)],
                     [tensor(t, [2], scale=0.5), tensor(t, [2], scale=1.0)])
    assert "same scale" in rejected(m)
