"""Fixed-point arithmetic of the org.clnn.openvx extension (docs/openvx-extension.md).

A fixed-point tensor holds raw integers r of a storage type (int8, int16, uint8) and a
fixed-point position q: its real value is ``r * 2**-q``. Sums of products are exact (int64);
the result is brought to the output position by an exact integer division rounded per the
rounding policy, then fitted to the storage type per the overflow policy. Operations with
float parameters or transcendental functions compute the real value in float64 and round it to
nearest even, saturated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# policies and enumerations, small integers (the front end maps the VX_ENUM values)
WRAP, SATURATE = 0, 1
TO_ZERO, NEAREST_EVEN = 0, 1
FLOOR, CEILING = 0, 1
POOL_MAX, POOL_AVG = 0, 1
SAME_MAP, ACROSS_MAPS = 0, 1
(LOGISTIC, HYPERBOLIC_TAN, RELU, BRELU, SOFTRELU, ABS, SQUARE, SQRT, LINEAR) = range(9)
ACTIVATION_NAMES = ("LOGISTIC", "HYPERBOLIC_TAN", "RELU", "BRELU", "SOFTRELU", "ABS", "SQUARE",
                    "SQRT", "LINEAR")


@dataclass(frozen=True)
class FixedKind:
    """A fixed-point storage type: its NumPy dtype and range."""

    name: str
    dtype: np.dtype
    bits: int
    lo: int
    hi: int


FIXED8 = FixedKind("FIXED8", np.dtype(np.int8), 8, -128, 127)
FIXED16 = FixedKind("FIXED16", np.dtype(np.int16), 16, -32768, 32767)
UFIXED8 = FixedKind("UFIXED8", np.dtype(np.uint8), 8, 0, 255)
#: extension operand type id -> kind (docs/openvx-extension.md, "Operand types")
KINDS = {0: FIXED8, 1: FIXED16, 2: UFIXED8}


def div_round(num, den, rounding: int) -> np.ndarray:
    """num / den (int64 arrays, den > 0) rounded toward zero or to nearest even, exactly."""
    num = np.asarray(num, dtype=np.int64)
    den = np.asarray(den, dtype=np.int64)
    q = np.floor_divide(num, den)
    r = num - q * den  # 0 <= r < den
    if rounding == TO_ZERO:
        return np.where((num < 0) & (r != 0), q + 1, q)
    up = (2 * r > den) | ((2 * r == den) & (q % 2 != 0))
    return np.where(up, q + 1, q)


def fit(v, kind: FixedKind, overflow: int) -> np.ndarray:
    """Fit int64 values into the kind's storage: wrap (low bits) or saturate."""
    v = np.asarray(v, dtype=np.int64)
    if overflow == SATURATE:
        return np.clip(v, kind.lo, kind.hi).astype(kind.dtype)
    span = 1 << kind.bits
    return (((v - kind.lo) % span) + kind.lo).astype(kind.dtype)


def rescale(acc, pos: int, out_pos: int, kind: FixedKind, rounding: int, overflow: int,
            divisor: int = 1) -> np.ndarray:
    """Raw values ``acc`` at position ``pos`` (divided by ``divisor``) as raw values at
    ``out_pos``: ``round(acc * 2**(out_pos - pos) / divisor)``, then fitted."""
    acc = np.asarray(acc, dtype=np.int64)
    shift = out_pos - pos
    num = acc << max(0, shift)
    den = divisor << max(0, -shift)
    return fit(div_round(num, den, rounding), kind, overflow)


def align_bias(acc, acc_pos: int, bias, bias_pos: int):
    """acc + bias exactly, both brought to the finer of the two positions; returns
    (sum, position)."""
    pos = max(acc_pos, bias_pos)
    total = np.asarray(acc, np.int64) << (pos - acc_pos)
    if bias is not None:
        total = total + (np.asarray(bias, np.int64) << (pos - bias_pos))
    return total, pos


def to_real(raw, pos: int) -> np.ndarray:
    return np.asarray(raw, dtype=np.float64) * 2.0 ** (-pos)


def from_real(y, pos: int, kind: FixedKind) -> np.ndarray:
    """Real values to raw at ``pos``: nearest even, saturated (NaN -> 0)."""
    y = np.nan_to_num(np.asarray(y, dtype=np.float64) * 2.0 ** pos, nan=0.0,
                      posinf=kind.hi, neginf=kind.lo)
    return np.clip(np.rint(y), kind.lo, kind.hi).astype(kind.dtype)


def out_size(size: int, pad: int, window: int, stride: int, rounding: int) -> int:
    """The header's down-scale size: rnd((size + 2*pad - window) / stride) + 1."""
    span = size + 2 * pad - window
    if rounding == CEILING:
        return -(-span // stride) + 1
    return span // stride + 1
