"""RANDOM_MULTINOMIAL: draw class indexes from softmax(logits) (HAL 1.2).

| input | operand                                                              |
|-------|----------------------------------------------------------------------|
| 0     | logits [batches, classes] (unnormalized log-probabilities)            |
| 1     | INT32 number of samples per batch (> 0)                              |
| 2     | TENSOR_INT32 seeds [2]; both 0: seeded from the executor's generator |
| out 0 | TENSOR_INT32 samples [batches, samples]                              |

Types: TENSOR_FLOAT32, TENSOR_FLOAT16. The same non-zero seeds give the same samples, so
executions are repeatable; the draws are inverse-CDF samples of softmax(logits) in float64.
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
    s0, s1 = (int(v) & 0xFFFFFFFF for v in seeds)
    rng = ctx.executor.rng if (s0, s1) == (0, 0) and ctx.executor is not None \
        else np.random.default_rng([s0, s1])
    out = np.zeros((batches, n), dtype=np.int32)
    for b in range(batches):
        row = logits[b]
        with np.errstate(all="ignore"):
            p = np.exp(row - np.max(row))
            cdf = np.cumsum(p)
        total = cdf[-1]
        if not np.isfinite(total) or total <= 0:
            raise GeneralFailure(f"{ctx.name}: batch {b} has no finite probability mass")
        u = rng.random(n) * total
        out[b] = np.minimum(np.searchsorted(cdf, u, side="right"), classes - 1)
    return [out]


register("RANDOM_MULTINOMIAL", execute, signatures=SIGNATURES, validate=validate,
         prepare=prepare, family="random_multinomial")
