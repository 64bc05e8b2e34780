"""EMBEDDING_LOOKUP and HASHTABLE_LOOKUP on OpenCL vs the reference device: every type of the
signatures, lookups given at execution (read on the device), misses, duplicate lookups, an
index out of range failing the execution."""

from __future__ import annotations

import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.cl_compare import check, status_of
from tests.kits.one_op_models import tensor

RNG = np.random.default_rng(15)
TYPES = {"TENSOR_FLOAT32": np.float32, "TENSOR_FLOAT16": np.float16,
         "TENSOR_INT32": np.int32, "TENSOR_QUANT8_ASYMM": np.uint8,
         "TENSOR_QUANT8_ASYMM_SIGNED": np.int8}


def _q(t):
    return dict(scale=0.25, zero_point=1) if "QUANT8" in t else {}


def _values(t, shape):
    if np.dtype(TYPES[t]).kind == "f":
        return RNG.standard_normal(shape).astype(TYPES[t])
    info = np.iinfo(TYPES[t])
    return RNG.integers(max(info.min, -1000), min(info.max, 1000), shape).astype(TYPES[t])


@pytest.mark.parametrize("t", list(TYPES))
@pytest.mark.parametrize("shape", [(5, 3), (4, 2, 3)])
def test_embedding_lookup(cl_device, t, shape):
    idx = np.array([3, 0, 3, 1], np.int32)  # repeated rows too
    values = _values(t, shape)
    out = (len(idx), *shape[1:])
    check("EMBEDDING_LOOKUP", [tensor("TENSOR_INT32", [4]), tensor(t, shape, **_q(t))],
          [tensor(t, out, **_q(t))], [idx, values], cl_device, "exact")


@pytest.mark.parametrize("bad", [-1, 5])
def test_embedding_lookup_index_out_of_range_fails(cl_device, reference, bad):
    ins = [tensor("TENSOR_INT32", [2]), tensor("TENSOR_FLOAT32", [5, 2])]
    outs = [tensor("TENSOR_FLOAT32", [2, 2])]
    inputs = [np.array([0, bad], np.int32), np.zeros((5, 2), np.float32)]
    want = status_of("EMBEDDING_LOOKUP", ins, outs, inputs, reference)
    assert want == ErrorStatus.GENERAL_FAILURE
    assert status_of("EMBEDDING_LOOKUP", ins, outs, inputs, cl_device) == want
    # the flag is cleared for the next execution: a good index then succeeds
    check("EMBEDDING_LOOKUP", ins, outs, [np.array([4, 0], np.int32), inputs[1]], cl_device)


@pytest.mark.parametrize("t", ["TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM"])
@pytest.mark.parametrize("rows", [(2,), (3,)])
def test_hashtable_lookup(cl_device, t, rows):
    keys = np.array([-7, 0, 3, 8, 20, 21], np.int32)
    lookups = np.array([21, 5, -7, 3, 3, 100, -100, 20], np.int32)  # hits, misses, repeats
    values = _values(t, (len(keys), *rows))
    hits = tensor("TENSOR_QUANT8_ASYMM", [8], scale=1.0)
    check("HASHTABLE_LOOKUP", [tensor("TENSOR_INT32", [8]), tensor("TENSOR_INT32", [6]),
                               tensor(t, values.shape, **_q(t))],
          [tensor(t, (8, *rows), **_q(t)), hits], [lookups, keys, values], cl_device, "exact")


def test_hashtable_lookup_of_one_dimensional_values(cl_device):
    keys = np.arange(0, 40, 4, dtype=np.int32)
    lookups = RNG.integers(-2, 42, 64).astype(np.int32)
    values = RNG.standard_normal(10).astype(np.float32)
    check("HASHTABLE_LOOKUP", [tensor("TENSOR_INT32", [64]), tensor("TENSOR_INT32", [10]),
                               tensor("TENSOR_FLOAT32", [10])],
          [tensor("TENSOR_FLOAT32", [64]), tensor("TENSOR_QUANT8_ASYMM", [64], scale=1.0)],
          [lookups, keys, values], cl_device, "exact")
