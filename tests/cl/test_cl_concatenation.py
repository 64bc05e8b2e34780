"""CONCATENATION on OpenCL vs the reference device: every axis (negative too), 1 to 4
inputs, quantized inputs requantized to the output's scale, every stored type."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import scalar, tensor


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_float(cl_device, axis, n):
    rng = np.random.default_rng(n)
    shapes = []
    for k in range(n):
        s = [2, 3, 4]
        s[axis] = k + 1
        shapes.append(s)
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    xs = [rng.uniform(-1, 1, s).astype(np.float32) for s in shapes]
    check("CONCATENATION", [tensor("TENSOR_FLOAT32", s) for s in shapes] + [scalar("INT32", axis)],
          [tensor("TENSOR_FLOAT32", out)], xs, cl_device, "exact")


@pytest.mark.parametrize("t,dt,lo,hi", [("TENSOR_QUANT8_ASYMM", np.uint8, 0, 255),
                                        ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8, -128, 127)])
def test_quant_requantizes(cl_device, t, dt, lo, hi):
    rng = np.random.default_rng(0)
    xs = [rng.integers(lo, hi + 1, [2, 3]).astype(dt) for _ in range(3)]
    qs = [dict(scale=0.5, zero_point=lo + 10), dict(scale=0.25, zero_point=lo + 100),
          dict(scale=1.0, zero_point=lo + 3)]
    check("CONCATENATION", [tensor(t, [2, 3], **q) for q in qs] + [scalar("INT32", 1)],
          [tensor(t, [2, 9], **qs[1])], xs, cl_device, "exact")
