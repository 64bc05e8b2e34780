"""TILE on OpenCL vs the reference device: every type, ranks 1 to 6, multiples of one,
constant and input multiples, the support reason for rank > 6."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check, reason
from tests.kits.one_op_models import tensor

TYPES = [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16),
         ("TENSOR_INT32", np.int32), ("TENSOR_QUANT8_ASYMM", np.uint8),
         ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8)]


@pytest.mark.parametrize("t,dt", TYPES)
def test_tile_types(cl_device, t, dt):
    q = dict(scale=0.5, zero_point=2) if "QUANT" in t else {}
    x = (np.arange(24) % 100).astype(dt).reshape(2, 3, 4)
    m = np.array([2, 1, 3], np.int32)
    (y,) = check("TILE", [tensor(t, [2, 3, 4], **q), tensor("TENSOR_INT32", [3], m)],
                 [tensor(t, [4, 3, 12], **q)], [x], cl_device)
    assert np.array_equal(y, np.tile(x, m))


@pytest.mark.parametrize("mult", [[3], [1, 2, 1, 2, 1, 2]])
def test_tile_ranks_input_multiples(cl_device, mult):
    shape = [2] * len(mult)
    x = np.arange(2 ** len(mult), dtype=np.float32).reshape(shape)
    out = [d * k for d, k in zip(shape, mult)]
    (y,) = check("TILE", [tensor("TENSOR_FLOAT32", shape), tensor("TENSOR_INT32", [len(mult)])],
                 [tensor("TENSOR_FLOAT32", out)], [x, np.array(mult, np.int32)], cl_device)
    assert np.array_equal(y, np.tile(x, mult))


def test_tile_rank7_unsupported(cl_device):
    why = reason("TILE", [tensor("TENSOR_FLOAT32", [1] * 7),
                          tensor("TENSOR_INT32", [7], np.ones(7, np.int32))],
                 [tensor("TENSOR_FLOAT32", [1] * 7)], cl_device)
    assert why and "rank 7" in why
