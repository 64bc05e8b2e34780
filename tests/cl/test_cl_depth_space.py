"""DEPTH_TO_SPACE, SPACE_TO_DEPTH on OpenCL vs the reference device: NHWC and NCHW, block
sizes 2 and 3, round trips, every stored type; channel counts whose contiguous runs the strided
copy moves element by element, in vectors of 4 and of 16 (support.copy_vector; runs of 16 or
more that 16 does not divide: the last vector overlapping the one before it)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import scalar, tensor


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback and without the layout pass (clnn/layout.py, tested
    in test_cl_layout.py and by the CTS): this module's NCHW cases run the NCHW kernels."""
    return open_or_skip("opencl", fallback=False, nhwc=False)


@pytest.mark.parametrize("c", [3, 4, 16])
@pytest.mark.parametrize("nchw", [False, True])
@pytest.mark.parametrize("bs", [2, 3])
@pytest.mark.parametrize("t,dt", [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16),
                                  ("TENSOR_QUANT8_ASYMM", np.uint8)])
def test_round_trip(cl_device, nchw, bs, t, dt, c):
    q = dict(scale=0.5, zero_point=0) if "QUANT" in t else {}
    n, h, w = 2, 2 * bs, 3 * bs
    small = [n, h // bs, w // bs, c * bs * bs]
    big = [n, h, w, c]
    if nchw:
        small = [small[0], small[3], small[1], small[2]]
        big = [big[0], big[3], big[1], big[2]]
    x = (np.arange(np.prod(big)) % 251).astype(dt).reshape(big)
    (s,) = check("SPACE_TO_DEPTH", [tensor(t, big, **q), scalar("INT32", bs),
                                    scalar("BOOL", nchw)], [tensor(t, small, **q)], [x],
                 cl_device, "exact")
    (y,) = check("DEPTH_TO_SPACE", [tensor(t, small, **q), scalar("INT32", bs),
                                    scalar("BOOL", nchw)], [tensor(t, big, **q)], [s],
                 cl_device, "exact")
    np.testing.assert_array_equal(y, x)


def test_copy_vectors():
    from clnn.kernels.support import copy_vector

    assert copy_vector(48, 1, 1) == 16 and copy_vector(12, 1, 1) == 4
    assert copy_vector(6, 1, 1) == 1 and copy_vector(32, 2, 1) == 1 and copy_vector(32, 1, 3) == 1
    # runs of 16 or more: 16 at a time, the last vector overlapping the one before it
    assert copy_vector(24, 1, 1) == copy_vector(294, 1, 1) == copy_vector(17, 1, 1) == 16


@pytest.mark.parametrize("runs", [(17, 24), (294, 16), (40, 7)])
@pytest.mark.parametrize("t,dt", [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16),
                                  ("TENSOR_QUANT8_ASYMM", np.uint8)])
def test_copy_runs_not_a_multiple_of_the_vector(cl_device, runs, t, dt):
    """CONCATENATION along the last axis: each input's contiguous run (its last dimension)
    copied 16 elements at a time where it holds 16, its last vector overlapping the one
    before it where 16 does not divide it, into its slab of the output; exact."""
    q = dict(scale=0.5, zero_point=3) if "QUANT" in t else {}
    rng = np.random.default_rng(sum(runs))
    xs = [(rng.integers(0, 250, (2, 3, r))).astype(dt) for r in runs]
    (y,) = check("CONCATENATION", [*[tensor(t, list(x.shape), **q) for x in xs],
                                   scalar("INT32", 2)],
                 [tensor(t, [2, 3, sum(runs)], **q)], xs, cl_device, "exact")
    np.testing.assert_array_equal(y, np.concatenate(xs, axis=2))
