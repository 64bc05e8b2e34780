"""LSH_PROJECTION: locality sensitive hashing of the input rows into bits.

| input | operand                                                         |
|-------|-----------------------------------------------------------------|
| 0     | hash seeds [num_hash, num_bits] (TENSOR_FLOAT32; FLOAT16 1.2)    |
| 1     | input, rank >= 1 (FLOAT32, INT32, QUANT8_ASYMM; FLOAT16 1.2)     |
| 2     | weight [input dim 0] (float like input 0, optional)             |
| 3     | type (INT32): 1 sparse (deprecated, no offset), 2 dense,        |
|       | 3 sparse with offset k * 2^num_bits (1.2)                       |

Output (TENSOR_INT32): sparse [num_hash], one num_bits signature per hash function; dense
[num_hash * num_bits], one bit per element.

Bit j of hash function k is the sign of sum_i weight[i] * fingerprint64(seed_kj || row_i), where
seed_kj is the float32 seed's 4 bytes, row_i the raw bytes of input row i, and fingerprint64 is
farmhash's Fingerprint64 (the farmhash "na" Hash64), implemented below from its published
algorithm.
"""

from __future__ import annotations

import struct

import numpy as np

from hal.operations.context import OperationContext
from hal.operations.lstm import given
from hal.operations.registry import register, sig

M64 = (1 << 64) - 1
K0 = 0xC3A5C85C97CB3127
K1 = 0xB492B66FBE98F273
K2 = 0x9AE16A3B2F90404F
K_MUL = 0x9DDFEA08EB382D69

SPARSE_DEPRECATED, DENSE, SPARSE = 1, 2, 3


# ------------------------------------------------------------------ farmhash Fingerprint64

def _f64(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 8], "little")


def _f32(s: bytes, i: int) -> int:
    return int.from_bytes(s[i:i + 4], "little")


def _rot(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & M64


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _len16(u: int, v: int, mul: int = K_MUL) -> int:
    a = ((u ^ v) * mul) & M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & M64
    b ^= b >> 47
    return (b * mul) & M64


def _len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = K2 + n * 2
        a = (_f64(s, 0) + K2) & M64
        b = _f64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & M64
        d = ((_rot(a, 25) + b) * mul) & M64
        return _len16(c, d, mul)
    if n >= 4:
        mul = K2 + n * 2
        a = _f32(s, 0)
        return _len16((n + (a << 3)) & M64, _f32(s, n - 4), mul)
    if n > 0:
        a, b, c = s[0], s[n >> 1], s[n - 1]
        y = (a + (b << 8)) & 0xFFFFFFFF
        z = (n + (c << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * K2) ^ (z * K0)) & M64) * K2) & M64
    return K2


def _len17to32(s: bytes) -> int:
    n = len(s)
    mul = K2 + n * 2
    a = (_f64(s, 0) * K1) & M64
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & M64
    d = (_f64(s, n - 16) * K2) & M64
    return _len16((_rot((a + b) & M64, 43) + _rot(c, 30) + d) & M64,
                  (a + _rot((b + K2) & M64, 18) + c) & M64, mul)


def _len33to64(s: bytes) -> int:
    n = len(s)
    mul = K2 + n * 2
    a = (_f64(s, 0) * K2) & M64
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & M64
    d = (_f64(s, n - 16) * K2) & M64
    y = (_rot((a + b) & M64, 43) + _rot(c, 30) + d) & M64
    z = _len16(y, (a + _rot((b + K2) & M64, 18) + c) & M64, mul)
    e = (_f64(s, 16) * mul) & M64
    f = _f64(s, 24)
    g = ((y + _f64(s, n - 32)) * mul) & M64
    h = ((z + _f64(s, n - 24)) * mul) & M64
    return _len16((_rot((e + f) & M64, 43) + _rot(g, 30) + h) & M64,
                  (e + _rot((f + a) & M64, 18) + g) & M64, mul)


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = _f64(s, i), _f64(s, i + 8), _f64(s, i + 16), _f64(s, i + 24)
    a = (a + w) & M64
    b = _rot((b + a + z) & M64, 21)
    c = a
    a = (a + x + y) & M64
    b = (b + _rot(a, 44)) & M64
    return (a + z) & M64, (b + c) & M64


