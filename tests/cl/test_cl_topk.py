"""TOPK_V2 on OpenCL vs the reference device: every type, ties (equal values by descending
index), NaN, rows sorted in local memory and by global bitonic passes, k = 1 and k = n."""

from __future__ import annotations

import numpy as np
import pytest

from clnn.kernels.topk import MAX_LOCAL_ROW
from tests.kits.cl_compare import check
from tests.kits.one_op_models import scalar, tensor

TYPES = [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16),
         ("TENSOR_INT32", np.int32), ("TENSOR_QUANT8_ASYMM", np.uint8),
         ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8)]


def _run(device, t, x, k):
    q = dict(scale=0.5, zero_point=3) if "QUANT" in t else {}
    shape = list(x.shape)
    out = shape[:-1] + [k]
    return check("TOPK_V2", [tensor(t, shape, **q), scalar("INT32", k)],
                 [tensor(t, out, **q), tensor("TENSOR_INT32", out)], [x], device)


@pytest.mark.parametrize("t,dt", TYPES)
def test_topk_types_with_ties(cl_device, t, dt):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 6, size=(3, 2, 37)).astype(dt)  # many equal values
    values, idx = _run(cl_device, t, x, 9)
    order = np.argsort(x, axis=-1, kind="stable")[..., ::-1][..., :9]
    assert np.array_equal(idx, order)
    assert np.array_equal(values, np.take_along_axis(x, order, -1))


@pytest.mark.parametrize("n,k", [(1, 1), (5, 5), (8, 1), (1000, 17)])
def test_topk_sizes(cl_device, n, k):
    x = np.random.default_rng(n).standard_normal((4, n)).astype(np.float32)
    _run(cl_device, "TENSOR_FLOAT32", x, k)


def test_topk_nan_first(cl_device):
    x = np.array([1.0, np.nan, 3.0, np.nan, -np.inf, np.inf], np.float32)
    values, idx = _run(cl_device, "TENSOR_FLOAT32", x, 6)
    assert idx.tolist() == [3, 1, 5, 2, 0, 4]


@pytest.mark.parametrize("t,dt", [("TENSOR_FLOAT32", np.float32), ("TENSOR_INT32", np.int32)])
def test_topk_global_passes(cl_device, t, dt):
    n = MAX_LOCAL_ROW + 5  # longer than a local-memory sort: global bitonic passes
    x = np.random.default_rng(7).integers(-50, 50, size=(2, n)).astype(dt)
    _run(cl_device, t, x, 30)
