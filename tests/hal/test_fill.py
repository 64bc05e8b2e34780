import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.one_op_models import execute, one_op_model, rejected, run, scalar, tensor

TI = "TENSOR_INT32"


@pytest.mark.parametrize("t,st,value", [("TENSOR_FLOAT32", "FLOAT32", 1.5),
                                        ("TENSOR_FLOAT16", "FLOAT16", -2.0),
                                        ("TENSOR_INT32", "INT32", 7)])
def test_fill(t, st, value):
    m = one_op_model("FILL", [tensor(TI, [3], [2, 1, 3]), scalar(st, value)],
                     [tensor(t, [2, 1, 3])])
    (y,) = run(m, [])
    assert y.shape == (2, 1, 3)
    np.testing.assert_array_equal(y, np.full((2, 1, 3), value))


def test_fill_dynamic_shape_input():
    m = one_op_model("FILL", [tensor(TI, [2]), scalar("INT32", 4)], [tensor(TI, [0, 0])])
    status, shapes, (y,) = execute(m, [np.array([1, 3], np.int32)])
    assert status == ErrorStatus.NONE
    np.testing.assert_array_equal(y, [[4, 4, 4]])


def test_fill_rejects_negative_dimension():
    m = one_op_model("FILL", [tensor(TI, [1], [-1]), scalar("INT32", 0)], [tensor(TI, [1])])
    assert ">= 0" in rejected(m)


def test_fill_rejects_value_type_mismatch():
    m = one_op_model("FILL", [tensor(TI, [1], [2]), scalar("INT32", 0)],
                     [tensor("TENSOR_FLOAT32", [2])])
    assert "match no signature" in rejected(m)


@pytest.mark.parametrize("t,dtype,shape", [("TENSOR_FLOAT32", np.float32, (2, 3, 1)),
                                           ("TENSOR_BOOL8", np.bool_, (4,)),
                                           ("TENSOR_QUANT16_SYMM", np.int16, (1, 1, 1, 1, 2))])
def test_rank(t, dtype, shape):
    q = dict(scale=0.5) if "QUANT" in t else {}
    m = one_op_model("RANK", [tensor(t, shape, **q)], [scalar("INT32", None)])
    (y,) = run(m, [np.zeros(shape, dtype)])
    assert int(y) == len(shape)


def test_rank_rejects_tensor_output():
    m = one_op_model("RANK", [tensor("TENSOR_FLOAT32", [2])], [tensor(TI, [1])])
    assert "match no signature" in rejected(m)
