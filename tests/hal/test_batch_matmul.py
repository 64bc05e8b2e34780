"""BATCH_MATMUL (no corpus tests): adjoint flags, batch broadcasting, every type, the
quantized pipeline, int32 wrap-around, zero-sized batches and validation mutations."""

import numpy as np
import pytest

from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import OperandType, OperationType
from tests.kits.conv_reference import requant_ref
from tests.kits.one_op_models import omitted, one_op_model, rejected, run, scalar, tensor

RNG = np.random.default_rng(1)


def bmm_model(t, xs, ys, adj=(), out_dims=None, q=None, y_value=None):
    q = q or {}
    ins = [tensor(t, xs, None, *q.get("x", ())), tensor(t, ys, y_value, *q.get("y", ()))]
    ins += [scalar("BOOL", a) if a is not None else omitted("BOOL") for a in adj]
    out = tensor(t, out_dims if out_dims is not None else [0] * max(len(xs), len(ys)), None,
                 *q.get("out", ()))
    return one_op_model("BATCH_MATMUL", ins, [out])


@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True),
                                         (True, True)])
def test_float32_adjoints(adj_x, adj_y):
    a = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    b = RNG.standard_normal((3, 5, 2)).astype(np.float32)
    x = np.swapaxes(a, -1, -2).copy() if adj_x else a
    y = np.swapaxes(b, -1, -2).copy() if adj_y else b
    (out,) = run(bmm_model("TENSOR_FLOAT32", x.shape, y.shape, (adj_x, adj_y)), [x, y])
    assert out.shape == (3, 4, 2)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("xs,ys,want", [((2, 3), (3, 4), (2, 4)),
                                        ((2, 1, 2, 3), (3, 3, 5), (2, 3, 2, 5)),
                                        ((4, 2, 3), (3, 1), (4, 2, 1)),
                                        ((1, 2, 3), (5, 3, 2), (5, 2, 2))])
def test_broadcast_batch_dims(xs, ys, want):
    x = RNG.standard_normal(xs).astype(np.float32)
    y = RNG.standard_normal(ys).astype(np.float32)
    (out,) = run(bmm_model("TENSOR_FLOAT32", xs, ys, (), list(want)), [x, y])
    np.testing.assert_allclose(out, np.matmul(x, y), rtol=1e-5, atol=1e-5)


def test_omitted_flags_default_to_false_and_constant_rhs():
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    y = RNG.standard_normal((3, 2)).astype(np.float32)
    (out,) = run(bmm_model("TENSOR_FLOAT32", x.shape, y.shape, (None, None), [2, 2],
                           y_value=y), [x])
    np.testing.assert_allclose(out, x @ y, rtol=1e-5, atol=1e-5)


def test_float16():
    x = RNG.standard_normal((2, 3, 8)).astype(np.float16)
    y = RNG.standard_normal((2, 8, 3)).astype(np.float16)
    (out,) = run(bmm_model("TENSOR_FLOAT16", x.shape, y.shape), [x, y])
    assert out.dtype == np.float16
    want = x.astype(np.float64) @ y.astype(np.float64)
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=5 * 2**-10, atol=5 * 2**-10)


def test_int32_exact_and_wraps():
    x = RNG.integers(-1000, 1000, (2, 3, 4)).astype(np.int32)
    y = RNG.integers(-1000, 1000, (2, 4, 3)).astype(np.int32)
    (out,) = run(bmm_model("TENSOR_INT32", x.shape, y.shape), [x, y])
    np.testing.assert_array_equal(out, x.astype(np.int64) @ y.astype(np.int64))
    big = np.full((1, 2), 2**16, np.int32)
    (out,) = run(bmm_model("TENSOR_INT32", (1, 2), (2, 1), (), [1, 1]), [big, big.T.copy()])
    assert out[0, 0] == np.int64(2 * 2**32).astype(np.int32)  # wraps to 0 as int32 does


def test_quant8_signed_pipeline_and_saturation():
    x = RNG.integers(-128, 128, (2, 3, 6)).astype(np.int8)
    y = RNG.integers(-128, 128, (2, 6, 4)).astype(np.int8)
    q = {"x": (0.5, -5), "y": (0.25, 7), "out": (4.0, 3)}
    (out,) = run(bmm_model("TENSOR_QUANT8_ASYMM_SIGNED", x.shape, y.shape, q=q), [x, y])
    acc = (x.astype(np.float64) + 5) @ (y.astype(np.float64) - 7)
    want = np.clip(requant_ref(acc, 0.5 * 0.25 / 4.0) + 3, -128, 127)
    assert out.dtype == np.int8
    assert np.abs(out.astype(np.int64) - want).max() <= 1
    q = {"x": (1.0, 0), "y": (1.0, 0), "out": (0.01, 0)}
    ones = np.full((1, 2), 100, np.int8)
    (out,) = run(bmm_model("TENSOR_QUANT8_ASYMM_SIGNED", (1, 2), (2, 1), (), [1, 1], q),
                 [ones, ones.T.copy()])
    assert out[0, 0] == 127


def test_zero_sized_batch():
    x = np.zeros((0, 2, 3), np.float32)
    y = np.ones((1, 3, 4), np.float32)
    infos = [OperandInfo(OperandType.TENSOR_FLOAT32, x.shape, value=x),
             OperandInfo(OperandType.TENSOR_FLOAT32, y.shape, value=y)]
    ctx = OperationContext(OperationType.BATCH_MATMUL, infos,
                           [OperandInfo(OperandType.TENSOR_FLOAT32, (0, 0, 0))])
    (out,) = lookup(OperationType.BATCH_MATMUL).run(ctx)
    assert out.shape == (0, 2, 4)


@pytest.mark.parametrize("t,xs,ys,adj,needle", [
    ("TENSOR_FLOAT32", (3,), (3, 2), (), "rank 2 to 4"),
    ("TENSOR_FLOAT32", (1, 1, 1, 2, 3), (3, 2), (), "rank 2 to 4"),
    ("TENSOR_FLOAT32", (2, 3), (4, 2), (), "columns"),
    ("TENSOR_FLOAT32", (2, 3), (2, 4), (True, True), "columns"),
    ("TENSOR_FLOAT32", (2, 2, 3), (3, 3, 2), (), "broadcast"),
    ("TENSOR_QUANT8_ASYMM", (2, 3), (3, 2), (), "match no signature"),
])
def test_rejects(t, xs, ys, adj, needle):
    q = {"x": (0.5, 0), "y": (0.5, 0), "out": (1.0, 0)} if "QUANT" in t else None
    assert needle in rejected(bmm_model(t, xs, ys, adj, q=q))


def test_rejects_mixed_types_and_non_bool_flag():
    m = one_op_model("BATCH_MATMUL", [tensor("TENSOR_FLOAT32", [2, 3]),
                                      tensor("TENSOR_FLOAT16", [3, 2])],
                     [tensor("TENSOR_FLOAT32", [2, 2])])
    assert "match no signature" in rejected(m)
    m = one_op_model("BATCH_MATMUL", [tensor("TENSOR_FLOAT32", [2, 3]),
                                      tensor("TENSOR_FLOAT32", [3, 2]), scalar("INT32", 1)],
                     [tensor("TENSOR_FLOAT32", [2, 2])])
    assert "match no signature" in rejected(m)
