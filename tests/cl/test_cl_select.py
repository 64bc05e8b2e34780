"""SELECT on OpenCL vs the reference device: every type, requantization of either input to
the output quantization (rounding, saturation), ranks 1 and 5."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import tensor

B8 = "TENSOR_BOOL8"


@pytest.mark.parametrize("t,dt", [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16),
                                  ("TENSOR_INT32", np.int32)])
def test_select_types(cl_device, t, dt):
    rng = np.random.default_rng(2)
    shape = [2, 3, 4]
    c = rng.integers(0, 2, shape).astype(bool)
    a = rng.uniform(-9, 9, shape).astype(dt)
    b = rng.uniform(-9, 9, shape).astype(dt)
    (y,) = check("SELECT", [tensor(B8, shape), tensor(t, shape), tensor(t, shape)],
                 [tensor(t, shape)], [c, a, b], cl_device)
    assert np.array_equal(y, np.where(c, a, b))


@pytest.mark.parametrize("t", ["TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"])
@pytest.mark.parametrize("same", [True, False])
def test_select_quant_requantizes(cl_device, t, same):
    signed = "SIGNED" in t
    dt, lo, hi = (np.int8, -128, 128) if signed else (np.uint8, 0, 256)
    x = np.arange(lo, hi).astype(dt)
    c = (np.arange(256) % 3 == 0)
    za = 5 if signed else 130
    out = tensor(t, [256], scale=0.5, zero_point=za) if same else \
        tensor(t, [256], scale=0.3, zero_point=-7 if signed else 100)
    check("SELECT", [tensor(B8, [256]), tensor(t, [256], scale=0.5, zero_point=za),
                     tensor(t, [256], scale=1.25, zero_point=-1 if signed else 120)],
          [out], [c, x, x[::-1].copy()], cl_device, "quant")


@pytest.mark.parametrize("shape", [[7], [1, 2, 1, 3, 2]])
def test_select_ranks(cl_device, shape):
    n = int(np.prod(shape))
    c = (np.arange(n) % 2 == 1).reshape(shape)
    a = np.arange(n, dtype=np.float32).reshape(shape)
    (y,) = check("SELECT", [tensor(B8, shape), tensor("TENSOR_FLOAT32", shape),
                            tensor("TENSOR_FLOAT32", shape)], [tensor("TENSOR_FLOAT32", shape)],
                 [c, a, -a], cl_device)
    assert y.reshape(-1)[1] == 1.0 and y.reshape(-1)[2] == -2.0
