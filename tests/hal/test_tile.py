import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.one_op_models import execute, one_op_model, rejected, run, tensor

TI = "TENSOR_INT32"


@pytest.mark.parametrize("t,dtype", [("TENSOR_FLOAT32", np.float32), ("TENSOR_INT32", np.int32),
                                     ("TENSOR_FLOAT16", np.float16)])
def test_tile(t, dtype):
    x = np.arange(6).reshape(2, 3).astype(dtype)
    m = one_op_model("TILE", [tensor(t, [2, 3]), tensor(TI, [2], [2, 3])], [tensor(t, [4, 9])])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, np.tile(x, (2, 3)))


def test_tile_quant_signed_keeps_values():
    t = "TENSOR_QUANT8_ASYMM_SIGNED"
    x = np.array([-128, 0, 127], np.int8)
    m = one_op_model("TILE", [tensor(t, [3], scale=0.5, zero_point=-1), tensor(TI, [1], [2])],
                     [tensor(t, [6], scale=0.5, zero_point=-1)])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, [-128, 0, 127, -128, 0, 127])


def test_tile_non_constant_multiples():
    x = np.array([[1, 2]], np.float32)
    m = one_op_model("TILE", [tensor("TENSOR_FLOAT32", [1, 2]), tensor(TI, [2])],
                     [tensor("TENSOR_FLOAT32", [0, 0])])
    status, shapes, (y,) = execute(m, [x, np.array([3, 1], np.int32)])
    assert status == ErrorStatus.NONE
    np.testing.assert_array_equal(y, [[1, 2]] * 3)


def test_tile_rejects_wrong_multiples_length():
    m = one_op_model("TILE", [tensor("TENSOR_FLOAT32", [2, 3]), tensor(TI, [1], [2])],
                     [tensor("TENSOR_FLOAT32", [4, 3])])
    assert "multiples" in rejected(m)


def test_tile_rejects_negative_multiples():
    m = one_op_model("TILE", [tensor("TENSOR_FLOAT32", [2]), tensor(TI, [1], [-1])],
                     [tensor("TENSOR_FLOAT32", [2])])
    assert ">= 0" in rejected(m)
