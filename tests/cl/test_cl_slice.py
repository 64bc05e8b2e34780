"""SLICE, STRIDED_SLICE on OpenCL vs the reference device: begin/size with -1, negative
strides, begin/end/shrink masks, parameters as model inputs, every stored type."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import Spec, scalar, tensor


def _i32(v):
    return tensor("TENSOR_INT32", [len(v)], np.array(v, np.int32))


@pytest.mark.parametrize("begin,size", [([0, 1, 1], [2, 2, -1]), ([1, 0, 3], [1, 3, 1])])
@pytest.mark.parametrize("t,dt", [("TENSOR_FLOAT32", np.float32), ("TENSOR_INT32", np.int32),
                                  ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8)])
def test_slice(cl_device, begin, size, t, dt):
    q = dict(scale=0.5, zero_point=0) if "QUANT" in t else {}
    x = np.arange(24).astype(dt).reshape(2, 3, 4)
    out = [s if s != -1 else d - b for s, d, b in zip(size, x.shape, begin)]
    check("SLICE", [tensor(t, [2, 3, 4], **q), _i32(begin), _i32(size)], [tensor(t, out, **q)],
          [x], cl_device, "exact")


@pytest.mark.parametrize("begin,end,strides,bm,em,sm", [
    ([0, 0, 0], [2, 3, 4], [1, 1, 1], 0, 0, 0),
    ([1, -1, 3], [2, 0, 0], [1, -1, -2], 0, 0, 0),
    ([0, 1, 0], [0, 3, 4], [1, 2, 3], 1, 1, 0),
    ([1, 0, 0], [2, 3, 4], [1, 1, 2], 0, 6, 1),
    ([-1, -2, -3], [-3, -4, -5], [-1, -1, -1], 0, 0, 0),
])
def test_strided_slice(cl_device, begin, end, strides, bm, em, sm):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = []
    for d in range(3):
        b = None if bm & (1 << d) else begin[d]
        e = None if em & (1 << d) else end[d]
        idx.append(b if sm & (1 << d) else slice(b, e, strides[d]))
    want = x[tuple(idx)]
    out = list(want.shape) or [1]
    (y,) = check("STRIDED_SLICE", [tensor("TENSOR_FLOAT32", [2, 3, 4]), _i32(begin), _i32(end),
                                   _i32(strides), scalar("INT32", bm), scalar("INT32", em),
                                   scalar("INT32", sm)],
                 [tensor("TENSOR_FLOAT32", out)], [x], cl_device, "exact")
    np.testing.assert_array_equal(y.reshape(want.shape), want)


def test_slice_begin_as_model_input(cl_device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (y,) = check("SLICE", [tensor("TENSOR_FLOAT32", [3, 4]), Spec("TENSOR_INT32", (2,), None),
                           _i32([2, 2])], [tensor("TENSOR_FLOAT32", [2, 2])],
                 [x, np.array([1, 2], np.int32)], cl_device, "exact")
    np.testing.assert_array_equal(y, x[1:3, 2:4])
