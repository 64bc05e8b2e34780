import numpy as np
import pytest

from tests.kits.one_op_models import one_op_model, rejected, run, tensor


def model(t, shapes, qa=(0.0, 0), qb=(0.0, 0), qo=(0.0, 0)):
    return one_op_model("SELECT", [tensor("TENSOR_BOOL8", shapes[0]),
                                   tensor(t, shapes[1], scale=qa[0], zero_point=qa[1]),
                                   tensor(t, shapes[2], scale=qb[0], zero_point=qb[1])],
                        [tensor(t, shapes[3], scale=qo[0], zero_point=qo[1])])


@pytest.mark.parametrize("t", ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_INT32"])
def test_select(t):
    c = np.array([[True, False], [False, True]])
    a = np.array([[1, 2], [3, 4]])
    b = np.array([[-1, -2], [-3, -4]])
    (y,) = run(model(t, [[2, 2]] * 4), [c, a, b])
    np.testing.assert_array_equal(y, [[1, -2], [-3, 4]])


def test_quant_requantizes_each_input_to_the_output():
    c = np.array([True, False, True, False])
    a = np.array([10, 20, 250, 0], np.uint8)   # real (a - 10) * 0.5
    b = np.array([0, 13, 0, 255], np.uint8)    # real (b - 1) * 0.25
    (y,) = run(model("TENSOR_QUANT8_ASYMM", [[4]] * 4, qa=(0.5, 10), qb=(0.25, 1),
                     qo=(1.0, 5)), [c, a, b])
    # a[0] -> 0 + 5; b[1] -> 3 + 5; a[2] -> 120 + 5; b[3] -> 63.5 -> 64 (half away) + 5
    np.testing.assert_array_equal(y, [5, 8, 125, 69])


def test_quant_signed_saturates():
    c = np.array([True, False])
    a = np.array([127, 0], np.int8)
    b = np.array([0, -128], np.int8)
    (y,) = run(model("TENSOR_QUANT8_ASYMM_SIGNED", [[2]] * 4, qa=(1.0, 0), qb=(1.0, 0),
                     qo=(0.5, 0)), [c, a, b])
    np.testing.assert_array_equal(y, [127, -128])


def test_rejects_shape_mismatch_and_types():
    assert "same shape" in rejected(model("TENSOR_FLOAT32", [[2], [2], [3], [2]]))
    assert "same shape" in rejected(model("TENSOR_FLOAT32", [[2], [2], [2], [2, 1]]))
    m = one_op_model("SELECT", [tensor("TENSOR_INT32", [2]), tensor("TENSOR_FLOAT32", [2]),
                                tensor("TENSOR_FLOAT32", [2])], [tensor("TENSOR_FLOAT32", [2])])
    assert "match no signature" in rejected(m)
    m = one_op_model("SELECT", [tensor("TENSOR_BOOL8", [2]), tensor("TENSOR_FLOAT32", [2]),
                                tensor("TENSOR_INT32", [2])], [tensor("TENSOR_FLOAT32", [2])])
    assert "match no signature" in rejected(m)
