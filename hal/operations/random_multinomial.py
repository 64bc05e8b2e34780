"""RANDOM_MULTINOMIAL: draw class indexes from softmax(logits) (HAL 1.2).

| input | operand                                                              |
|-------|----------------------------------------------------------------------|
| 0     | logits [batches, classes] (unnormalized log-probabilities)            |
| 1     | INT32 number of samples per batch (> 0)                              |
| 2     | TENSOR_INT32 seeds [2]; both 0: seeded from the executor's generator |
| out 0 | TENSOR_INT32 samples [batches, samples]                              |

Types: TENSOR_FLOAT32, TENSOR_FLOAT16. The same non-zero seeds give the same samples, so
executions are repeatable; the draws are inverse-CDF samples of softmax(logits) in float64.

The generator is Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC 2011; the Random123 constants), counter-based so that every sample is a function of its
position alone and any device computes the same numbers however it splits the work (the
OpenCL kernel clnn/templates/random_multinomial.cl.mako uses this exact scheme):

- key (k0, k1) = the two seeds as uint32; counter (s // 4, batch, stream, 0) for sample s,
  which takes word s % 4 of the block; stream 0 for seeded draws;
- u = (word >> 8) * 2^-24, a float in [0, 1) exact in float32; the sample is the first class
  whose cumulative exp(logit - max) exceeds u * total (at most the last class).

Seeds (0, 0) ask for unseeded draws: stream 1 and a key from the executor's NumPy generator
(the OpenCL device counts its executions instead), so they differ between executions.
"""

from __future__ import annotations

import numpy as np

from hal.errors import GeneralFailure
from hal.operations.common import check_rank
from hal.operations.context import OperationContext
from hal.operations.registry import register, sig

SIGNATURES = [sig("V1_2", [t, "INT32", "TENSOR_INT32"], ["TENSOR_INT32"])
              for t in ("TENSOR_FLOAT32", "TENSOR_FLOAT16")]


def validate(ctx: OperationContext):
    check_rank(ctx, 0, 2)
    check_rank(ctx, 2, 1)
    seeds = ctx.input_shape(2)
    if len(seeds) == 1 and seeds[0]:
        ctx.require(seeds[0] == 2, f"input 2 (seeds) must have shape [2], got {list(seeds)}")
    n = ctx.scalar(1)
    ctx.require(n is None or n > 0, f"input 1 (number of samples) must be > 0, got {n}")


def prepare(ctx: OperationContext):
    n = ctx.scalar(1)
    shape = ctx.input_shape(0)
    if n is None or len(shape) != 2:
        return None
    return [(shape[0], n)]


PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def philox4x32(counters: np.ndarray, key) -> np.ndarray:
    """Philox4x32-10 of uint32 counter blocks [n, 4] under key (k0, k1): uint32 [n, 4]."""
    c = [counters[:, j].astype(np.uint64) for j in range(4)]
    k0, k1 = np.uint64(int(key[0]) & 0xFFFFFFFF), np.uint64(int(key[1]) & 0xFFFFFFFF)
    mask, m0, m1 = np.uint64(0xFFFFFFFF), np.uint64(PHILOX_M[0]), np.uint64(PHILOX_M[1])
    for r in range(10):
        if r:
            k0, k1 = (k0 + np.uint64(PHILOX_W[0])) & mask, (k1 + np.uint64(PHILOX_W[1])) & mask
        p0, p1 = m0 * c[0], m1 * c[2]  # 32 x 32 -> 64 bits: exact in uint64
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & mask, (p0 >> np.uint64(32)) ^ c[3] ^ k1,
             p0 & mask]
    return np.stack(c, axis=1).astype(np.uint32)


def uniforms(key, batch: int, n: int, stream: int = 0) -> np.ndarray:
    """The n uniforms in [0, 1) of one batch (see the module docstring)."""
    blocks = (n + 3) // 4
    ctr = np.zeros((blocks, 4), np.uint32)
    ctr[:, 0] = np.arange(blocks, dtype=np.uint32)
    ctr[:, 1], ctr[:, 2] = batch, stream
    words = philox4x32(ctr, key).reshape(-1)[:n]
    return (words >> np.uint32(8)).astype(np.float64) * 2.0 ** -24


def execute(ctx: OperationContext):
    logits = ctx.input(0).astype(np.float64)
    n = int(ctx.scalar(1))
    seeds = ctx.input(2).reshape(-1)
    if logits.ndim != 2 or seeds.size != 2 or n <= 0:
        raise GeneralFailure(f"{ctx.name}: logits {list(logits.shape)}, {seeds.size} seeds and "
                             f"{n} samples")
    batches, classes = logits.shape
    if batches and classes == 0:
        raise GeneralFailure(f"{ctx.name}: there are no classes to draw from")
    key, stream = tuple(int(v) & 0xFFFFFFFF for v in seeds), 0
    if key == (0, 0):  # unseeded: a fresh key from the executor's generator
        rng = ctx.executor.rng if ctx.executor is not None else np.random.default_rng()
        key, stream = tuple(int(v) for v in rng.integers(0, 1 << 32, 2)), 1
    out = np.zeros((batches, n), dtype=np.int32)
    for b in range(batches):
        row = logits[b]
        with np.errstate(all="ignore"):
            p = np.exp(row - np.max(row))
            cdf = np.cumsum(p)
        total = cdf[-1]
        if not np.isfinite(total) or total <= 0:
            raise GeneralFailure(f"{ctx.name}: batch {b} has no finite probability mass")
        u = uniforms(key, b, n, stream) * total
        out[b] = np.minimum(np.searchsorted(cdf, u, side="right"), classes - 1)
    return [out]


register("RANDOM_MULTINOMIAL", execute, signatures=SIGNATURES, validate=validate,
         prepare=prepare, family="random_multinomial")
