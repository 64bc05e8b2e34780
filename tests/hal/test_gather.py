import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.one_op_models import execute, one_op_model, rejected, run, scalar, tensor

F32 = "TENSOR_FLOAT32"
TI = "TENSOR_INT32"


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_gather_matches_take(axis):
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[1, 0], [1, 1], [0, 1]], np.int32)
    want = np.take(x, idx, axis=axis)
    m = one_op_model("GATHER", [tensor(F32, x.shape), scalar("INT32", axis),
                                tensor(TI, idx.shape, idx)], [tensor(F32, want.shape)])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, want)


def test_gather_quant_keeps_quantization():
    t = "TENSOR_QUANT8_ASYMM"
    x = np.array([[1, 2], [3, 4]], np.uint8)
    m = one_op_model("GATHER", [tensor(t, [2, 2], scale=0.5, zero_point=1),
                                scalar("INT32", 0), tensor(TI, [3], [1, 1, 0])],
                     [tensor(t, [3, 2], scale=0.5, zero_point=1)])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, [[3, 4], [3, 4], [1, 2]])


def test_gather_rejects_constant_index_out_of_bounds():
    m = one_op_model("GATHER", [tensor(F32, [2, 2]), scalar("INT32", 0), tensor(TI, [1], [2])],
                     [tensor(F32, [1, 2])])
    assert "indices" in rejected(m)


def test_gather_index_out_of_bounds_fails_execution():
    m = one_op_model("GATHER", [tensor(F32, [2, 2]), scalar("INT32", 0), tensor(TI, [1])],
                     [tensor(F32, [1, 2])])
    status, _, _ = execute(m, [np.zeros((2, 2), np.float32), np.array([-1], np.int32)])
    assert status == ErrorStatus.GENERAL_FAILURE


def test_gather_rejects_axis():
    m = one_op_model("GATHER", [tensor(F32, [2, 2]), scalar("INT32", 2), tensor(TI, [1], [0])],
                     [tensor(F32, [2, 1])])
    assert "axis" in rejected(m)


def test_gather_rejects_quant_change():
    t = "TENSOR_QUANT8_ASYMM"
    m = one_op_model("GATHER", [tensor(t, [2], scale=0.5), scalar("INT32", 0),
                                tensor(TI, [1], [0])], [tensor(t, [1], scale=0.25)])
    assert "same scale" in rejected(m)
