"""SOFTMAX, LOG_SOFTMAX on OpenCL vs the reference device: every axis (negative too), beta,
ranks 1 to 4, float32/float16/relaxed, quantized SOFTMAX within one step of the reference's
fixed-point pipeline, large inputs (no overflow)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import scalar, tensor


@pytest.mark.parametrize("op", ["SOFTMAX", "LOG_SOFTMAX"])
@pytest.mark.parametrize("shape,axis", [([5], 0), ([2, 7], -1), ([2, 3, 4], 1), ([2, 3, 4, 5], 0)])
@pytest.mark.parametrize("kind", ["f32", "f16", "relaxed"])
def test_float(cl_device, op, shape, axis, kind):
    rng = np.random.default_rng(1)
    t = "TENSOR_FLOAT16" if kind == "f16" else "TENSOR_FLOAT32"
    x = rng.uniform(-5, 5, shape).astype(np.float16 if kind == "f16" else np.float32)
    ins = [tensor(t, shape), scalar("FLOAT16" if kind == "f16" else "FLOAT32", 0.7),
           scalar("INT32", axis)]
    check(op, ins, [tensor(t, shape)], [x], cl_device, "f16" if kind == "f16" else "f32",
          relaxed=kind == "relaxed")


def test_large_values_do_not_overflow(cl_device):
    x = np.array([[1000.0, 1001.0, 999.0]], np.float32)
    (y,) = check("SOFTMAX", [tensor("TENSOR_FLOAT32", [1, 3]), scalar("FLOAT32", 1.0)],
                 [tensor("TENSOR_FLOAT32", [1, 3])], [x], cl_device, "f32")
    assert np.isfinite(y).all() and abs(y.sum() - 1) < 1e-5


@pytest.mark.parametrize("t,zo", [("TENSOR_QUANT8_ASYMM", 0), ("TENSOR_QUANT8_ASYMM_SIGNED",
                                                                -128)])
@pytest.mark.parametrize("beta", [0.5, 1.0, 3.0])
def test_quant(cl_device, t, zo, beta):
    rng = np.random.default_rng(2)
    signed = zo == -128
    x = rng.integers(-128 if signed else 0, 128 if signed else 256, [4, 10])
    x = x.astype(np.int8 if signed else np.uint8)
    check("SOFTMAX", [tensor(t, [4, 10], scale=0.1, zero_point=5), scalar("FLOAT32", beta)],
          [tensor(t, [4, 10], scale=1 / 256, zero_point=zo)], [x], cl_device, "quant")
