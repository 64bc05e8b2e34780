import numpy as np
import pytest

from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import OperandType, OperationType
from tests.kits.one_op_models import one_op_model, rejected, run, tensor

B8, F32, F16, I32 = "TENSOR_BOOL8", "TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_INT32"
Q8, QS8 = "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"

COMPARE = {"EQUAL": np.equal, "NOT_EQUAL": np.not_equal, "GREATER": np.greater,
           "GREATER_EQUAL": np.greater_equal, "LESS": np.less, "LESS_EQUAL": np.less_equal}


def compare_model(op, t, sa, sb, so, qa=(0.0, 0), qb=(0.0, 0), tout=B8):
    return one_op_model(op, [tensor(t, sa, scale=qa[0], zero_point=qa[1]),
                             tensor(t, sb, scale=qb[0], zero_point=qb[1])],
                        [tensor(tout, so)])


@pytest.mark.parametrize("op", list(COMPARE))
@pytest.mark.parametrize("t,dt", [(F32, np.float32), (F16, np.float16), (I32, np.int32),
                                  (B8, np.bool_)])
def test_compare_broadcast(op, t, dt):
    a = np.array([[0, 1, 2], [2, 1, 0]]).astype(dt)
    b = np.array([1, 1, 0]).astype(dt)
    (y,) = run(compare_model(op, t, [2, 3], [3], [2, 3]), [a, b])
    assert y.dtype == np.bool_
    np.testing.assert_array_equal(y, COMPARE[op](a, b))


@pytest.mark.parametrize("op", list(COMPARE))
@pytest.mark.parametrize("t,dt,shift", [(Q8, np.uint8, 0), (QS8, np.int8, -128)])
def test_quantized_compares_real_values(op, t, dt, shift):
    # a: scale 1, zp 128 -> reals -1, 0, 1, 2 ; b: scale 0.5, zp 130 -> reals 0 (all)
    qa, qb = (1.0, 128 + shift), (0.5, 130 + shift)
    a = (np.array([127, 128, 129, 130]) + shift).astype(dt)
    b = np.array([130 + shift], dt)
    (y,) = run(compare_model(op, t, [4], [1], [4], qa=qa, qb=qb), [a, b])
    np.testing.assert_array_equal(y, COMPARE[op](np.array([-1.0, 0, 1, 2]), 0.0))


def test_quantized_equal_across_scales_is_by_value_not_by_code():
    qa, qb = (0.5, 0), (0.25, 0)
    a = np.array([4, 4], np.uint8)  # 2.0, 2.0
    b = np.array([8, 4], np.uint8)  # 2.0, 1.0
    (y,) = run(compare_model("EQUAL", Q8, [2], [2], [2], qa=qa, qb=qb), [a, b])
    np.testing.assert_array_equal(y, [True, False])


def test_nan_compares_false_except_not_equal():
    a = np.array([np.nan, 1.0], np.float32)
    b = np.array([np.nan, np.nan], np.float32)
    for op, fn in COMPARE.items():
        (y,) = run(compare_model(op, F32, [2], [2], [2]), [a, b])
        np.testing.assert_array_equal(y, fn(a, b))


@pytest.mark.parametrize("op,fn", [("LOGICAL_AND", np.logical_and),
                                   ("LOGICAL_OR", np.logical_or)])
def test_logical_binary_broadcast(op, fn):
    a = np.array([[True, False], [True, True], [False, False]])
    b = np.array([[True], [False], [True]])
    m = one_op_model(op, [tensor(B8, [3, 2]), tensor(B8, [3, 1])], [tensor(B8, [3, 2])])
    (y,) = run(m, [a, b])
    np.testing.assert_array_equal(y, fn(a, b))


def test_logical_not():
    a = np.array([True, False, True])
    (y,) = run(one_op_model("LOGICAL_NOT", [tensor(B8, [3])], [tensor(B8, [3])]), [a])
    np.testing.assert_array_equal(y, [False, True, False])


def test_zero_sized():
    a = OperandInfo(OperandType.TENSOR_FLOAT32, (2, 0), value=np.zeros((2, 0), np.float32))
    b = OperandInfo(OperandType.TENSOR_FLOAT32, (1,), value=np.ones(1, np.float32))
    ctx = OperationContext(OperationType.LESS, [a, b],
                           [OperandInfo(OperandType.TENSOR_BOOL8, (0, 0))])
    (y,) = lookup(OperationType.LESS).run(ctx)
    assert y.shape == (2, 0) and y.dtype == np.bool_


# ------------------------------------------------------------------ validation


def test_rejects_non_bool_output():
    assert "match no signature" in rejected(compare_model("LESS", F32, [2], [2], [2],
                                                          tout=F32))


def test_rejects_mixed_input_types():
    m = one_op_model("EQUAL", [tensor(F32, [2]), tensor(F16, [2])], [tensor(B8, [2])])
    assert "match no signature" in rejected(m)


def test_rejects_logical_on_floats():
    m = one_op_model("LOGICAL_AND", [tensor(F32, [2]), tensor(F32, [2])], [tensor(B8, [2])])
    assert "match no signature" in rejected(m)


def test_rejects_wrong_input_count():
    m = one_op_model("LOGICAL_NOT", [tensor(B8, [2]), tensor(B8, [2])], [tensor(B8, [2])])
    assert "match no signature" in rejected(m)


@pytest.mark.parametrize("op", ["GREATER", "LOGICAL_OR"])
def test_rejects_incompatible_shapes(op):
    t = B8 if op == "LOGICAL_OR" else I32
    m = one_op_model(op, [tensor(t, [2, 3]), tensor(t, [2])], [tensor(B8, [2, 3])])
    assert "cannot be broadcast" in rejected(m)
