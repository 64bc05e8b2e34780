"""RESHAPE, SQUEEZE, EXPAND_DIMS on OpenCL vs the reference device: every stored type, -1 in
the target shape, negative axes, parameters given as model inputs (read at planning)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import Spec, scalar, tensor

TYPES = {"TENSOR_FLOAT32": np.float32, "TENSOR_FLOAT16": np.float16,
         "TENSOR_QUANT8_ASYMM": np.uint8, "TENSOR_QUANT8_ASYMM_SIGNED": np.int8}


def _q(t):
    return dict(scale=0.5, zero_point=3) if "QUANT" in t else {}


@pytest.mark.parametrize("t", list(TYPES))
def test_reshape(cl_device, t):
    x = (np.arange(24) % 100).astype(TYPES[t]).reshape(2, 3, 4)
    check("RESHAPE", [tensor(t, [2, 3, 4], **_q(t)),
                      tensor("TENSOR_INT32", [2], np.array([-1, 6], np.int32))],
          [tensor(t, [4, 6], **_q(t))], [x], cl_device, "exact")


def test_reshape_shape_as_model_input(cl_device):
    x = np.arange(12, dtype=np.float32)
    (y,) = check("RESHAPE", [tensor("TENSOR_FLOAT32", [12]), Spec("TENSOR_INT32", (2,), None)],
                 [tensor("TENSOR_FLOAT32", [0, 0])], [x, np.array([3, 4], np.int32)],
                 cl_device, "exact")
    assert y.shape == (3, 4)


@pytest.mark.parametrize("axes,shape", [([1], [2, 3, 1]), ([-1], [2, 1, 3]), (None, [2, 3])])
def test_squeeze(cl_device, axes, shape):
    x = np.arange(6, dtype=np.float32).reshape(2, 1, 3, 1)
    ins = [tensor("TENSOR_FLOAT32", [2, 1, 3, 1])]
    if axes is not None:
        ins.append(tensor("TENSOR_INT32", [len(axes)], np.array(axes, np.int32)))
    (y,) = check("SQUEEZE", ins, [tensor("TENSOR_FLOAT32", shape)], [x], cl_device, "exact")
    assert list(y.shape) == shape


@pytest.mark.parametrize("axis,shape", [(0, [1, 2, 3]), (-1, [2, 3, 1]), (1, [2, 1, 3])])
def test_expand_dims(cl_device, axis, shape):
    x = np.arange(6, dtype=np.float16).reshape(2, 3)
    (y,) = check("EXPAND_DIMS", [tensor("TENSOR_FLOAT16", [2, 3]), scalar("INT32", axis)],
                 [tensor("TENSOR_FLOAT16", shape)], [x], cl_device, "exact")
    assert list(y.shape) == shape
