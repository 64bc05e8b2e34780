"""LSH_PROJECTION on OpenCL vs the reference device, bit for bit: every input type, row sizes
that take each farmhash Fingerprint64 path (seed || row of 5..16, 17..32, 33..64 and > 64
bytes), with and without weights, sparse / dense / deprecated sparse, float16 seeds."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import omitted, scalar, tensor

RNG = np.random.default_rng(7)
INPUTS = {"TENSOR_FLOAT32": np.float32, "TENSOR_FLOAT16": np.float16,
          "TENSOR_INT32": np.int32, "TENSOR_QUANT8_ASYMM": np.uint8}


def _x(t, shape):
    if np.dtype(INPUTS[t]).kind == "f":
        return RNG.standard_normal(shape).astype(INPUTS[t])
    return RNG.integers(0, 200, shape).astype(INPUTS[t])


def _lsh(cl_device, t, x_shape, kind, weighted, n_hash=4, n_bits=3, h="TENSOR_FLOAT32"):
    seeds = RNG.standard_normal((n_hash, n_bits)).astype(np.float16 if "16" in h else np.float32)
    ins = [tensor(h, [n_hash, n_bits], seeds), tensor(t, x_shape,
                                                      **({"scale": 0.5} if "QUANT" in t else {}))]
    inputs = [_x(t, x_shape)]
    if weighted:
        ins.append(tensor(h, [x_shape[0]]))
        inputs.append(RNG.standard_normal(x_shape[0]).astype(seeds.dtype))
    else:
        ins.append(omitted(h))
    ins.append(scalar("INT32", kind))
    out = [n_hash * n_bits] if kind == 2 else [n_hash]
    check("LSH_PROJECTION", ins, [tensor("TENSOR_INT32", out)], inputs, cl_device, "exact")


# row bytes: quant8 [r, 1..3] -> 5..7 bytes with the seed; float32 [r, 3] 16; [r, 6] 28;
# [r, 12] 52; [r, 40] 164
@pytest.mark.parametrize("t,x_shape", [
    ("TENSOR_QUANT8_ASYMM", (3, 1)), ("TENSOR_QUANT8_ASYMM", (3, 3)),
    ("TENSOR_FLOAT32", (3, 3)), ("TENSOR_INT32", (5, 6)), ("TENSOR_FLOAT16", (4, 24)),
    ("TENSOR_FLOAT32", (3, 40)), ("TENSOR_FLOAT32", (6,)), ("TENSOR_INT32", (2, 3, 7))])
@pytest.mark.parametrize("kind", [1, 2, 3])
def test_lsh_projection(cl_device, t, x_shape, kind):
    _lsh(cl_device, t, x_shape, kind, weighted=True)


@pytest.mark.parametrize("kind", [2, 3])
def test_lsh_projection_without_weights(cl_device, kind):
    _lsh(cl_device, "TENSOR_FLOAT32", (5, 4), kind, weighted=False)


@pytest.mark.parametrize("weighted", [True, False])
def test_lsh_projection_float16_seeds(cl_device, weighted):
    _lsh(cl_device, "TENSOR_INT32", (3, 2), 2, weighted, h="TENSOR_FLOAT16")


def test_lsh_projection_offset_signatures_wrap(cl_device):
    """32 bits per hash function: the offset k * 2^32 wraps to int32 as on the reference."""
    _lsh(cl_device, "TENSOR_FLOAT32", (4, 2), 3, weighted=True, n_hash=3, n_bits=32)
