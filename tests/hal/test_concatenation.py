import numpy as np
import pytest

from tests.kits.direct_call import call, info
from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

F32 = "TENSOR_FLOAT32"
Q8 = "TENSOR_QUANT8_ASYMM"


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_concat_float(axis):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(6, 12, dtype=np.float32).reshape(2, 3)
    out = list(np.concatenate([a, b], axis=axis).shape)
    m = one_op_model("CONCATENATION", [tensor(F32, [2, 3]), tensor(F32, [2, 3]),
                                       scalar("INT32", axis)], [tensor(F32, out)])
    (y,) = run(m, [a, b])
    np.testing.assert_array_equal(y, np.concatenate([a, b], axis=axis))


def test_concat_single_input():
    a = np.arange(3, dtype=np.float32)
    m = one_op_model("CONCATENATION", [tensor(F32, [3]), scalar("INT32", 0)], [tensor(F32, [3])])
    (y,) = run(m, [a])
    np.testing.assert_array_equal(y, a)


def test_concat_requantizes_mixed_scales():
    a = np.array([0, 10, 255], np.uint8)   # scale 0.5, zp 10: -5, 0, 122.5
    b = np.array([0, 4, 200], np.uint8)    # scale 0.25, zp 0: 0, 1, 50
    m = one_op_model("CONCATENATION", [tensor(Q8, [3], scale=0.5, zero_point=10),
                                       tensor(Q8, [3], scale=0.25, zero_point=0),
                                       scalar("INT32", 0)],
                     [tensor(Q8, [6], scale=1.0, zero_point=5)])
    (y,) = run(m, [a, b])
    # real / 1.0 + 5, rounded half away from zero, saturated to [0, 255]
    np.testing.assert_array_equal(y, [0, 5, 128, 5, 6, 55])


def test_concat_signed_requantize_saturates():
    t = "TENSOR_QUANT8_ASYMM_SIGNED"
    a = np.array([-128, 127], np.int8)
    m = one_op_model("CONCATENATION", [tensor(t, [2], scale=1.0, zero_point=0),
                                       tensor(t, [2], scale=0.5, zero_point=0),
                                       scalar("INT32", 0)],
                     [tensor(t, [4], scale=0.5, zero_point=0)])
    (y,) = run(m, [a, a])
    np.testing.assert_array_equal(y, [-128, 127, -128, 127])


def test_concat_zero_sized_input():
    a = np.zeros((0, 2), np.float32)
    b = np.ones((3, 2), np.float32)
    (y,) = call("CONCATENATION", [info(F32, a), info(F32, b), info("INT32", 0)],
                [info(F32, shape=(0, 0))])
    np.testing.assert_array_equal(y, b)


def test_concat_rejects_axis_out_of_range():
    m = one_op_model("CONCATENATION", [tensor(F32, [2]), tensor(F32, [2]), scalar("INT32", 1)],
                     [tensor(F32, [4])])
    assert "axis" in rejected(m)


def test_concat_rejects_rank_5():
    s = [1, 1, 1, 1, 2]
    m = one_op_model("CONCATENATION", [tensor(F32, s), tensor(F32, s), scalar("INT32", 4)],
                     [tensor(F32, [1, 1, 1, 1, 4])])
    assert "rank <= 4" in rejected(m)


def test_concat_rejects_mismatched_dims():
    m = one_op_model("CONCATENATION", [tensor(F32, [2, 3]), tensor(F32, [2, 4]),
                                       scalar("INT32", 0)], [tensor(F32, [4, 3])])
    assert "may differ only along axis" in rejected(m)


def test_concat_rejects_mixed_types():
    m = one_op_model("CONCATENATION", [tensor(F32, [2]), tensor("TENSOR_FLOAT16", [2]),
                                       scalar("INT32", 0)], [tensor(F32, [4])])
    assert "match no signature" in rejected(m)
