"""FULLY_CONNECTED: flattening, float16, quantized pipelines, zero batch, saturation and
validation mutations."""

import numpy as np
import pytest

from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import OperandType, OperationType
from tests.kits.conv_reference import requant_ref
from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

RNG = np.random.default_rng(2)


def fc_model(t, in_dims, w, b, act, out_dims, q=None):
    """q = (x_scale, x_zp, w_scale, w_zp, out_scale, out_zp) for quantized types."""
    if q is None:
        return one_op_model("FULLY_CONNECTED", [
            tensor(t, in_dims), tensor(t, w.shape, w), tensor(t, b.shape, b),
            scalar("INT32", act)], [tensor(t, out_dims)])
    xs, xz, ws, wz, os_, oz = q
    return one_op_model("FULLY_CONNECTED", [
        tensor(t, in_dims, None, xs, xz), tensor(t, w.shape, w, ws, wz),
        tensor("TENSOR_INT32", b.shape, b, xs * ws), scalar("INT32", act)],
        [tensor(t, out_dims, None, os_, oz)])


@pytest.mark.parametrize("in_dims", [[3, 6], [3, 2, 3], [1, 3, 3, 2], [2, 9]])
def test_float_flattens_input(in_dims):
    x = RNG.standard_normal(in_dims).astype(np.float32)
    w = RNG.standard_normal((4, 6 if in_dims != [2, 9] else 9)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    (y,) = run(fc_model("TENSOR_FLOAT32", in_dims, w, b, 0, [0, 0]), [x])
    xf = x.reshape(-1, w.shape[1])
    assert y.shape == (xf.shape[0], 4)
    np.testing.assert_allclose(y, xf @ w.T + b, rtol=1e-5, atol=1e-5)


def test_float16_and_relu1():
    x = RNG.standard_normal((2, 5)).astype(np.float16)
    w = RNG.standard_normal((3, 5)).astype(np.float16)
    b = RNG.standard_normal(3).astype(np.float16)
    (y,) = run(fc_model("TENSOR_FLOAT16", [2, 5], w, b, 2, [2, 3]), [x])
    want = np.clip(x.astype(np.float64) @ w.astype(np.float64).T + b, -1, 1)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float64), want, atol=5 * 2**-10, rtol=5 * 2**-10)


@pytest.mark.parametrize("t,lo,hi,dt", [("TENSOR_QUANT8_ASYMM", 0, 255, np.uint8),
                                        ("TENSOR_QUANT8_ASYMM_SIGNED", -128, 127, np.int8)])
def test_quantized_pipeline(t, lo, hi, dt):
    x = RNG.integers(lo, hi + 1, (4, 10)).astype(dt)
    w = RNG.integers(lo, hi + 1, (5, 10)).astype(dt)
    b = RNG.integers(-1000, 1000, 5).astype(np.int32)
    q = (0.5, lo + 100, 0.125, lo + 120, 3.0, lo + 60)
    (y,) = run(fc_model(t, [4, 10], w, b, 0, [4, 5], q), [x])
    acc = (x.astype(np.float64) - q[1]) @ (w.astype(np.float64) - q[3]).T + b
    want = np.clip(requant_ref(acc, 0.5 * 0.125 / 3.0) + q[5], lo, hi)
    assert np.abs(y.astype(np.int64) - want).max() <= 1


def test_quantized_saturates_and_multiplier_above_one():
    x = np.full((1, 4), 255, np.uint8)
    w = np.full((2, 4), 255, np.uint8)
    q = (1.0, 0, 1.0, 0, 0.5, 0)  # real multiplier 2 (allowed since 1.2)
    (y,) = run(fc_model("TENSOR_QUANT8_ASYMM", [1, 4], w, np.zeros(2, np.int32), 0, [1, 2], q),
               [x])
    np.testing.assert_array_equal(y, 255)
    x = np.array([[1, 0, 0, 0]], np.uint8)
    (y,) = run(fc_model("TENSOR_QUANT8_ASYMM", [1, 4], w, np.array([0, -255], np.int32), 0,
                        [1, 2], q), [x])
    np.testing.assert_array_equal(y, [[255, 0]])


def test_zero_batch():
    w = np.ones((3, 4), np.float32)
    infos = [OperandInfo(OperandType.TENSOR_FLOAT32, (0, 4), value=np.zeros((0, 4), np.float32)),
             OperandInfo(OperandType.TENSOR_FLOAT32, w.shape, value=w),
             OperandInfo(OperandType.TENSOR_FLOAT32, (3,), value=np.zeros(3, np.float32)),
             OperandInfo(OperandType.INT32, (), value=np.array(0, np.int32))]
    ctx = OperationContext(OperationType.FULLY_CONNECTED, infos,
                           [OperandInfo(OperandType.TENSOR_FLOAT32, (0, 0))])
    (y,) = lookup(OperationType.FULLY_CONNECTED).execute(ctx)
    assert y.shape == (0, 3)


def _valid():
    w = np.ones((3, 4), np.float32)
    return [tensor("TENSOR_FLOAT32", [2, 4]), tensor("TENSOR_FLOAT32", w.shape, w),
            tensor("TENSOR_FLOAT32", [3], np.zeros(3)), scalar("INT32", 0)]


def test_valid_runs():
    m = one_op_model("FULLY_CONNECTED", _valid(), [tensor("TENSOR_FLOAT32", [2, 3])])
    np.testing.assert_allclose(run(m, [np.ones((2, 4), np.float32)])[0], 4.0)


@pytest.mark.parametrize("index,spec,needle", [
    (3, scalar("INT32", 4), "fused activation"),
    (0, tensor("TENSOR_FLOAT32", [4]), "rank 2 to 4"),
    (0, tensor("TENSOR_FLOAT32", [1, 2, 3, 4, 1]), "rank 2 to 4"),
    (0, tensor("TENSOR_FLOAT32", [3, 3]), "multiple of input_size"),
    (1, tensor("TENSOR_FLOAT32", [3, 4, 1], np.ones((3, 4, 1))), "rank 2"),
    (2, tensor("TENSOR_FLOAT32", [2], np.zeros(2)), "bias"),
    (2, tensor("TENSOR_INT32", [3], np.zeros(3)), "match no signature"),
])
def test_rejects(index, spec, needle):
    ins = _valid()
    ins[index] = spec
    assert needle in rejected(one_op_model("FULLY_CONNECTED", ins,
                                           [tensor("TENSOR_FLOAT32", [2, 3])]))


def test_rejects_missing_activation_and_quant_bias_scale():
    m = one_op_model("FULLY_CONNECTED", _valid()[:3], [tensor("TENSOR_FLOAT32", [2, 3])])
    assert "match no signature" in rejected(m)
    w = np.ones((3, 4), np.uint8)
    m = one_op_model("FULLY_CONNECTED", [
        tensor("TENSOR_QUANT8_ASYMM", [2, 4], None, 0.5, 0),
        tensor("TENSOR_QUANT8_ASYMM", w.shape, w, 0.5, 0),
        tensor("TENSOR_INT32", [3], np.zeros(3), 0.5), scalar("INT32", 0)],
        [tensor("TENSOR_QUANT8_ASYMM", [2, 3], None, 1.0, 0)])
    assert "bias" in rejected(m)
