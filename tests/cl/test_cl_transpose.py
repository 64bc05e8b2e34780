"""TRANSPOSE on OpenCL vs the reference device: every permutation of ranks 1 to 4, the
omitted permutation (reverse), every stored type."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import omitted, tensor


@pytest.mark.parametrize("perm", [p for r in range(1, 5) for p in itertools.permutations(range(r))])
def test_permutations(cl_device, perm):
    shape = [2, 3, 4, 5][: len(perm)]
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    out = [shape[p] for p in perm]
    check("TRANSPOSE", [tensor("TENSOR_FLOAT32", shape),
                        tensor("TENSOR_INT32", [len(perm)], np.array(perm, np.int32))],
          [tensor("TENSOR_FLOAT32", out)], [x], cl_device, "exact")


@pytest.mark.parametrize("t,dt", [("TENSOR_QUANT8_ASYMM", np.uint8), ("TENSOR_FLOAT16",
                                                                     np.float16)])
def test_omitted_perm_reverses(cl_device, t, dt):
    q = dict(scale=0.5, zero_point=1) if "QUANT" in t else {}
    x = (np.arange(24) % 200).astype(dt).reshape(2, 3, 4)
    (y,) = check("TRANSPOSE", [tensor(t, [2, 3, 4], **q), omitted("TENSOR_INT32")],
                 [tensor(t, [4, 3, 2], **q)], [x], cl_device, "exact")
    np.testing.assert_array_equal(y, x.T)


@pytest.mark.parametrize("t,dt", [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16),
                                  ("TENSOR_QUANT8_ASYMM", np.uint8)])
@pytest.mark.parametrize("shape,perm", [
    ([2, 3, 5, 7], (0, 2, 3, 1)),     # NCHW -> NHWC: R 3, S 35 (two full tiles and a tail)
    ([2, 8, 4, 9], (0, 2, 3, 1)),     # R 8: the most rows a kernel of exactly R rows takes
    ([1, 21, 4, 8], (0, 2, 3, 1)),    # R 21: a partial block of rows
    ([2, 5, 7, 19], (0, 3, 1, 2)),    # NHWC -> NCHW: R 35, S 19
    ([3, 17, 32], (0, 2, 1)),         # rank 3
])
def test_block_swap_tiles(cl_device, t, dt, shape, perm):
    """The tiled kernel of the NCHW <-> NHWC moves (transpose.cl.mako), full and partial
    tiles, every element size."""
    q = dict(scale=0.5, zero_point=1) if "QUANT" in t else {}
    x = (np.arange(np.prod(shape)) % 251).astype(dt).reshape(shape)
    out = [shape[p] for p in perm]
    (y,) = check("TRANSPOSE", [tensor(t, shape, **q),
                               tensor("TENSOR_INT32", [len(perm)], np.array(perm, np.int32))],
                 [tensor(t, out, **q)], [x], cl_device, "exact")
    np.testing.assert_array_equal(y, x.transpose(perm))
