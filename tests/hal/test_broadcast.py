import numpy as np
import pytest

from hal.errors import ErrorStatus
from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import OperandType, OperationType
from tests.kits.one_op_models import execute, one_op_model, rejected, run, scalar, tensor

F32, F16, I32 = "TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_INT32"
Q8, QS8 = "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"
FUSED = ("ADD", "SUB", "MUL", "DIV")


def binary(op, t, sa, sb, so, act=0, qa=(0.0, 0), qb=(0.0, 0), qo=(0.0, 0), tout=None):
    ins = [tensor(t, sa, scale=qa[0], zero_point=qa[1]),
           tensor(t, sb, scale=qb[0], zero_point=qb[1])]
    if op in FUSED:
        ins.append(scalar("INT32", act))
    return one_op_model(op, ins, [tensor(tout or t, so, scale=qo[0], zero_point=qo[1])])


NUMPY = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "DIV": np.divide,
         "MAXIMUM": np.maximum, "MINIMUM": np.minimum, "POW": np.power}


@pytest.mark.parametrize("op", list(NUMPY))
def test_float_broadcast_against_numpy(op):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.5, 2.0, (2, 1, 3)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (4, 1)).astype(np.float32)
    (y,) = run(binary(op, F32, [2, 1, 3], [4, 1], [2, 4, 3]), [a, b])
    assert y.shape == (2, 4, 3)
    np.testing.assert_allclose(y, NUMPY[op](a, b), rtol=1e-6)


def test_float_unknown_output_shape_is_deduced():
    a = np.ones((3, 1), np.float32)
    b = np.arange(4, dtype=np.float32)
    status, shapes, (y,) = execute(binary("ADD", F32, [3, 1], [4], [0, 0]), [a, b])
    assert status == ErrorStatus.NONE
    assert list(shapes[0].dimensions) == [3, 4]
    np.testing.assert_array_equal(y, a + b)


@pytest.mark.parametrize("act,lo,hi", [(1, 0, np.inf), (2, -1, 1), (3, 0, 6)])
def test_fused_activation_float(act, lo, hi):
    a = np.array([-8, -0.5, 0.25, 3, 9], np.float32)
    b = np.full(5, 0.5, np.float32)
    (y,) = run(binary("MUL", F32, [5], [5], [5], act=act), [a, b])
    np.testing.assert_array_equal(y, np.clip(a * b, lo, hi))


def test_float16_computes_in_float32_and_rounds():
    a = np.array([1000.0, 0.1, -2.5], np.float16)
    b = np.array([0.3, 0.2, 1.5], np.float16)
    (y,) = run(binary("SUB", F16, [3], [3], [3]), [a, b])
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, (a.astype(np.float32) - b.astype(np.float32))
                                  .astype(np.float16))


def test_div_int32_is_floor_division_and_survives_zero():
    a = np.array([5, -5, 7, -7, 3, -2147483648], np.int32)
    b = np.array([2, 2, -2, -2, 0, -1], np.int32)
    (y,) = run(binary("DIV", I32, [6], [6], [6]), [a, b])
    np.testing.assert_array_equal(y[:4], [2, -3, -4, 3])
    assert y[4] == 0  # division by zero yields 0, not a crash
    assert y[5] == -2147483648  # wraps like int32 arithmetic


@pytest.mark.parametrize("op,a,b,expect", [
    ("ADD", [2147483647, 1], [1, 2], [-2147483648, 3]),
    ("SUB", [-1, 1], [-2147483648, 2], [2147483647, -1]),
    ("MUL", [2147483647, 1], [2, 2], [-2, 2]),
])
def test_int32_wraps_around(op, a, b, expect):
    (y,) = run(binary(op, I32, [2], [2], [2]), [np.array(a, np.int32), np.array(b, np.int32)])
    np.testing.assert_array_equal(y, expect)


def test_maximum_minimum_int32():
    a = np.array([[1, -7, 3]], np.int32)
    b = np.array([[0], [5]], np.int32)
    (mx,) = run(binary("MAXIMUM", I32, [1, 3], [2, 1], [2, 3]), [a, b])
    (mn,) = run(binary("MINIMUM", I32, [1, 3], [2, 1], [2, 3]), [a, b])
    np.testing.assert_array_equal(mx, np.maximum(a, b))
    np.testing.assert_array_equal(mn, np.minimum(a, b))


def _real(q, scale, zp):
    return (q.astype(np.float64) - zp) * scale


@pytest.mark.parametrize("t,dt,lo,hi", [(Q8, np.uint8, 0, 255), (QS8, np.int8, -128, 127)])
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"])
def test_quantized_within_one_of_real_result(op, t, dt, lo, hi):
    shift = 0 if t == Q8 else -128
    qa, qb, qo = (0.05, 120 + shift), (0.02, 130 + shift), (0.1, 128 + shift)
    if op == "MUL":
        qo = (0.25, 128 + shift)
    rng = np.random.default_rng(7)
    a = rng.integers(lo, hi + 1, (3, 4)).astype(dt)
    b = rng.integers(lo, hi + 1, (1, 4)).astype(dt)
    (y,) = run(binary(op, t, [3, 4], [1, 4], [3, 4], qa=qa, qb=qb, qo=qo), [a, b])
    real = NUMPY[op](_real(a, *qa), _real(b, *qb))
    want = np.clip(np.round(real / qo[0]) + qo[1], lo, hi)
    assert y.dtype == dt
    assert np.abs(y.astype(int) - want).max() <= 1


