"""CAST on OpenCL vs the reference device: every conversion between float32, float16, int32
and quant8 asymm (truncation, saturation, NaN), the identity casts of 1.3, any rank."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import tensor

TYPES = {"TENSOR_FLOAT32": np.float32, "TENSOR_FLOAT16": np.float16,
         "TENSOR_INT32": np.int32, "TENSOR_QUANT8_ASYMM": np.uint8}
FLOATS = [-3.0e9, -300.7, -1.5, -0.5, 0.4, 2.9, 255.5, 256.0, 70000.2, 3.0e9, np.nan,
          np.inf, -np.inf]
INTS = [-(2**31), -300, -1, 0, 2, 255, 256, 70000, 2**31 - 1]


def _spec(t, shape):
    return tensor(t, shape, scale=0.5 if "QUANT" in t else 0.0)


@pytest.mark.parametrize("src", list(TYPES))
@pytest.mark.parametrize("dst", list(TYPES))
def test_cast_pairs(cl_device, src, dst):
    values = np.array(FLOATS if TYPES[src] in (np.float32, np.float16) else INTS)
    with np.errstate(all="ignore"):
        if TYPES[src] == np.uint8:
            values = np.clip(values, 0, 255)
        x = values.astype(TYPES[src])
    (y,) = check("CAST", [_spec(src, [x.size])], [_spec(dst, [x.size])], [x], cl_device)
    if TYPES[src] == np.float32 and TYPES[dst] == np.int32:
        assert y[0] == -(2**31) and y[3] == 0 and y[5] == 2 and y[10] == 0  # sat, trunc, NaN


@pytest.mark.parametrize("t,dt", [("TENSOR_BOOL8", np.bool_), ("TENSOR_QUANT16_ASYMM", np.uint16),
                                  ("TENSOR_QUANT16_SYMM", np.int16),
                                  ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8),
                                  ("TENSOR_QUANT8_SYMM", np.int8)])
def test_cast_identity(cl_device, t, dt):
    x = (np.arange(24) * 37 % 200).astype(dt).reshape(2, 3, 4)
    scale = 0.0 if t == "TENSOR_BOOL8" else 0.25
    zp = 7 if t == "TENSOR_QUANT16_ASYMM" else 0
    (y,) = check("CAST", [tensor(t, [2, 3, 4], scale=scale, zero_point=zp)],
                 [tensor(t, [2, 3, 4], scale=scale, zero_point=zp)], [x], cl_device)
    assert np.array_equal(y, x)


def test_cast_rank6_float16_to_int(cl_device):
    x = np.linspace(-40, 40, 64).astype(np.float16).reshape([2] * 6)
    (y,) = check("CAST", [tensor("TENSOR_FLOAT16", [2] * 6)], [tensor("TENSOR_INT32", [2] * 6)],
                 [x], cl_device)
    assert np.array_equal(y, np.trunc(x.astype(np.float64)).astype(np.int32))
