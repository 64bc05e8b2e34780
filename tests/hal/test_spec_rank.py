"""Operations whose spec says "Supported tensor rank: from 1" accept rank 5 and 6 tensors
(no over-rejection of valid models) and compute them like NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.one_op_models import one_op_model, run, scalar, tensor

F32, I32, B8 = "TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_BOOL8"
RNG = np.random.default_rng(3)


def _x(shape):
    return RNG.uniform(0.5, 3, shape).astype(np.float32)


UNARY = {"ABS": np.abs, "EXP": np.exp, "LOG": np.log, "NEG": np.negative,
         "RSQRT": lambda v: 1 / np.sqrt(v), "SIN": np.sin, "SQRT": np.sqrt,
         "HARD_SWISH": lambda v: v * np.minimum(6, np.maximum(0, v + 3)) / 6}
BINARY = {"MAXIMUM": np.maximum, "MINIMUM": np.minimum, "POW": np.power,
          "PRELU": lambda a, b: np.where(a >= 0, a, a * b)}
COMPARE = {"EQUAL": np.equal, "NOT_EQUAL": np.not_equal, "GREATER": np.greater,
           "GREATER_EQUAL": np.greater_equal, "LESS": np.less, "LESS_EQUAL": np.less_equal}
SHAPES = [(2, 1, 3, 1, 2), (1, 2, 1, 2, 1, 3)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_high_rank(op, shape):
    x = _x(shape)
    (y,) = run(one_op_model(op, [tensor(F32, shape)], [tensor(F32, shape)]), [x])
    np.testing.assert_allclose(y, UNARY[op](x), rtol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
def test_elu_high_rank(shape):
    x = _x(shape) - 2
    m = one_op_model("ELU", [tensor(F32, shape), scalar("FLOAT32", 0.5)], [tensor(F32, shape)])
    (y,) = run(m, [x])
    np.testing.assert_allclose(y, np.where(x > 0, x, 0.5 * (np.exp(x) - 1)), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", sorted(BINARY) + sorted(COMPARE))
def test_binary_high_rank(op, shape):
    a, b = _x(shape), _x(shape[-2:])
    out_t = B8 if op in COMPARE else F32
    m = one_op_model(op, [tensor(F32, shape), tensor(F32, shape[-2:])], [tensor(out_t, shape)])
    (y,) = run(m, [a, b])
    fn = COMPARE.get(op) or BINARY[op]
    if out_t == B8:
        np.testing.assert_array_equal(y, fn(a, b))
    else:
        np.testing.assert_allclose(y, fn(a, b), rtol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
def test_logical_and_select_high_rank(shape):
    a = RNG.integers(0, 2, shape).astype(bool)
    b = RNG.integers(0, 2, shape).astype(bool)
    m = one_op_model("LOGICAL_AND", [tensor(B8, shape), tensor(B8, shape)], [tensor(B8, shape)])
    np.testing.assert_array_equal(run(m, [a, b])[0], a & b)
    m = one_op_model("LOGICAL_NOT", [tensor(B8, shape)], [tensor(B8, shape)])
    np.testing.assert_array_equal(run(m, [a])[0], ~a)
    x, y = _x(shape), _x(shape)
    m = one_op_model("SELECT", [tensor(B8, shape), tensor(F32, shape), tensor(F32, shape)],
                     [tensor(F32, shape)])
    np.testing.assert_array_equal(run(m, [a, x, y])[0], np.where(a, x, y))


@pytest.mark.parametrize("shape", SHAPES)
def test_shape_ops_high_rank(shape):
    x = _x(shape)
    r = len(shape)
    m = one_op_model("ARGMAX", [tensor(F32, shape), scalar("INT32", -1)],
                     [tensor(I32, shape[:-1])])
    np.testing.assert_array_equal(run(m, [x])[0], x.argmax(-1))
    m = one_op_model("CAST", [tensor(F32, shape)], [tensor(I32, shape)])
    np.testing.assert_array_equal(run(m, [x])[0], np.trunc(x).astype(np.int32))
    m = one_op_model("EXPAND_DIMS", [tensor(F32, shape), scalar("INT32", r)],
                     [tensor(F32, shape + (1,))])
    np.testing.assert_array_equal(run(m, [x])[0], x[..., None])
    m = one_op_model("GATHER", [tensor(F32, shape), scalar("INT32", r - 1),
                                tensor(I32, [2], [1, 0])],
                     [tensor(F32, shape[:-1] + (2,))])
    np.testing.assert_array_equal(run(m, [x])[0], x[..., [1, 0]])
    m = one_op_model("LOG_SOFTMAX", [tensor(F32, shape), scalar("FLOAT32", 1.0),
                                     scalar("INT32", -1)], [tensor(F32, shape)])
    want = x - np.log(np.exp(x).sum(-1, keepdims=True))
    np.testing.assert_allclose(run(m, [x])[0], want, rtol=1e-5, atol=1e-6)
    m = one_op_model("SLICE", [tensor(F32, shape), tensor(I32, [r], [0] * r),
                               tensor(I32, [r], [-1] * r)], [tensor(F32, shape)])
    np.testing.assert_array_equal(run(m, [x])[0], x)
    m = one_op_model("TILE", [tensor(F32, shape), tensor(I32, [r], [2] + [1] * (r - 1))],
                     [tensor(F32, (2 * shape[0],) + shape[1:])])
    np.testing.assert_array_equal(run(m, [x])[0], np.concatenate([x, x]))
    m = one_op_model("TOPK_V2", [tensor(F32, shape), scalar("INT32", 1)],
                     [tensor(F32, shape[:-1] + (1,)), tensor(I32, shape[:-1] + (1,))])
    vals, idx = run(m, [x])
    np.testing.assert_array_equal(idx[..., 0], x.argmax(-1))
    np.testing.assert_array_equal(vals[..., 0], x.max(-1))
    m = one_op_model("RANK", [tensor(F32, shape)], [scalar("INT32", None)])
    assert int(run(m, [x])[0]) == r
    m = one_op_model("QUANTIZE", [tensor(F32, shape)],
                     [tensor("TENSOR_QUANT8_ASYMM", shape, scale=0.5, zero_point=1)])
    np.testing.assert_array_equal(run(m, [x])[0], np.floor(x / 0.5 + 0.5) + 1)
    m = one_op_model("SPLIT", [tensor(F32, shape), scalar("INT32", 0), scalar("INT32", 1)],
                     [tensor(F32, shape)])
    np.testing.assert_array_equal(run(m, [x])[0], x)
