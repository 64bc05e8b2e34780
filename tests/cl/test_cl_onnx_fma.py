"""org.clnn.onnx FMA on the OpenCL device (no fallback: its kernel, onnx_fma.cl.mako, runs):
OpenCL C's fma is correctly rounded, so the bits equal the reference's exact emulation on the
double-rounding hard cases, random triples, the special values and broadcast shapes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import run_cl, run_ref
from tests.kits.onnx_fma_cases import fma_model, midpoint_cases, naive

RNG = np.random.default_rng(3839)


def _same_bits(got, want):
    assert got.shape == want.shape
    assert np.array_equal(got.view(np.int32), want.view(np.int32)), \
        int(np.count_nonzero(got.view(np.int32) != want.view(np.int32)))


@pytest.mark.parametrize("shapes", [((3000,),) * 3, ((1, 3, 4, 5), (1,), (3, 1, 1)),
                                    ((4, 5), (3, 1, 5), (1,)), ((2, 1, 6, 1), (7,), (1, 1, 7))])
def test_midpoints_on_opencl(cl_device, shapes):
    out = tuple(int(d) for d in np.broadcast_shapes(*shapes))
    model = fma_model(shapes, out)
    args = [midpoint_cases(RNG, int(np.prod(s)))[k].reshape(s) for k, s in enumerate(shapes)]
    (got,) = run_cl(model, args, cl_device)
    (want,) = run_ref(model, args)
    _same_bits(got, want)
    flat = [np.broadcast_to(a, out).reshape(-1) for a in args]
    assert (naive(*flat) != want.reshape(-1)).any()  # two roundings would differ


def test_random_and_special_values_on_opencl(cl_device):
    n = 4096
    x = (RNG.choice([-1.0, 1.0], n) * RNG.uniform(1, 2, n) *
         2.0 ** RNG.integers(-70, 60, n)).astype(np.float32)
    y = (RNG.uniform(1, 2, n) * 2.0 ** RNG.integers(-70, 60, n)).astype(np.float32)
    z = (-(x.astype(np.float64) * y) * (1 + RNG.uniform(-1e-6, 1e-6, n))).astype(np.float32)
    big = np.finfo(np.float32).max
    special = np.array([[np.inf, 0, 1], [np.inf, 1, -np.inf], [1, 1, np.inf], [big, 10, 0],
                        [big, 1, 2.0**103], [2, 3, -6], [-1, 0, -0.0], [1e-30, 1e-10, 0]],
                       np.float32)
    x, y, z = (np.concatenate([v, special[:, k]]) for k, v in enumerate((x, y, z)))
    model = fma_model([x.shape] * 3, x.shape)
    (got,) = run_cl(model, [x, y, z], cl_device)
    (want,) = run_ref(model, [x, y, z])
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    _same_bits(got[~nan], want[~nan])
