"""ABS EXP LOG NEG RSQRT SIN SQRT FLOOR on OpenCL vs the reference device: float32, relaxed,
float16, int32 (ABS / NEG wrap at INT32_MIN), out-of-domain inputs, ranks 1 to 6."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import OK, after_zero_sized, check
from tests.kits.one_op_models import tensor

OPS = ["ABS", "EXP", "LOG", "NEG", "RSQRT", "SIN", "SQRT", "FLOOR"]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", ["f32", "relaxed", "f16"])
def test_unary_float(cl_device, op, kind):
    rng = np.random.default_rng(3)
    shape = [2, 3, 5] if op != "FLOOR" else [2, 3, 1, 5]
    x = rng.uniform(-4, 4, shape)
    if op in ("LOG", "RSQRT", "SQRT"):
        x = np.abs(x) + 0.01
    t = "TENSOR_FLOAT16" if kind == "f16" else "TENSOR_FLOAT32"
    x = x.astype(np.float16 if kind == "f16" else np.float32)
    check(op, [tensor(t, shape)], [tensor(t, shape)], [x], cl_device,
          "f16" if kind == "f16" else "f32", relaxed=kind == "relaxed")


@pytest.mark.parametrize("op", ["LOG", "SQRT", "RSQRT", "EXP"])
def test_unary_out_of_domain(cl_device, op):
    x = np.array([-1.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 100.0, 1e-30], np.float32)
    with np.errstate(all="ignore"):
        (y,) = check(op, [tensor("TENSOR_FLOAT32", [8])], [tensor("TENSOR_FLOAT32", [8])], [x],
                     cl_device, "f32")
        want = {"LOG": np.log, "SQRT": np.sqrt, "EXP": np.exp,
                "RSQRT": lambda v: 1 / np.sqrt(v)}[op](x)
    assert np.array_equal(np.isnan(y), np.isnan(want))
    assert np.array_equal(np.isinf(y) & (y > 0), np.isinf(want) & (want > 0))
    assert np.array_equal(np.isinf(y) & (y < 0), np.isinf(want) & (want < 0))
    if op == "RSQRT":
        assert y[1] == np.inf and y[2] == -np.inf
    if op == "EXP":
        assert y[6] == np.inf and y[4] == 0.0


@pytest.mark.parametrize("op", ["ABS", "NEG"])
def test_unary_int32_wraps(cl_device, op):
    x = np.array([-5, 0, 7, -(2**31), 2**31 - 1], np.int32)
    (y,) = check(op, [tensor("TENSOR_INT32", [5])], [tensor("TENSOR_INT32", [5])], [x],
                 cl_device)
    assert y[3] == -(2**31)


@pytest.mark.parametrize("rank", [1, 6])
def test_unary_any_rank(cl_device, rank):
    shape = [2] * rank
    x = np.linspace(-3, 3, 2**rank).astype(np.float32).reshape(shape)
    check("SIN", [tensor("TENSOR_FLOAT32", shape)], [tensor("TENSOR_FLOAT32", shape)], [x],
          cl_device, "f32")


def test_unary_dynamic_output_shape(cl_device):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = check("NEG", [tensor("TENSOR_FLOAT32", [2, 3])], [tensor("TENSOR_FLOAT32", [0, 0])],
                 [x], cl_device)
    assert y.shape == (2, 3) and y[1, 2] == -5.0


def test_unary_zero_sized(cl_device):
    cl, ref = after_zero_sized("NEG", [], tensor("TENSOR_FLOAT32", [0, 3]), cl_device)
    assert cl.status == ref.status == OK
    assert cl.output_shapes[0].dimensions == ref.output_shapes[0].dimensions == (0, 3)
