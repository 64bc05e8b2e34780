"""org.clnn.onnx FMA test cases (tests/hal/test_onnx_fma.py, tests/cl/test_cl_onnx_fma.py):
an exact rational oracle of float32 fma (fractions.Fraction, rounded to float32 by hand:
Python 3.11 has no math.fma), the double-rounding hard cases and a one-operation model."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from hal.builder import ModelBuilder

F32 = "TENSOR_FLOAT32"


def round_to_f32(v: Fraction) -> np.float32:
    """``v`` rounded to the nearest float32, ties to the even significand (finite results)."""
    c = np.float32(float(v))
    near = [np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf))]
    return min(near, key=lambda f: (abs(Fraction(float(f)) - v),
                                    int(np.asarray(f).view(np.int32)) & 1))


def oracle(x, y, z) -> np.ndarray:
    """fma of float32 arrays of one shape (flat), exactly."""
    return np.array([round_to_f32(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))
                     for a, b, c in zip(x, y, z)], np.float32)


def naive(x, y, z) -> np.ndarray:
    """The product and sum in float64, then float32: two roundings."""
    return (x.astype(np.float64) * y + z).astype(np.float32)


def midpoint_cases(rng, n: int):
    """x * y exactly halfway between two float32 values (x = 1 + a 2^-12, y = 1 + b 2^-12 with
    a, b odd and below 1024: the product, below 2, has its last bit at 2^-24, half an ulp), z
    far below the float64 ulp of the product, of either sign: the float64 sum rounds to the
    midpoint, whose ties-to-even rounding ignores z; the exact sum lies on z's side. Any x
    times any y of these is such a midpoint (hard in every pairing of a broadcast)."""
    a = rng.integers(0, 512, n) * 2 + 1
    b = rng.integers(0, 512, n) * 2 + 1
    x = (1 + a * 2.0**-12).astype(np.float32)
    y = (1 + b * 2.0**-12).astype(np.float32)
    z = (rng.choice([-1.0, 1.0], n) * 2.0 ** -rng.integers(56, 120, n)).astype(np.float32)
    sign = rng.choice([-1.0, 1.0], n).astype(np.float32)
    return sign * x, y, sign * z


def fma_model(shapes, out_shape):
    """x, y, z model inputs of ``shapes`` -> org.clnn.onnx FMA -> output of ``out_shape``."""
    b = ModelBuilder()
    op = b.get_extension_operation_type("org.clnn.onnx", 0)
    ins = [b.input(F32, s) for s in shapes]
    b.add_operation(op, ins, [b.output(F32, out_shape)])
    return b.finish()
