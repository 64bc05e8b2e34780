"""Seeded random org.clnn.openvx convolutions, deconvolutions and poolings (shapes, strides,
padding, dilation, up-scale, a, size rounding, positions, data types and policies drawn at
random) on both devices against the independent oracle (tests/kits/openvx_oracle.py): fixed
point bit for bit, float32 within tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits import openvx_oracle as O
from tests.kits.cl_compare import run_cl, run_ref
from tests.kits.openvx_cases import DTYPES, Case, Data, assert_matches, build, random_raw

SEEDS = range(30)


def random_case(seed: int) -> Case:
    rng = np.random.default_rng(1000 + seed)
    dt = DTYPES[rng.integers(len(DTYPES))]
    r = lambda lo, hi: int(rng.integers(lo, hi + 1))  # noqa: E731
    q = {"f32": 0}.get(dt, r(-2, 8))
    qw, qb = r(-2, 8), r(-2, 10)
    qo = q + qw - r(4, 12)  # outputs coarser than the sums: rounding and overflow both occur
    ov, ro = r(0, 1), r(0, 1)
    n, c, h, w = r(1, 2), r(1, 3), r(3, 9), r(3, 9)
    x = random_raw(rng, dt, (n, c, h, w))
    kind = ("CONVOLUTION", "DECONVOLUTION", "POOLING")[seed % 3]
    if kind == "POOLING":
        size, pad = (r(1, min(h, 4)), r(1, min(w, 4))), (r(0, 2), r(0, 2))
        pad = (min(pad[0], size[0] - 1), min(pad[1], size[1] - 1))
        stride, ceil, avg = (r(1, 3), r(1, 3)), r(0, 1), r(0, 1)
        pq = q if dt == "f32" else q - r(0, 2)
        want = O.pooling((x, q), pq, dt, avg, size, pad, stride, ceil)
        scalars = [avg, size[1], size[0], pad[1], pad[0], stride[1], stride[0], ceil]
        return Case(f"random-{seed}", kind, [Data(x, dt, q)], [("i", v) for v in scalars], dt,
                    pq, want, "exact" if dt != "f32" else "float")
    o, ky, kx = r(1, 5), r(1, 3), r(1, 3)
    wts = random_raw(rng, dt, (o, c, ky, kx))
    bias = random_raw(rng, dt, (o,)) if r(0, 1) else None
    if kind == "CONVOLUTION":
        dil = (r(0, 1), r(0, 1))
        pad = (r(0, 2), r(0, 2))
        stride, ceil = (r(1, 3), r(1, 2)), r(0, 1)
        ok = all(sz + 2 * p - (k + (k - 1) * d) >= 0
                 for sz, p, k, d in ((h, pad[0], ky, dil[0]), (w, pad[1], kx, dil[1])))
        if not ok:
            dil, pad = (0, 0), (ky, kx)
        want = O.convolution((x, q), (wts, qw), None if bias is None else (bias, qb), qo, dt,
                             pad, stride, dil, ov, ro, ceil)
        scalars = [pad[1], pad[0], stride[1], stride[0], dil[1], dil[0], ov, ro, ceil]
    else:
        up = (r(1, 3), r(1, 3))
        a = (r(0, up[0] - 1), r(0, up[1] - 1))
        pad = (r(0, ky - 1), r(0, kx - 1))
        want = O.deconvolution((x, q), (wts, qw), None if bias is None else (bias, qb), qo,
                               dt, pad, up, a, ov, ro)
        scalars = [pad[1], pad[0], up[1], up[0], a[1], a[0], ov, ro]
    data = [Data(x, dt, q), Data(wts, dt, qw, True),
            Data(bias, dt, qb, True) if bias is not None else Data(None, dt)]
    return Case(f"random-{seed}", kind, data, [("i", v) for v in scalars], dt, qo, want,
                "exact" if dt != "f32" else "float")


@pytest.mark.parametrize("seed", SEEDS)
def test_random_layers_on_both_devices(seed, cl_device):
    case = random_case(seed)
    model, feeds = build(case)
    (ref,) = run_ref(model, feeds)
    assert_matches(ref, case)
    (got,) = run_cl(model, feeds, cl_device)
    assert_matches(got, case)
