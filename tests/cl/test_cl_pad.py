"""PAD, PAD_V2 on OpenCL vs the reference device: ranks 1 to 4, quantized padding with the zero
point, PAD_V2 values for every type (float16 bits, negative int8), zero paddings."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import scalar, tensor

TYPES = [("TENSOR_FLOAT32", np.float32, "FLOAT32", -1.5),
         ("TENSOR_FLOAT16", np.float16, "FLOAT16", 2.25),
         ("TENSOR_QUANT8_ASYMM", np.uint8, "INT32", 200),
         ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8, "INT32", -100)]


def _pads(p):
    return tensor("TENSOR_INT32", [len(p), 2], np.array(p, np.int32))


@pytest.mark.parametrize("pads", [[[1, 2]], [[0, 0], [1, 1]], [[1, 0], [0, 2], [2, 1]],
                                  [[0, 1], [1, 0], [0, 0], [2, 2]]])
@pytest.mark.parametrize("t,dt,st,value", TYPES)
def test_pad_and_pad_v2(cl_device, pads, t, dt, st, value):
    shape = [2, 3, 2, 2][: len(pads)]
    out = [d + a + b for d, (a, b) in zip(shape, pads)]
    q = dict(scale=0.5, zero_point=7) if "QUANT" in t else {}
    x = (np.arange(np.prod(shape)) % 50).astype(dt).reshape(shape)
    (y,) = check("PAD", [tensor(t, shape, **q), _pads(pads)], [tensor(t, out, **q)], [x],
                 cl_device, "exact")
    if "QUANT" in t:
        assert y.flat[0] == 7 or pads[0][0] == 0
    (y,) = check("PAD_V2", [tensor(t, shape, **q), _pads(pads), scalar(st, value)],
                 [tensor(t, out, **q)], [x], cl_device, "exact")
    assert (y == dt(value)).sum() == y.size - x.size + (x == dt(value)).sum()
