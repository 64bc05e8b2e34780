"""SPLIT on OpenCL vs the reference device: every type, every (negative) axis, one to five
outputs, ranks 1 to 5."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import scalar, tensor

TYPES = [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16),
         ("TENSOR_INT32", np.int32), ("TENSOR_QUANT8_ASYMM", np.uint8),
         ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8)]


def _split(t, shape, axis, num):
    q = dict(scale=0.5, zero_point=1) if "QUANT" in t else {}
    part = list(shape)
    part[axis] //= num
    return ([tensor(t, shape, **q), scalar("INT32", axis), scalar("INT32", num)],
            [tensor(t, part, **q) for _ in range(num)])


@pytest.mark.parametrize("t,dt", TYPES)
@pytest.mark.parametrize("axis,num", [(0, 2), (1, 3), (-1, 5), (-2, 1), (2, 4)])
def test_split_types_axes(cl_device, t, dt, axis, num):
    shape = [2, 3, 4, 5] if axis != 2 else [2, 3, 8, 5]
    x = (np.arange(int(np.prod(shape))) % 120).astype(dt).reshape(shape)
    ins, outs = _split(t, shape, axis, num)
    ys = check("SPLIT", ins, outs, [x], cl_device)
    for y, want in zip(ys, np.split(x, num, axis=axis)):
        assert np.array_equal(y, want)


@pytest.mark.parametrize("shape,axis", [([6], 0), ([1, 2, 3, 2, 4], 4)])
def test_split_ranks(cl_device, shape, axis):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    ins, outs = _split("TENSOR_FLOAT32", shape, axis, 2)
    check("SPLIT", ins, outs, [x], cl_device)
