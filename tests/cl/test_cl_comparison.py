"""EQUAL .. LESS_EQUAL, LOGICAL_AND/OR/NOT on OpenCL vs the reference device: every type,
broadcasting, quantized inputs with different scales, NaN, bool bytes, support reasons."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check, reason
from tests.kits.one_op_models import tensor

COMPARE = ["EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL"]
TYPES = {"f32": ("TENSOR_FLOAT32", np.float32), "f16": ("TENSOR_FLOAT16", np.float16),
         "i32": ("TENSOR_INT32", np.int32), "b8": ("TENSOR_BOOL8", np.bool_)}


@pytest.mark.parametrize("op", COMPARE)
@pytest.mark.parametrize("name", list(TYPES))
def test_compare_types_broadcast(cl_device, op, name):
    t, dt = TYPES[name]
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, (2, 1, 4)).astype(dt)
    b = rng.integers(0, 3, (3, 1)).astype(dt)
    (y,) = check(op, [tensor(t, [2, 1, 4]), tensor(t, [3, 1])], [tensor("TENSOR_BOOL8", [2, 3, 4])],
                 [a, b], cl_device)
    assert y.shape == (2, 3, 4)


@pytest.mark.parametrize("op", COMPARE)
@pytest.mark.parametrize("t", ["TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"])
def test_compare_quant_different_scales(cl_device, op, t):
    # real values: a = (q - 3) * 0.5, b = (q + 2) * 0.25: many equal pairs
    signed = "SIGNED" in t
    dt = np.int8 if signed else np.uint8
    qa = np.arange(10, 30).astype(dt)
    qb = (2 * (qa.astype(np.int32) - 3) - 2).astype(dt)
    qb[::3] += 1
    check(op, [tensor(t, [20], scale=0.5, zero_point=3),
               tensor(t, [20], scale=0.25, zero_point=-2 if signed else 2)],
          [tensor("TENSOR_BOOL8", [20])], [qa, qb], cl_device)


@pytest.mark.parametrize("op", COMPARE)
def test_compare_nan(cl_device, op):
    a = np.array([np.nan, 1.0, np.nan, -np.inf], np.float32)
    b = np.array([np.nan, np.nan, 0.0, -np.inf], np.float32)
    check(op, [tensor("TENSOR_FLOAT32", [4]), tensor("TENSOR_FLOAT32", [4])],
          [tensor("TENSOR_BOOL8", [4])], [a, b], cl_device)


@pytest.mark.parametrize("op", ["LOGICAL_AND", "LOGICAL_OR"])
def test_logical_broadcast(cl_device, op):
    a = np.array([[True, False, True, False]])
    b = np.array([[True], [False]])
    (y,) = check(op, [tensor("TENSOR_BOOL8", [1, 4]), tensor("TENSOR_BOOL8", [2, 1])],
                 [tensor("TENSOR_BOOL8", [2, 4])], [a, b], cl_device)
    assert y.dtype == np.bool_


def test_logical_not_rank5(cl_device):
    x = np.random.default_rng(1).integers(0, 2, (2, 1, 2, 3, 2)).astype(bool)
    (y,) = check("LOGICAL_NOT", [tensor("TENSOR_BOOL8", x.shape)],
                 [tensor("TENSOR_BOOL8", x.shape)], [x], cl_device)
    assert np.array_equal(y, ~x)


def test_compare_support_rank(cl_device):
    why = reason("LESS", [tensor("TENSOR_FLOAT32", [1] * 5), tensor("TENSOR_FLOAT32", [1])],
                 [tensor("TENSOR_BOOL8", [1] * 5)], cl_device)
    assert why and "rank 5" in why
