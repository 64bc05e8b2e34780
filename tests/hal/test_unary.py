import numpy as np
import pytest

from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import OperandType, OperationType
from tests.kits.one_op_models import one_op_model, rejected, run, tensor

F32, F16, I32 = "TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_INT32"

FN = {"ABS": np.abs, "EXP": np.exp, "LOG": np.log, "NEG": np.negative,
      "RSQRT": lambda x: 1 / np.sqrt(x), "SIN": np.sin, "SQRT": np.sqrt, "FLOOR": np.floor}


def unary(op, t, shape, tout=None):
    return one_op_model(op, [tensor(t, shape)], [tensor(tout or t, shape)])


@pytest.mark.parametrize("op", list(FN))
@pytest.mark.parametrize("t,dt,rtol", [(F32, np.float32, 1e-6), (F16, np.float16, 1e-3)])
def test_float(op, t, dt, rtol):
    x = np.array([[0.25, 1.5, 3.75], [0.5, 2.0, 7.25]], dtype=dt)
    (y,) = run(unary(op, t, [2, 3]), [x])
    assert y.dtype == dt and y.shape == (2, 3)
    np.testing.assert_allclose(y.astype(np.float64), FN[op](x.astype(np.float64)), rtol=rtol)


def test_floor_negative_and_half():
    x = np.array([-2.5, -0.5, -0.0, 0.5, 2.5], np.float32)
    (y,) = run(unary("FLOOR", F32, [5]), [x])
    np.testing.assert_array_equal(y, [-3, -1, 0, 0, 2])


def test_out_of_domain_gives_nan_and_inf_not_an_error():
    x = np.array([-1.0, 0.0], np.float32)
    (lg,) = run(unary("LOG", F32, [2]), [x])
    (rs,) = run(unary("RSQRT", F32, [2]), [x])
    (sq,) = run(unary("SQRT", F32, [2]), [x])
    assert np.isnan(lg[0]) and lg[1] == -np.inf
    assert np.isnan(rs[0]) and rs[1] == np.inf
    assert np.isnan(sq[0]) and sq[1] == 0


def test_exp_overflows_to_inf_in_float16():
    (y,) = run(unary("EXP", F16, [2]), [np.array([12.0, 0.0], np.float16)])
    assert y[0] == np.inf and y[1] == 1


@pytest.mark.parametrize("op,expect", [("ABS", [5, 0, 7, -2147483648]),
                                       ("NEG", [5, 0, -7, -2147483648])])
def test_int32_wraps_at_min(op, expect):
    x = np.array([-5, 0, 7, -2147483648], np.int32)
    (y,) = run(unary(op, I32, [4]), [x])
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, expect)


@pytest.mark.parametrize("op", ["EXP", "NEG", "FLOOR"])
def test_zero_sized(op):
    x = OperandInfo(OperandType.TENSOR_FLOAT32, (0, 2), value=np.zeros((0, 2), np.float32))
    ctx = OperationContext(OperationType[op], [x], [OperandInfo(OperandType.TENSOR_FLOAT32,
                                                                (0, 0))])
    (y,) = lookup(OperationType[op]).execute(ctx)
    assert y.shape == (0, 2)


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize("op", ["EXP", "LOG", "RSQRT", "SIN", "SQRT", "FLOOR"])
def test_rejects_int32(op):
    assert "match no signature" in rejected(unary(op, I32, [2]))


def test_rejects_output_type_change():
    assert "match no signature" in rejected(unary("ABS", F32, [2], tout=F16))


def test_rejects_two_inputs():
    m = one_op_model("SIN", [tensor(F32, [2]), tensor(F32, [2])], [tensor(F32, [2])])
    assert "match no signature" in rejected(m)


def test_rejects_floor_rank_5():
    assert "rank" in rejected(unary("FLOOR", F32, [1, 1, 1, 1, 2]))


def test_rejects_quantized_abs():
    m = one_op_model("ABS", [tensor("TENSOR_QUANT8_ASYMM", [2], scale=0.5)],
                     [tensor("TENSOR_QUANT8_ASYMM", [2], scale=0.5)])
    assert "match no signature" in rejected(m)
