import numpy as np
import pytest

from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import OperandType, OperationType
from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

F32, F16, Q8, QS8 = ("TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM",
                     "TENSOR_QUANT8_ASYMM_SIGNED")


def model(op, t, shape, beta, axis=None, q=(0.0, 0), qo=(0.0, 0)):
    ins = [tensor(t, shape, scale=q[0], zero_point=q[1]),
           scalar("FLOAT16" if t == F16 else "FLOAT32", beta)]
    if axis is not None:
        ins.append(scalar("INT32", axis))
    return one_op_model(op, ins, [tensor(t, shape, scale=qo[0], zero_point=qo[1])])


def np_softmax(x, beta, axis):
    z = (x - x.max(axis=axis, keepdims=True)) * beta
    return np.exp(z) / np.exp(z).sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [None, 0, 1, -2, 2])
def test_float_softmax_axes(axis):
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    (y,) = run(model("SOFTMAX", F32, [2, 3, 4], 1.7, axis), [x])
    ref = np_softmax(x.astype(np.float64), 1.7, -1 if axis is None else axis)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-7)


def test_float16_softmax_and_large_values_do_not_overflow():
    x = np.array([[60000.0, 0.0, -60000.0]], np.float16)
    (y,) = run(model("SOFTMAX", F16, [1, 3], 1.0), [x])
    np.testing.assert_array_equal(y, [[1, 0, 0]])


def test_log_softmax():
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], np.float32)
    (y,) = run(model("LOG_SOFTMAX", F32, [2, 3], 2.0, 1), [x])
    ref = np.log(np_softmax(x.astype(np.float64), 2.0, 1))
    np.testing.assert_allclose(y, ref, rtol=1e-5)


@pytest.mark.parametrize("t,zp", [(Q8, 0), (QS8, -128)])
@pytest.mark.parametrize("beta,scale", [(1.0, 0.5), (0.7, 0.05), (4.0, 0.1), (1e-3, 1.0)])
def test_quant_matches_rounded_real_softmax(t, zp, beta, scale):
    rng = np.random.default_rng(7)
    dtype = np.uint8 if t == Q8 else np.int8
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    x = rng.integers(lo, hi + 1, (8, 16)).astype(dtype)
    (y,) = run(model("SOFTMAX", t, [8, 16], beta, q=(scale, 3), qo=(1 / 256, zp)), [x])
    p = np_softmax(x.astype(np.float64) * scale, beta, 1)
    ref = np.clip(np.round(p * 256) + zp, lo, hi)
    assert np.abs(y.astype(np.int64) - ref).max() <= 1


def test_quant_single_element_saturates_to_max():
    (y,) = run(model("SOFTMAX", Q8, [1, 1], 1.0, q=(0.1, 0), qo=(1 / 256, 0)),
               [np.array([[77]], np.uint8)])
    np.testing.assert_array_equal(y, [[255]])


def test_zero_sized_input():
    x = np.zeros((0, 5), np.float32)
    ins = [OperandInfo(OperandType.TENSOR_FLOAT32, x.shape, value=x),
           OperandInfo(OperandType.FLOAT32, (), value=np.array(1.0, np.float32))]
    ctx = OperationContext(OperationType.SOFTMAX, ins,
                           [OperandInfo(OperandType.TENSOR_FLOAT32, ())])
    (y,) = lookup(OperationType.SOFTMAX).execute(ctx)
    assert y.shape == (0, 5) and y.dtype == np.float32


def test_rejects_bad_beta_axis_and_output_quant():
    assert "beta" in rejected(model("SOFTMAX", F32, [2, 3], 0.0))
    assert "beta" in rejected(model("LOG_SOFTMAX", F32, [2, 3], -1.0, 0))
    assert "axis" in rejected(model("SOFTMAX", F32, [2, 3], 1.0, 2))
    assert "axis" in rejected(model("LOG_SOFTMAX", F32, [2, 3], 1.0, -3))
    assert "1/256" in rejected(model("SOFTMAX", Q8, [2, 3], 1.0, q=(0.5, 0), qo=(1 / 128, 0)))
    assert "1/256" in rejected(model("SOFTMAX", QS8, [2, 3], 1.0, q=(0.5, 0), qo=(1 / 256, 0)))


def test_rejects_wrong_types_and_rank():
    m = one_op_model("SOFTMAX", [tensor(F16, [2, 3]), scalar("FLOAT32", 1.0)],
                     [tensor(F16, [2, 3])])
    assert "match no signature" in rejected(m)
    m = one_op_model("LOG_SOFTMAX", [tensor(F32, [2, 3]), scalar("FLOAT32", 1.0)],
                     [tensor(F32, [2, 3])])
    assert "match no signature" in rejected(m)  # LOG_SOFTMAX needs the axis
    assert "rank" in rejected(model("SOFTMAX", F32, [1, 1, 1, 1, 2], 1.0))
