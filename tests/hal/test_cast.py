import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.one_op_models import execute, one_op_model, rejected, run, tensor

F32, F16, I32, Q8 = "TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM"


def model(tin, tout, shape, qin=(0.0, 0), qout=(0.0, 0), out_shape=None):
    return one_op_model("CAST", [tensor(tin, shape, scale=qin[0], zero_point=qin[1])],
                        [tensor(tout, out_shape or shape, scale=qout[0], zero_point=qout[1])])


@pytest.mark.parametrize("tin", [F32, F16])
def test_float_to_int32_truncates_toward_zero(tin):
    x = np.array([-2.7, -0.5, 0.5, 2.7, 100.9])
    (y,) = run(model(tin, I32, [5]), [x])
    np.testing.assert_array_equal(y, [-2, 0, 0, 2, 100])


@pytest.mark.parametrize("tin", [F32, F16, I32])
def test_to_quant8_saturates_and_ignores_scale(tin):
    x = np.array([-300, -1, 0, 7, 255, 1000])
    (y,) = run(model(tin, Q8, [6], qout=(4.0, 100)), [x])
    np.testing.assert_array_equal(y, [0, 0, 0, 7, 255, 255])


def test_float32_to_int32_saturates_instead_of_overflowing():
    (y,) = run(model(F32, I32, [3]), [np.array([3e9, -3e9, 1.0], np.float32)])
    np.testing.assert_array_equal(y, [2**31 - 1, -(2**31), 1])


def test_quant8_to_float_uses_stored_values():
    (y,) = run(model(Q8, F16, [3], qin=(4.0, 100)), [np.array([0, 100, 255], np.uint8)])
    np.testing.assert_array_equal(y, [0, 100, 255])


def test_int32_to_float16_large_values_become_inf():
    (y,) = run(model(I32, F16, [2]), [np.array([70000, -1], np.int32)])
    assert np.isinf(y[0]) and y[1] == -1


@pytest.mark.parametrize("t,dtype", [("TENSOR_BOOL8", np.bool_), ("TENSOR_QUANT16_SYMM", np.int16),
                                     ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8)])
def test_v1_3_identity(t, dtype):
    q = (0.0, 0) if t == "TENSOR_BOOL8" else (1.0, 0)
    x = np.array([1, 0, 1]).astype(dtype)
    (y,) = run(model(t, t, [3], qin=q, qout=q), [x])
    np.testing.assert_array_equal(y, x)


def test_dynamic_shape():
    status, shapes, (y,) = execute(model(I32, F32, [2, 2], out_shape=[0, 0]),
                                   [np.ones((2, 2), np.int32)])
    assert status == ErrorStatus.NONE and list(shapes[0].dimensions) == [2, 2]


def test_rejects_mismatching_shapes_and_non_identity_v1_3_types():
    assert "shape" in rejected(model(I32, I32, [2, 3], out_shape=[100]))
    assert "match no signature" in rejected(model("TENSOR_BOOL8", I32, [2]))
    assert "match no signature" in rejected(model("TENSOR_QUANT8_ASYMM_SIGNED", Q8, [2],
                                                  qin=(1.0, 0), qout=(1.0, 0)))