def test_quant8_add_saturates_and_applies_relu():
    q = dict(scale=1.0, zero_point=0)
    m = one_op_model("ADD", [tensor(Q8, [3], **q), tensor(Q8, [3], **q), scalar("INT32", 0)],
                     [tensor(Q8, [3], **q)])
    (y,) = run(m, [np.array([200, 100, 0], np.uint8), np.array([100, 27, 0], np.uint8)])
    np.testing.assert_array_equal(y, [255, 127, 0])
    qo = dict(scale=0.5, zero_point=100)
    m = one_op_model("SUB", [tensor(Q8, [3], **q), tensor(Q8, [3], **q), scalar("INT32", 1)],
                     [tensor(Q8, [3], **qo)])
    (y,) = run(m, [np.array([10, 20, 30], np.uint8), np.array([20, 20, 25], np.uint8)])
    np.testing.assert_array_equal(y, [100, 100, 110])  # RELU clamps at the zero point


def test_quant8_mul_with_multiplier_above_one():
    # output scale smaller than the product of input scales: multiplier 4 (left shift)
    q, qo = dict(scale=0.5, zero_point=0), dict(scale=0.0625, zero_point=0)
    m = one_op_model("MUL", [tensor(Q8, [2], **q), tensor(Q8, [2], **q), scalar("INT32", 0)],
                     [tensor(Q8, [2], **qo)])
    (y,) = run(m, [np.array([2, 5], np.uint8), np.array([3, 100], np.uint8)])
    np.testing.assert_array_equal(y, [24, 255])


def direct(op, infos, out):
    """Run an op (prepare, execute) on OperandInfos (zero-sized tensors only occur as
    intermediates, which a one-op model cannot feed)."""
    ctx = OperationContext(OperationType[op], infos, [out])
    return lookup(OperationType[op]).run(ctx)


@pytest.mark.parametrize("op", ["ADD", "MUL", "MAXIMUM"])
def test_zero_sized_broadcast(op):
    a = OperandInfo(OperandType.TENSOR_FLOAT32, (0, 3), value=np.zeros((0, 3), np.float32))
    b = OperandInfo(OperandType.TENSOR_FLOAT32, (1, 3), value=np.ones((1, 3), np.float32))
    act = [OperandInfo(OperandType.INT32, (), value=np.array(0, np.int32))]
    (y,) = direct(op, [a, b] + (act if op in FUSED else []),
                  OperandInfo(OperandType.TENSOR_FLOAT32, (0, 0)))
    assert y.shape == (0, 3) and y.dtype == np.float32


def test_zero_sized_quant_add():
    q = dict(scale=0.5, zero_point=3)
    a = OperandInfo(OperandType.TENSOR_QUANT8_ASYMM, (2, 0), value=np.zeros((2, 0), np.uint8),
                    **q)
    b = OperandInfo(OperandType.TENSOR_QUANT8_ASYMM, (1,), value=np.ones(1, np.uint8), **q)
    act = OperandInfo(OperandType.INT32, (), value=np.array(0, np.int32))
    (y,) = direct("ADD", [a, b, act], OperandInfo(OperandType.TENSOR_QUANT8_ASYMM, (0, 0), **q))
    assert y.shape == (2, 0) and y.dtype == np.uint8


def test_float_division_by_zero_gives_inf():
    (y,) = run(binary("DIV", F32, [2], [2], [2]),
               [np.array([1, -1], np.float32), np.zeros(2, np.float32)])
    np.testing.assert_array_equal(y, [np.inf, -np.inf])


# ------------------------------------------------------------------ validation


def test_rejects_mixed_types():
    m = one_op_model("ADD", [tensor(F32, [2]), tensor(I32, [2]), scalar("INT32", 0)],
                     [tensor(F32, [2])])
    assert "match no signature" in rejected(m)


def test_rejects_missing_activation():
    m = one_op_model("ADD", [tensor(F32, [2]), tensor(F32, [2])], [tensor(F32, [2])])
    assert "match no signature" in rejected(m)


def test_rejects_activation_on_maximum():
    m = one_op_model("MAXIMUM", [tensor(F32, [2]), tensor(F32, [2]), scalar("INT32", 0)],
                     [tensor(F32, [2])])
    assert "match no signature" in rejected(m)


@pytest.mark.parametrize("act", [-1, 4])
def test_rejects_bad_activation(act):
    assert "fused activation" in rejected(binary("ADD", F32, [2], [2], [2], act=act))


def test_rejects_activation_on_int32():
    assert "NONE" in rejected(binary("MUL", I32, [2], [2], [2], act=1))


def test_rejects_rank_5():
    assert "rank" in rejected(binary("SUB", F32, [1, 1, 1, 1, 2], [2], [1, 1, 1, 1, 2]))


def test_rejects_incompatible_shapes():
    assert "cannot be broadcast" in rejected(binary("DIV", F32, [2, 3], [4, 3], [2, 3]))


def test_unknown_dims_are_not_rejected():
    m = binary("POW", F32, [0, 3], [4, 1], [0, 0])
    (y,) = run(m, [np.ones((4, 3), np.float32), np.full((4, 1), 2, np.float32)])
    assert y.shape == (4, 3)


def test_rejects_float16_div_with_wrong_output():
    assert "match no signature" in rejected(binary("DIV", F16, [2], [2], [2], tout=F32))


def test_rejects_quantized_div():
    q = (0.5, 0)
    assert "match no signature" in rejected(binary("DIV", Q8, [2], [2], [2], qa=q, qb=q, qo=q))
