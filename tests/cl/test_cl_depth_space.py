"""DEPTH_TO_SPACE, SPACE_TO_DEPTH on OpenCL vs the reference device: NHWC and NCHW, block
sizes 2 and 3, round trips, every stored type."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import scalar, tensor


@pytest.mark.parametrize("nchw", [False, True])
@pytest.mark.parametrize("bs", [2, 3])
@pytest.mark.parametrize("t,dt", [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16),
                                  ("TENSOR_QUANT8_ASYMM", np.uint8)])
def test_round_trip(cl_device, nchw, bs, t, dt):
    q = dict(scale=0.5, zero_point=0) if "QUANT" in t else {}
    n, h, w, c = 2, 2 * bs, 3 * bs, 3
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
