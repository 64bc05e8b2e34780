"""ARGMAX, ARGMIN on OpenCL vs the reference device: every type, every (negative) axis, ties
(lowest index), NaN, 1-D inputs (output [1]), input axis values."""

from __future__ import annotations

import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.cl_compare import OK, after_zero_sized, check
from tests.kits.one_op_models import scalar, tensor

TYPES = [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16),
         ("TENSOR_INT32", np.int32), ("TENSOR_QUANT8_ASYMM", np.uint8),
         ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8)]


@pytest.mark.parametrize("op", ["ARGMAX", "ARGMIN"])
@pytest.mark.parametrize("t,dt", TYPES)
@pytest.mark.parametrize("axis", [-3, -1, 0, 1, 2])
def test_argminmax_types_axes_ties(cl_device, op, t, dt, axis):
    q = dict(scale=0.5, zero_point=3) if "QUANT" in t else {}
    x = np.random.default_rng(4).integers(0, 3, (3, 4, 5)).astype(dt)  # many ties
    out = [3, 4, 5]
    del out[axis]
    (y,) = check(op, [tensor(t, [3, 4, 5], **q), scalar("INT32", axis)],
                 [tensor("TENSOR_INT32", out)], [x], cl_device)
    f = np.argmax if op == "ARGMAX" else np.argmin
    assert np.array_equal(y, f(x, axis=axis))


@pytest.mark.parametrize("op", ["ARGMAX", "ARGMIN"])
def test_argminmax_1d_and_nan(cl_device, op):
    x = np.array([1.0, np.nan, 7.0, np.nan, -2.0], np.float32)
    (y,) = check(op, [tensor("TENSOR_FLOAT32", [5]), scalar("INT32", 0)],
                 [tensor("TENSOR_INT32", [1])], [x], cl_device)
    assert y.tolist() == [1]


def test_argmax_axis_as_input(cl_device):
    x = np.array([[1, 9, 3], [8, 2, 7]], np.int32)
    (y,) = check("ARGMAX", [tensor("TENSOR_INT32", [2, 3]), tensor("INT32", [])],
                 [tensor("TENSOR_INT32", [0])], [x, np.int32(1)], cl_device)
    assert y.tolist() == [1, 0]


@pytest.mark.parametrize("axis,out,ok", [(1, [0], True), (0, [3], False)])
def test_argmax_zero_sized(cl_device, axis, out, ok):
    # [0, 3]: along axis 1 the output is empty; along the empty axis 0 there is no extremum
    cl, ref = after_zero_sized("ARGMAX", [scalar("INT32", axis)],
                               tensor("TENSOR_INT32", out), cl_device)
    assert cl.status == ref.status == (OK if ok else ErrorStatus.GENERAL_FAILURE)