def fingerprint64(s: bytes) -> int:
    """farmhash::Fingerprint64 (unsigned)."""
    n = len(s)
    if n <= 16:
        return _len0to16(s)
    if n <= 32:
        return _len17to32(s)
    if n <= 64:
        return _len33to64(s)
    seed = 81
    x = seed
    y = (seed * K1 + 113) & M64
    z = (_shift_mix((y * K2 + 113) & M64) * K2) & M64
    v = (0, 0)
    w = (0, 0)
    x = (x * K2 + _f64(s, 0)) & M64
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    p = 0
    while True:
        x = (_rot((x + y + v[0] + _f64(s, p + 8)) & M64, 37) * K1) & M64
        y = (_rot((y + v[1] + _f64(s, p + 48)) & M64, 42) * K1) & M64
        x ^= w[1]
        y = (y + v[0] + _f64(s, p + 40)) & M64
        z = (_rot((z + w[0]) & M64, 33) * K1) & M64
        v = _weak32(s, p, (v[1] * K1) & M64, (x + w[0]) & M64)
        w = _weak32(s, p + 32, (z + w[1]) & M64, (y + _f64(s, p + 16)) & M64)
        z, x = x, z
        p += 64
        if p == end:
            break
    mul = K1 + ((z & 0xFF) << 1)
    p = last64
    w = ((w[0] + ((n - 1) & 63)) & M64, w[1])
    v = ((v[0] + w[0]) & M64, v[1])
    w = ((w[0] + v[0]) & M64, w[1])
    x = (_rot((x + y + v[0] + _f64(s, p + 8)) & M64, 37) * mul) & M64
    y = (_rot((y + v[1] + _f64(s, p + 48)) & M64, 42) * mul) & M64
    x ^= (w[1] * 9) & M64
    y = (y + v[0] * 9 + _f64(s, p + 40)) & M64
    z = (_rot((z + w[0]) & M64, 33) * mul) & M64
    v = _weak32(s, p, (v[1] * mul) & M64, (x + w[0]) & M64)
    w = _weak32(s, p + 32, (z + w[1]) & M64, (y + _f64(s, p + 16)) & M64)
    z, x = x, z
    return _len16((_len16(v[0], w[0], mul) + _shift_mix(y) * K0 + z) & M64,
                  (_len16(v[1], w[1], mul) + x) & M64, mul)


def _signed(h: int) -> int:
    return h - (1 << 64) if h >= (1 << 63) else h


# ------------------------------------------------------------------------------ operation

def _signatures():
    sigs = []
    for version, h, inputs in (("V1_0", "TENSOR_FLOAT32",
                                ("TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM")),
                               ("V1_2", "TENSOR_FLOAT32", ("TENSOR_FLOAT16",)),
                               ("V1_2", "TENSOR_FLOAT16",
                                ("TENSOR_FLOAT16", "TENSOR_FLOAT32", "TENSOR_INT32",
                                 "TENSOR_QUANT8_ASYMM"))):
        for t in inputs:
            sigs.append(sig(version, [h, t, h, "INT32"], ["TENSOR_INT32"], optional=[2]))
    return sigs


SIGNATURES = _signatures()


def validate(ctx: OperationContext):
    hs, xs = ctx.inputs[0].shape, ctx.inputs[1].shape
    ctx.require(len(hs) in (0, 2), f"input 0 (hash) must have rank 2, got {len(hs)}")
    ctx.require(ctx.inputs[1].value is None or len(xs) >= 1,
                "input 1 (input) must have rank >= 1")
    kind = ctx.scalar(3)
    if kind is not None:
        ctx.require(kind in (SPARSE_DEPRECATED, DENSE, SPARSE),
                    f"input 3 (type) must be 1 (sparse deprecated), 2 (dense) or 3 (sparse), "
                    f"got {kind}")
    if len(hs) == 2 and hs[1] and kind in (SPARSE_DEPRECATED, SPARSE):
        ctx.require(hs[1] <= 32, f"input 0 (hash) has {hs[1]} bits per function, at most 32 "
                                 "fit a sparse signature")
    if given(ctx, 2):
        ws = ctx.inputs[2].shape
        ctx.require(len(ws) in (0, 1), f"input 2 (weight) must have rank 1, got {len(ws)}")
        ctx.require(not ws or not xs or not ws[0] or not xs[0] or ws[0] == xs[0],
                    f"input 2 (weight) has {ws[0] if ws else 0} elements, the input has "
                    f"{xs[0] if xs else 0} rows")


def prepare(ctx: OperationContext):
    hs = ctx.inputs[0].shape
    n_hash, n_bits = (hs[0], hs[1]) if len(hs) == 2 else (0, 0)
    return [(n_hash,) if ctx.scalar(3) != DENSE else (n_hash * n_bits,)]


def execute(ctx: OperationContext):
    seeds = np.asarray(ctx.input(0), dtype=np.float32)
    x = np.ascontiguousarray(ctx.input(1))
    kind = ctx.scalar(3)
    if seeds.ndim != 2 or x.ndim < 1:
        raise ValueError("hash must have rank 2 and the input rank >= 1")
    n_hash, n_bits = seeds.shape
    rows = [x[i].tobytes() for i in range(x.shape[0])]
    weight = None
    if given(ctx, 2):
        weight = np.asarray(ctx.input(2), dtype=np.float32).reshape(-1)
        if weight.size != len(rows):
            raise ValueError(f"weight has {weight.size} elements, the input {len(rows)} rows")
    bits = np.zeros((n_hash, n_bits), dtype=np.int64)
    for k in range(n_hash):
        for j in range(n_bits):
            seed = struct.pack("<f", float(seeds[k, j]))
            score = 0.0
            for i, row in enumerate(rows):
                h = float(_signed(fingerprint64(seed + row)))
                score += h if weight is None else float(weight[i]) * h
            bits[k, j] = 1 if score > 0 else 0
    if kind == DENSE:
        return [bits.reshape(-1).astype(np.int32)]
    if kind not in (SPARSE, SPARSE_DEPRECATED):
        raise ValueError(f"unknown projection type {kind}")
    sig_ = np.zeros(n_hash, dtype=np.int64)
    for j in range(n_bits):
        sig_ = (sig_ << 1) | bits[:, j]
    if kind == SPARSE:
        sig_ = sig_ + np.arange(n_hash, dtype=np.int64) * (1 << n_bits)
    return [((sig_ + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)]


register("LSH_PROJECTION", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="lsh_projection")
