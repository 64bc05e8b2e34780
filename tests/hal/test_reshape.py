import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.direct_call import call, info
from tests.kits.one_op_models import execute, omitted, one_op_model, rejected, run, scalar, tensor

F32 = "TENSOR_FLOAT32"
TI = "TENSOR_INT32"


def _reshape(in_shape, target, out_shape, const=True):
    return one_op_model("RESHAPE", [tensor(F32, in_shape),
                                    tensor(TI, [len(target)], target if const else None)],
                        [tensor(F32, out_shape)])


def test_reshape_infers_minus_one():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    (y,) = run(_reshape(x.shape, [4, -1], [4, 6]), [x])
    np.testing.assert_array_equal(y, x.reshape(4, 6))


def test_reshape_non_constant_shape():
    x = np.arange(6, dtype=np.float32)
    m = _reshape([6], [0, 0], [0, 0], const=False)
    status, shapes, (y,) = execute(m, [x, np.array([3, -1], np.int32)])
    assert status == ErrorStatus.NONE and y.shape == (3, 2)


def test_reshape_zero_sized():
    x = np.zeros((0, 4), np.float32)
    (y,) = call("RESHAPE", [info(F32, x), info(TI, [-1, 2])], [info(F32, shape=(0, 0))])
    assert y.shape == (0, 2)


def test_reshape_rejects_two_minus_ones():
    assert "at most one -1" in rejected(_reshape([2, 3], [-1, -1], [2, 3]))


def test_reshape_rejects_element_mismatch():
    assert "elements" in rejected(_reshape([2, 3], [4, 2], [4, 2]))


def test_reshape_mismatch_at_execution():
    m = _reshape([2, 3], [0, 0], [0, 0], const=False)
    status, _, _ = execute(m, [np.zeros((2, 3), np.float32), np.array([5, 1], np.int32)])
    assert status == ErrorStatus.GENERAL_FAILURE


def test_reshape_rejects_quant_change():
    m = one_op_model("RESHAPE", [tensor("TENSOR_QUANT8_ASYMM", [2], scale=0.5),
                                 tensor(TI, [1], [2])],
                     [tensor("TENSOR_QUANT8_ASYMM", [2], scale=0.25)])
    assert "same scale" in rejected(m)


# ----------------------------------------------------------------------------- SQUEEZE

@pytest.mark.parametrize("axes,want", [(None, (3, 2)), ([0], (3, 1, 2)),
                                       ([-2, 0], (3, 2))])
def test_squeeze(axes, want):
    x = np.arange(6, dtype=np.float32).reshape(1, 3, 1, 2)
    ax = omitted(TI) if axes is None else tensor(TI, [len(axes)], axes)
    m = one_op_model("SQUEEZE", [tensor(F32, x.shape), ax], [tensor(F32, [0] * len(want))])
    (y,) = run(m, [x])
    assert y.shape == want
    np.testing.assert_array_equal(y.reshape(-1), x.reshape(-1))


def test_squeeze_empty_axes_squeezes_all():
    x = np.zeros((1, 3, 1), np.float32)
    (y,) = call("SQUEEZE", [info(F32, x), info(TI, np.zeros(0, np.int32))],
                [info(F32, shape=(0,))])
    assert y.shape == (3,)


def test_squeeze_everything_gives_shape_1():
    m = one_op_model("SQUEEZE", [tensor(F32, [1, 1])], [tensor(F32, [1])])
    (y,) = run(m, [np.array([[5]], np.float32)])
    assert y.shape == (1,) and y[0] == 5


def test_squeeze_rejects_non_unit_axis():
    m = one_op_model("SQUEEZE", [tensor(F32, [1, 3]), tensor(TI, [1], [1])],
                     [tensor(F32, [1])])
    assert "size-1" in rejected(m)


def test_squeeze_rejects_out_of_range_axis():
    m = one_op_model("SQUEEZE", [tensor(F32, [1, 3]), tensor(TI, [1], [2])],
                     [tensor(F32, [3])])
    assert "out of range" in rejected(m)


# ----------------------------------------------------------------------------- EXPAND_DIMS

@pytest.mark.parametrize("axis,want", [(0, (1, 2, 3)), (2, (2, 3, 1)), (-1, (2, 3, 1)),
                                       (-3, (1, 2, 3))])
def test_expand_dims(axis, want):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    m = one_op_model("EXPAND_DIMS", [tensor(TI, x.shape), scalar("INT32", axis)],
                     [tensor(TI, want)])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, x.reshape(want))


@pytest.mark.parametrize("axis", [3, -4])
def test_expand_dims_rejects_axis(axis):
    m = one_op_model("EXPAND_DIMS", [tensor(F32, [2, 3]), scalar("INT32", axis)],
                     [tensor(F32, [2, 3, 1])])
    assert "axis" in rejected(m)


def test_expand_dims_rejects_tensor_axis():
    m = one_op_model("EXPAND_DIMS", [tensor(F32, [2]), tensor(TI, [1], [0])],
                     [tensor(F32, [1, 2])])
    assert "match no signature" in rejected(m)
