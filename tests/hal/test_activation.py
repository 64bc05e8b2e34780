import numpy as np
import pytest

from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor


@pytest.mark.parametrize("op,lo,hi", [("RELU", 0, np.inf), ("RELU1", -1, 1), ("RELU6", 0, 6)])
def test_float(op, lo, hi):
    x = np.array([-3.0, -0.5, 0.0, 0.5, 2.0, 7.0], dtype=np.float32)
    m = one_op_model(op, [tensor("TENSOR_FLOAT32", [6])], [tensor("TENSOR_FLOAT32", [6])])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, np.clip(x, lo, hi))


def test_quant8_clamps_at_zero_point():
    x = np.array([0, 100, 128, 200, 255], dtype=np.uint8)
    q = dict(scale=0.5, zero_point=128)
    m = one_op_model("RELU6", [tensor("TENSOR_QUANT8_ASYMM", [5], **q)],
                     [tensor("TENSOR_QUANT8_ASYMM", [5], **q)])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, [128, 128, 128, 140, 140])


def test_rejects_wrong_output_type():
    m = one_op_model("RELU", [tensor("TENSOR_FLOAT32", [2])], [tensor("TENSOR_INT32", [2])])
    assert "match no signature" in rejected(m)


def test_rejects_quant_mismatch():
    m = one_op_model("RELU", [tensor("TENSOR_QUANT8_ASYMM", [2], scale=0.5, zero_point=1)],
                     [tensor("TENSOR_QUANT8_ASYMM", [2], scale=0.25, zero_point=1)])
    assert "same scale" in rejected(m)


# ------------------------------------------------------------------ LOGISTIC, TANH

F32, F16 = "TENSOR_FLOAT32", "TENSOR_FLOAT16"
Q8, QS8 = "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"
QUANT_TYPES = [(Q8, np.uint8, 0, 255), (QS8, np.int8, -128, 127)]


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_rejects_relu_rank_5():
    m = one_op_model("RELU", [tensor(F32, [1, 1, 1, 1, 2])], [tensor(F32, [1, 1, 1, 1, 2])])
    assert "rank" in rejected(m)


@pytest.mark.parametrize("op,fn", [("LOGISTIC", _sigmoid), ("TANH", np.tanh)])
@pytest.mark.parametrize("t,dt,rtol", [(F32, np.float32, 1e-6), (F16, np.float16, 2e-3)])
def test_logistic_tanh_float(op, fn, t, dt, rtol):
    x = np.array([-100.0, -3.0, -0.5, 0.0, 0.5, 3.0, 100.0], dtype=dt)
    (y,) = run(one_op_model(op, [tensor(t, [7])], [tensor(t, [7])]), [x])
    assert y.dtype == dt
    np.testing.assert_allclose(y.astype(np.float64), fn(x.astype(np.float64)), rtol=rtol,
                               atol=1e-7)


@pytest.mark.parametrize("op,fn,out_scale,out_zp", [("LOGISTIC", _sigmoid, 1 / 256, 0),
                                                    ("TANH", np.tanh, 1 / 128, 128)])
@pytest.mark.parametrize("t,dt,lo,hi", QUANT_TYPES)
@pytest.mark.parametrize("in_scale", [0.01, 0.1, 0.5])
def test_logistic_tanh_quantized(op, fn, out_scale, out_zp, t, dt, lo, hi, in_scale):
    shift = 0 if t == Q8 else -128
    in_zp, out_zp = 128 + shift, out_zp + shift
    x = np.arange(lo, hi + 1).astype(dt)
    m = one_op_model(op, [tensor(t, [x.size], scale=in_scale, zero_point=in_zp)],
                     [tensor(t, [x.size], scale=out_scale, zero_point=out_zp)])
    (y,) = run(m, [x])
    real = fn((x.astype(np.float64) - in_zp) * in_scale)
    want = np.clip(np.round(real / out_scale) + out_zp, lo, hi)
    assert np.abs(y.astype(int) - want).max() <= 1
    assert y.max() <= hi and y.min() >= lo


