"""org.clnn.onnx FMA on the reference device (hal/operations/onnx_fma.py): the exact float32
fused multiply-add fma_float32 against an exact rational oracle (tests/kits/onnx_fma_cases.py)
on the double-rounding hard cases, random triples over the whole exponent range, subnormal
results and the special values; then the operation (broadcasting, validation) in a model."""

from __future__ import annotations

import numpy as np
import pytest

from hal.builder import make_request, read_outputs
from hal.errors import BuilderError
from hal.operations.onnx_fma import fma_float32
from tests.kits.onnx_fma_cases import fma_model, midpoint_cases, naive, oracle

RNG = np.random.default_rng(3838)


def test_midpoints_round_once():
    x, y, z = midpoint_cases(RNG, 2000)
    assert (np.abs(x.astype(np.float64) * y) < 2).all()
    want = oracle(x, y, z)
    assert np.array_equal(fma_float32(x, y, z), want)
    # the cases are hard: two roundings get about half of them wrong
    assert (naive(x, y, z) != want).mean() > 0.3


def test_random_triples_over_the_exponent_range():
    n = 4000
    def value(lo, hi):
        return (RNG.choice([-1.0, 1.0], n) * RNG.uniform(1, 2, n) *
                2.0 ** RNG.integers(lo, hi, n)).astype(np.float32)
    x, y = value(-70, 60), value(-70, 60)
    z = np.where(RNG.random(n) < 0.5, value(-140, 120),
                 -(x.astype(np.float64) * y * (1 + RNG.uniform(-1e-6, 1e-6, n)))).astype(np.float32)
    got = fma_float32(x, y, z)
    assert np.array_equal(got, oracle(x, y, z))
    assert np.isfinite(got).all()


def test_quantized_add_like_triples():
    """The QLinearAdd step: 8-bit integers times a scale ratio plus a float32."""
    n = 4000
    x = RNG.integers(-128, 256, n).astype(np.float32)
    y = (RNG.choice([0.25, 0.5, 1.5], n) * (1 + RNG.uniform(-1e-5, 1e-5, n))).astype(np.float32)
    z = (RNG.integers(-300, 300, n) + RNG.uniform(-1, 1, n)).astype(np.float32)
    assert np.array_equal(fma_float32(x, y, z), oracle(x, y, z))


def test_subnormal_results():
    n = 2000
    x = (RNG.uniform(1, 2, n) * 2.0 ** RNG.integers(-80, -60, n)).astype(np.float32)
    y = (RNG.choice([-1.0, 1.0], n) * RNG.uniform(1, 2, n) *
         2.0 ** RNG.integers(-80, -60, n)).astype(np.float32)
    z = (RNG.choice([-1.0, 1.0], n) * RNG.integers(0, 1 << 20, n) * 2.0**-149).astype(np.float32)
    got = fma_float32(x, y, z)
    assert (np.abs(got) < np.finfo(np.float32).tiny).mean() > 0.5
    assert np.array_equal(got, oracle(x, y, z))


def test_special_values():
    inf, nan, big = np.float32(np.inf), np.float32(np.nan), np.finfo(np.float32).max
    half_ulp = np.float32(2.0**103)  # half an ulp of FLT_MAX: the tie rounds to even, up
    cases = [  # x, y, z, fma
        (inf, 0, 1, nan), (inf, 1, -inf, nan), (1, 1, inf, inf), (nan, 1, 1, nan),
        (big, 10, 0, inf), (big, 1, half_ulp, inf), (big, 1, np.float32(2.0**102), big),
        (2, 3, -6, 0), (-1, 0, 0, 0), (-1, 0, -0.0, -0.0), (-inf, 2, 5, -inf),
    ]
    x, y, z, want = (np.array(c, np.float32) for c in zip(*cases))
    got = fma_float32(x, y, z)
    assert np.array_equal(got, want, equal_nan=True)
    numbers = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


@pytest.mark.parametrize("shapes", [((2, 3, 4, 5),) * 3, ((1, 3, 4, 5), (1,), (3, 1, 1)),
                                    ((4, 5), (3, 1, 5), (1,)), ((7,), (7,), (2, 1))])
def test_the_operation_broadcasts(reference, shapes):
    """Any x of midpoint_cases times any y is a midpoint too: hard cases in every pairing."""
    out = np.broadcast_shapes(*shapes)
    model = fma_model(shapes, out)
    args = [midpoint_cases(RNG, int(np.prod(s)))[k].reshape(s) for k, s in enumerate(shapes)]
    prepared = reference.prepare_model(model)
    req = make_request(model, args)
    r = prepared.execute_synchronously(req)
    assert r.status == 0, r.message
    got = read_outputs(model, req, r.output_shapes)[0]
    want = oracle(*(np.broadcast_to(a, out).reshape(-1) for a in args)).reshape(out)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("shapes,out,message", [
    (((2, 3), (4, 3), (1,)), (4, 3), "cannot be broadcast"),
    (((1, 1, 1, 1, 2), (2,), (2,)), (1, 1, 1, 1, 2), "rank <= 4"),
])
def test_validation_names_the_problem(shapes, out, message):
    """The builder's finish() validates the model (BAD_DATA with validate_model's reason)."""
    with pytest.raises(BuilderError, match=f"org.clnn.onnx:FMA .*{message}"):
        fma_model(shapes, out)
