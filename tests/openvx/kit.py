"""Making tensors and running one-node graphs for the node tests."""

from __future__ import annotations

import numpy as np

from clnn import openvx as vx
from tests.openvx import oracles

KINDS = {"FLOAT32": vx.VX_TYPE_FLOAT32, "INT8": vx.VX_TYPE_INT8, "INT16": vx.VX_TYPE_INT16,
         "UINT8": vx.VX_TYPE_UINT8}
FIXED = ("INT8", "INT16", "UINT8")
#: raw ranges for arithmetic nodes: small enough that sums land near the type's range
SMALL = {"INT8": (-40, 40), "INT16": (-2500, 2500), "UINT8": (0, 50)}
OVERFLOW = {"WRAP": vx.VX_CONVERT_POLICY_WRAP, "SATURATE": vx.VX_CONVERT_POLICY_SATURATE}
ROUNDING = {"TO_ZERO": vx.VX_ROUND_POLICY_TO_ZERO,
            "TO_NEAREST_EVEN": vx.VX_ROUND_POLICY_TO_NEAREST_EVEN}
#: (overflow, rounding) pairs: all four for the nodes with policies
POLICIES = [(o, r) for o in OVERFLOW for r in ROUNDING]


def data(rng, kind: str, shape, full: bool = False) -> np.ndarray:
    """Raw data: floats in [-1, 1), or integers in SMALL (``full``: the whole type range)."""
    if kind == "FLOAT32":
        return rng.uniform(-1, 1, shape).astype(np.float32)
    dtype, lo, hi = oracles.BITS[kind]
    if not full:
        lo, hi = SMALL[kind]
    raw = rng.integers(lo, hi + 1, shape)
    if kind == "UINT8" and not full:
        # unsigned sums crowd around their mean: zeros spread them over the range
        raw = raw * (rng.random(shape) < 0.4)
    return raw.astype(dtype)


def tensor(ctx, kind: str, array, q: int = 0):
    t = ctx.create_tensor(list(np.shape(array)), KINDS[kind], q if kind != "FLOAT32" else 0)
    t.write(array)
    return t


def output(ctx, kind: str, dims, q: int = 0):
    return ctx.create_tensor(list(dims), KINDS[kind], q if kind != "FLOAT32" else 0)


def _candidates(acc, position: int, kind: str) -> list[int]:
    """Output positions below ``position`` (so rounding acts), those where some results, at
    most about a third, overflow the type first (largest first)."""
    _, lo, hi = oracles.BITS[kind]
    a = np.asarray(acc, dtype=np.float64)
    bits = 8 if kind != "INT16" else 16
    good, other = [], []
    for q in range(min(position - 1, bits - 1), -1, -1):
        scaled = a * 2.0 ** (q - position)
        over = float(np.mean((scaled > hi) | (scaled < lo)))
        (good if 0 < over <= 0.35 else other).append(q)
    return good + other


def fixed_result(acc, position, kind, overflow, rounding):
    """(expected raw output, its position) of an accumulator: the first output position
    where the case exercises both policies (the other overflow policy and the other rounding
    policy would each change some result)."""
    for q in _candidates(acc, position, kind):
        got = oracles.convert(acc, position, q, kind, rounding, overflow)
        other_o = oracles.convert(acc, position, q, kind, rounding,
                                  "WRAP" if overflow == "SATURATE" else "SATURATE")
        other_r = oracles.convert(acc, position, q, kind,
                                  "TO_ZERO" if rounding == "TO_NEAREST_EVEN" else
                                  "TO_NEAREST_EVEN", overflow)
        if (got != other_o).any() and (got != other_r).any():
            return got, q
    raise AssertionError("no output position makes the case overflow and round: the "
                         "policies would be untested")


def run(graph, out):
    graph.process()
    return out.read()


def assert_float(got, expect, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got, np.float64), expect, rtol=rtol, atol=atol)


def assert_lsb(got, expect, lsb: int = 1):
    """Fixed point within ``lsb`` (0: bit exact)."""
    diff = np.abs(np.asarray(got, np.int64) - np.asarray(expect, np.int64))
    assert diff.max(initial=0) <= lsb, f"{int((diff > lsb).sum())} elements off by up to " \
                                       f"{int(diff.max())} LSB"