@pytest.mark.parametrize("op,t,scale,zp", [("LOGISTIC", Q8, 1 / 128, 0),
                                           ("LOGISTIC", QS8, 1 / 256, 0),
                                           ("TANH", Q8, 1 / 128, 0),
                                           ("TANH", QS8, 1 / 256, 0)])
def test_rejects_wrong_fixed_output_quant(op, t, scale, zp):
    m = one_op_model(op, [tensor(t, [2], scale=0.1, zero_point=0)],
                     [tensor(t, [2], scale=scale, zero_point=zp)])
    assert "output 0" in rejected(m)


def test_rejects_float16_tanh_with_float32_output():
    assert "match no signature" in rejected(one_op_model("TANH", [tensor(F16, [2])],
                                                         [tensor(F32, [2])]))


def test_logistic_zero_sized():
    from hal.operations import lookup
    from hal.operations.context import OperandInfo, OperationContext
    from hal.types import OperandType, OperationType
    x = OperandInfo(OperandType.TENSOR_QUANT8_ASYMM, (0, 4), scale=0.1, zero_point=3,
                    value=np.zeros((0, 4), np.uint8))
    out = OperandInfo(OperandType.TENSOR_QUANT8_ASYMM, (0, 0), scale=1 / 256)
    (y,) = lookup(OperationType.LOGISTIC).execute(
        OperationContext(OperationType.LOGISTIC, [x], [out]))
    assert y.shape == (0, 4) and y.dtype == np.uint8


# ------------------------------------------------------------------ ELU

def _elu(x, alpha):
    return np.maximum(0, x) + np.minimum(0, alpha * (np.exp(x) - 1))


@pytest.mark.parametrize("t,st,dt", [(F32, "FLOAT32", np.float32), (F16, "FLOAT16", np.float16)])
def test_elu(t, st, dt):
    x = np.array([-5.0, -1.0, -0.25, 0.0, 0.5, 4.0], dtype=dt)
    m = one_op_model("ELU", [tensor(t, [6]), scalar(st, 0.7)], [tensor(t, [6])])
    (y,) = run(m, [x])
    assert y.dtype == dt
    np.testing.assert_allclose(y.astype(np.float64), _elu(x.astype(np.float64), 0.7),
                               rtol=2e-3 if dt == np.float16 else 1e-6, atol=1e-6)


def test_elu_alpha_zero_with_overflowing_exp_is_relu():
    x = np.array([-3.0, 200.0], np.float32)
    m = one_op_model("ELU", [tensor(F32, [2]), scalar("FLOAT32", 0.0)], [tensor(F32, [2])])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, [0.0, 200.0])


def test_elu_rejects_alpha_type_mismatch():
    m = one_op_model("ELU", [tensor(F16, [2]), scalar("FLOAT32", 1.0)], [tensor(F16, [2])])
    assert "match no signature" in rejected(m)


def test_elu_rejects_missing_alpha():
    assert "match no signature" in rejected(one_op_model("ELU", [tensor(F32, [2])],
                                                         [tensor(F32, [2])]))


def test_elu_rejects_nan_alpha():
    m = one_op_model("ELU", [tensor(F32, [2]), scalar("FLOAT32", float("nan"))],
                     [tensor(F32, [2])])
    assert "alpha" in rejected(m)


# ------------------------------------------------------------------ HARD_SWISH

def _hard_swish(x):
    return x * np.clip(x + 3, 0, 6) / 6


@pytest.mark.parametrize("t,dt", [(F32, np.float32), (F16, np.float16)])
def test_hard_swish_float(t, dt):
    x = np.array([-5.0, -3.0, -1.5, 0.0, 1.0, 3.0, 6.0], dtype=dt)
    (y,) = run(one_op_model("HARD_SWISH", [tensor(t, [7])], [tensor(t, [7])]), [x])
    np.testing.assert_allclose(y.astype(np.float64), _hard_swish(x.astype(np.float64)),
                               rtol=2e-3, atol=1e-6)


@pytest.mark.parametrize("t,dt,lo,hi", QUANT_TYPES)
@pytest.mark.parametrize("qi,qo", [((0.1, 128), (0.05, 100)), ((0.03, 120), (0.02, 130)),
                                   ((0.5, 10), (0.1, 0)), ((2.0, 128), (1.0, 128)),
                                   ((0.0625, 100), (0.0078125, 120))])
