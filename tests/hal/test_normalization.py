import numpy as np
import pytest

from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import OperandType, OperationType
from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

F32, F16, Q8, QS8 = ("TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM",
                     "TENSOR_QUANT8_ASYMM_SIGNED")


def l2_model(t, shape, axis=None, q=(0.0, 0), qo=(0.0, 0)):
    ins = [tensor(t, shape, scale=q[0], zero_point=q[1])]
    if axis is not None:
        ins.append(scalar("INT32", axis))
    return one_op_model("L2_NORMALIZATION", ins,
                        [tensor(t, shape, scale=qo[0], zero_point=qo[1])])


@pytest.mark.parametrize("axis", [None, 0, 1, -2])
def test_l2_float_axes(axis):
    x = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    (y,) = run(l2_model(F32, [3, 4], axis), [x])
    a = -1 if axis is None else axis
    np.testing.assert_allclose(y, x / np.sqrt((x.astype(np.float64) ** 2).sum(a, keepdims=True)),
                               rtol=1e-5)


def test_l2_all_zeros_gives_zeros():
    (y,) = run(l2_model(F32, [2, 2]), [np.array([[0, 0], [3, 4]], np.float32)])
    np.testing.assert_allclose(y, [[0, 0], [0.6, 0.8]], rtol=1e-6)


@pytest.mark.parametrize("t,zp_out", [(Q8, 128), (QS8, 0)])
def test_l2_quant_within_one_of_real(t, zp_out):
    rng = np.random.default_rng(5)
    dtype = np.uint8 if t == Q8 else np.int8
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max + 1, (50, 6)).astype(dtype)
    x[0] = 10  # the zero point everywhere: logical zero
    (y,) = run(l2_model(t, [50, 6], q=(0.3, 10), qo=(1 / 128, zp_out)), [x])
    d = x.astype(np.float64) - 10
    n = np.sqrt((d * d).sum(1, keepdims=True))
    ref = np.clip(np.round(128 * d / np.maximum(n, 1e-6)) + zp_out, info.min, info.max)
    assert np.abs(y.astype(np.int64) - ref).max() <= 1
    np.testing.assert_array_equal(y[0], [zp_out] * 6)


def lrn_model(t, shape, radius, bias, alpha, beta, axis=None):
    s = "FLOAT16" if t == F16 else "FLOAT32"
    ins = [tensor(t, shape), scalar("INT32", radius), scalar(s, bias), scalar(s, alpha),
           scalar(s, beta)]
    if axis is not None:
        ins.append(scalar("INT32", axis))
    return one_op_model("LOCAL_RESPONSE_NORMALIZATION", ins, [tensor(t, shape)])


def lrn_loop(x, radius, bias, alpha, beta):
    out = np.empty_like(x, dtype=np.float64)
    n = x.shape[-1]
    for idx in np.ndindex(x.shape[:-1]):
        for i in range(n):
            s = sum(float(x[idx + (d,)]) ** 2 for d in range(max(0, i - radius),
                                                             min(n, i + radius + 1)))
            out[idx + (i,)] = x[idx + (i,)] * (bias + alpha * s) ** -beta
    return out


@pytest.mark.parametrize("radius", [0, 1, 2, 20])
def test_lrn_against_loop(radius):
    x = np.random.default_rng(6).standard_normal((2, 2, 5)).astype(np.float32)
    (y,) = run(lrn_model(F32, [2, 2, 5], radius, 1.0, 0.5, 0.75), [x])
    np.testing.assert_allclose(y, lrn_loop(x, radius, 1.0, 0.5, 0.75), rtol=1e-5)


def test_lrn_axis_0_and_float16():
    x = np.random.default_rng(7).standard_normal((4, 3)).astype(np.float16)
    (y,) = run(lrn_model(F16, [4, 3], 1, 2.0, 1.0, 0.5, axis=0), [x])
    ref = lrn_loop(x.astype(np.float32).T, 1, 2.0, 1.0, 0.5).T
    np.testing.assert_allclose(y, ref, rtol=2e-3, atol=2e-3)


def inorm_model(t, shape, gamma, beta, eps, nchw):
    s = "FLOAT16" if t == F16 else "FLOAT32"
    return one_op_model("INSTANCE_NORMALIZATION",
                        [tensor(t, shape), scalar(s, gamma), scalar(s, beta), scalar(s, eps),
                         scalar("BOOL", nchw)], [tensor(t, shape)])


@pytest.mark.parametrize("nchw", [False, True])
def test_instance_norm(nchw):
    x = np.random.default_rng(8).standard_normal((2, 3, 4, 5)).astype(np.float32)
    (y,) = run(inorm_model(F32, [2, 3, 4, 5], 2.0, 0.5, 1e-3, nchw), [x])
    axes = (2, 3) if nchw else (1, 2)
    xd = x.astype(np.float64)
    mean = xd.mean(axes, keepdims=True)
    var = xd.var(axes, keepdims=True)
    np.testing.assert_allclose(y, (xd - mean) * 2.0 / np.sqrt(var + 1e-3) + 0.5, rtol=1e-5,
                               atol=1e-6)


def test_zero_sized_inputs():
    x = np.zeros((0, 3), np.float32)
    ins = [OperandInfo(OperandType.TENSOR_FLOAT32, x.shape, value=x)]
    ctx = OperationContext(OperationType.L2_NORMALIZATION, ins,
                           [OperandInfo(OperandType.TENSOR_FLOAT32, ())])
    (y,) = lookup(OperationType.L2_NORMALIZATION).execute(ctx)
    assert y.shape == (0, 3)


def test_rejects_bad_output_quant_axis_rank():
    assert "1/128" in rejected(l2_model(Q8, [2, 3], q=(0.5, 0), qo=(1 / 128, 0)))
    assert "1/128" in rejected(l2_model(QS8, [2, 3], q=(0.5, 0), qo=(1 / 256, 0)))
    assert "axis" in rejected(l2_model(F32, [2, 3], axis=2))
    assert "axis" in rejected(lrn_model(F32, [2, 3], 1, 1.0, 1.0, 0.5, axis=-3))
    assert "rank" in rejected(l2_model(F32, [1, 1, 1, 1, 2]))
    assert "rank" in rejected(inorm_model(F32, [2, 3, 4], 1.0, 0.0, 1e-3, False))


def test_rejects_mismatched_scalar_types():
    m = one_op_model("LOCAL_RESPONSE_NORMALIZATION",
                     [tensor(F16, [1, 1, 1, 2]), scalar("INT32", 1), scalar("FLOAT32", 1.0),
                      scalar("FLOAT32", 1.0), scalar("FLOAT32", 0.5)], [tensor(F16, [1, 1, 1, 2])])
    assert "match no signature" in rejected(m)
    m = one_op_model("INSTANCE_NORMALIZATION",
                     [tensor(F32, [1, 1, 1, 2]), scalar("FLOAT32", 1.0), scalar("FLOAT32", 0.0),
                      scalar("FLOAT32", 1e-3), scalar("INT32", 0)], [tensor(F32, [1, 1, 1, 2])])
    assert "match no signature" in rejected(m)
    m = one_op_model("L2_NORMALIZATION", [tensor("TENSOR_INT32", [2])],
                     [tensor("TENSOR_INT32", [2])])
    assert "match no signature" in rejected(m)
