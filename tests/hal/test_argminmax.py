import numpy as np
import pytest

from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import OperandType, OperationType
from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor


def model(op, t, shape, axis, out_shape, q=(0.0, 0)):
    return one_op_model(op, [tensor(t, shape, scale=q[0], zero_point=q[1]),
                             scalar("INT32", axis)], [tensor("TENSOR_INT32", out_shape)])


@pytest.mark.parametrize("op,f", [("ARGMAX", np.argmax), ("ARGMIN", np.argmin)])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_float_against_numpy(op, f, axis):
    x = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    out = list(np.delete(np.array([2, 3, 4]), axis))
    (y,) = run(model(op, "TENSOR_FLOAT32", [2, 3, 4], axis, out), [x])
    np.testing.assert_array_equal(y, f(x, axis=axis))


def test_ties_pick_the_lowest_index():
    x = np.array([[1, 7, 7, 0], [3, 3, 3, 3]], np.int32)
    (y,) = run(model("ARGMAX", "TENSOR_INT32", [2, 4], 1, [2]), [x])
    np.testing.assert_array_equal(y, [1, 0])
    (y,) = run(model("ARGMIN", "TENSOR_INT32", [2, 4], 1, [2]), [x])
    np.testing.assert_array_equal(y, [3, 0])


def test_rank_1_gives_shape_1_and_quant_signed_compares_stored_values():
    x = np.array([-128, 127, -5], np.int8)
    (y,) = run(model("ARGMAX", "TENSOR_QUANT8_ASYMM_SIGNED", [3], 0, [1], q=(0.5, 3)), [x])
    np.testing.assert_array_equal(y, [1])
    (y,) = run(model("ARGMIN", "TENSOR_FLOAT16", [3], 0, [1]), [x.astype(np.float16)])
    np.testing.assert_array_equal(y, [0])


def direct(op, x, axis):
    ins = [OperandInfo(OperandType.TENSOR_FLOAT32, x.shape, value=x),
           OperandInfo(OperandType.INT32, (), value=np.array(axis, np.int32))]
    ctx = OperationContext(OperationType[op], ins, [OperandInfo(OperandType.TENSOR_INT32, ())])
    return lookup(OperationType[op]).run(ctx)[0]


def test_zero_sized_other_dimension_and_empty_axis():
    assert direct("ARGMAX", np.zeros((0, 3), np.float32), 1).shape == (0,)
    with pytest.raises(ValueError):  # the executor turns it into GENERAL_FAILURE
        direct("ARGMAX", np.zeros((0, 3), np.float32), 0)


def test_rejects_axis_out_of_range():
    assert "axis" in rejected(model("ARGMAX", "TENSOR_FLOAT32", [2, 3], 2, [2]))
    assert "axis" in rejected(model("ARGMIN", "TENSOR_FLOAT32", [2, 3], -3, [2]))


def test_rejects_wrong_output_type_and_input_count():
    m = one_op_model("ARGMAX", [tensor("TENSOR_FLOAT32", [2]), scalar("INT32", 0)],
                     [tensor("TENSOR_FLOAT32", [1])])
    assert "match no signature" in rejected(m)
    m = one_op_model("ARGMAX", [tensor("TENSOR_FLOAT32", [2])], [tensor("TENSOR_INT32", [1])])
    assert "match no signature" in rejected(m)
    m = one_op_model("ARGMAX", [tensor("TENSOR_BOOL8", [2]), scalar("INT32", 0)],
                     [tensor("TENSOR_INT32", [1])])
    assert "match no signature" in rejected(m)