def test_hard_swish_quantized_within_one_of_real(t, dt, lo, hi, qi, qo):
    shift = 0 if t == Q8 else -128
    qi, qo = (qi[0], qi[1] + shift), (qo[0], qo[1] + shift)
    x = np.arange(lo, hi + 1).astype(dt)
    m = one_op_model("HARD_SWISH", [tensor(t, [x.size], scale=qi[0], zero_point=qi[1])],
                     [tensor(t, [x.size], scale=qo[0], zero_point=qo[1])])
    (y,) = run(m, [x])
    real = _hard_swish((x.astype(np.float64) - qi[1]) * qi[0])
    want = np.clip(np.round(real / qo[0]) + qo[1], lo, hi)
    assert np.abs(y.astype(int) - want).max() <= 1


def test_hard_swish_quantized_extreme_scales_do_not_crash():
    x = np.arange(256).astype(np.uint8)
    for qi, qo in [((10.0, 128), (0.001, 0)), ((0.0001, 128), (50.0, 7))]:
        m = one_op_model("HARD_SWISH", [tensor(Q8, [256], scale=qi[0], zero_point=qi[1])],
                         [tensor(Q8, [256], scale=qo[0], zero_point=qo[1])])
        (y,) = run(m, [x])
        assert y.dtype == np.uint8 and y.shape == (256,)


def test_hard_swish_rejects_int32():
    m = one_op_model("HARD_SWISH", [tensor("TENSOR_INT32", [2])], [tensor("TENSOR_INT32", [2])])
    assert "match no signature" in rejected(m)


# ------------------------------------------------------------------ PRELU

@pytest.mark.parametrize("t,dt", [(F32, np.float32), (F16, np.float16)])
def test_prelu_float_broadcast(t, dt):
    x = np.array([[[-2.0], [1.0]], [[3.0], [-4.0]]], dtype=dt)  # [2, 2, 1]
    alpha = np.array([0.5, -1.0, 0.25], dtype=dt)  # [3]
    m = one_op_model("PRELU", [tensor(t, [2, 2, 1]), tensor(t, [3], alpha)],
                     [tensor(t, [2, 2, 3])])
    (y,) = run(m, [x])
    xb = np.broadcast_to(x, (2, 2, 3)).astype(np.float32)
    np.testing.assert_array_equal(y, np.where(xb >= 0, xb, xb * alpha.astype(np.float32)))


@pytest.mark.parametrize("t,dt,lo,hi", QUANT_TYPES)
def test_prelu_quantized_within_one_of_real(t, dt, lo, hi):
    shift = 0 if t == Q8 else -128
    qx, qa, qo = (0.1, 128 + shift), (0.01, 50 + shift), (0.2, 120 + shift)
    x = np.arange(lo, hi + 1).astype(dt).reshape(-1, 1)
    alpha = np.array([lo, 50 + shift, hi], dt)
    m = one_op_model("PRELU", [tensor(t, [x.shape[0], 1], scale=qx[0], zero_point=qx[1]),
                               tensor(t, [3], alpha, scale=qa[0], zero_point=qa[1])],
                     [tensor(t, [x.shape[0], 3], scale=qo[0], zero_point=qo[1])])
    (y,) = run(m, [x])
    rx = (x.astype(np.float64) - qx[1]) * qx[0]
    ra = (alpha.astype(np.float64) - qa[1]) * qa[0]
    want = np.clip(np.round(np.where(rx >= 0, rx, rx * ra) / qo[0]) + qo[1], lo, hi)
    assert y.shape == want.shape
    assert np.abs(y.astype(int) - want).max() <= 1


def test_prelu_rejects_incompatible_alpha():
    m = one_op_model("PRELU", [tensor(F32, [2, 3]), tensor(F32, [2], [1, 1])],
                     [tensor(F32, [2, 3])])
    assert "cannot be broadcast" in rejected(m)


def test_prelu_rejects_alpha_type_mismatch():
    m = one_op_model("PRELU", [tensor(F32, [2]), tensor(F16, [2])], [tensor(F32, [2])])
    assert "match no signature" in rejected(m)
