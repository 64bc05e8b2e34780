import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.one_op_models import execute, one_op_model, rejected, run, scalar, tensor


def model(t, shape, k, q=(0.0, 0), qo=None):
    qo = qo or q
    out = list(shape[:-1]) + [k]
    return one_op_model("TOPK_V2", [tensor(t, shape, scale=q[0], zero_point=q[1]),
                                    scalar("INT32", k)],
                        [tensor(t, out, scale=qo[0], zero_point=qo[1]),
                         tensor("TENSOR_INT32", out)])


@pytest.mark.parametrize("t", ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_INT32"])
def test_descending_values_and_indices(t):
    x = np.array([[5, 1, 9, 3], [0, -2, 8, 7]])
    v, i = run(model(t, [2, 4], 3), [x])
    np.testing.assert_array_equal(v, [[9, 5, 3], [8, 7, 0]])
    np.testing.assert_array_equal(i, [[2, 0, 3], [2, 3, 0]])


def test_ties_put_the_larger_index_first_as_the_spec_says():
    x = np.array([[4, 7, 4, 7]], np.float32)
    v, i = run(model("TENSOR_FLOAT32", [1, 4], 3), [x])
    np.testing.assert_array_equal(v, [[7, 7, 4]])
    np.testing.assert_array_equal(i, [[3, 1, 2]])


def test_quant8_and_rank_1_and_k_equal_to_row():
    x = np.array([250, 3, 128], np.uint8)
    v, i = run(model("TENSOR_QUANT8_ASYMM", [3], 3, q=(0.5, 128)), [x])
    np.testing.assert_array_equal(v, [250, 128, 3])
    np.testing.assert_array_equal(i, [0, 2, 1])


def test_dynamic_shapes():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = one_op_model("TOPK_V2", [tensor("TENSOR_FLOAT32", [3, 4]), scalar("INT32", 2)],
                     [tensor("TENSOR_FLOAT32", [0, 0]), tensor("TENSOR_INT32", [0, 0])])
    status, shapes, (v, i) = execute(m, [x])
    assert status == ErrorStatus.NONE
    assert [list(s.dimensions) for s in shapes] == [[3, 2], [3, 2]]
    np.testing.assert_array_equal(i, [[3, 2]] * 3)


def test_rejects_k_out_of_range():
    assert "k" in rejected(model("TENSOR_FLOAT32", [2, 4], 5))
    assert "k" in rejected(model("TENSOR_FLOAT32", [2, 4], 0))


def test_rejects_quant_mismatch_and_wrong_types():
    assert "same scale" in rejected(model("TENSOR_QUANT8_ASYMM", [4], 2, q=(0.5, 1),
                                          qo=(0.5, 2)))
    m = one_op_model("TOPK_V2", [tensor("TENSOR_FLOAT32", [4]), scalar("INT32", 2)],
                     [tensor("TENSOR_FLOAT32", [2]), tensor("TENSOR_FLOAT32", [2])])
    assert "match no signature" in rejected(m)
    m = one_op_model("TOPK_V2", [tensor("TENSOR_FLOAT32", [4]), scalar("FLOAT32", 2.0)],
                     [tensor("TENSOR_FLOAT32", [2]), tensor("TENSOR_INT32", [2])])
    assert "match no signature" in rejected(m)
