"""SVDF: singular value decomposition filter, a stateful two-stage filter (float32; f16 1.2).

| input | operand                                                           |
|-------|-------------------------------------------------------------------|
| 0     | input [batch, input_size]                                         |
| 1     | weights_feature [num_filters, input_size], num_filters = units*rank |
| 2     | weights_time [num_filters, memory_size]                           |
| 3     | bias [units] (optional)                                           |
| 4     | state in [batch, memory_size * num_filters]                       |
| 5     | rank (INT32 > 0)                                                  |
| 6     | fused activation (INT32 0..3)                                     |

Outputs: state out (like state in), output [batch, units].

The state holds, per filter, memory_size feature activations, oldest first, the last slot
empty. A step writes the new activation (input @ weights_feature) into the last slot, reduces
the memory with weights_time, sums the rank filters of a unit, and returns the memory shifted
left by one (as the NNAPI/TFLite reference does).
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import apply_activation_float, check_fused_activation
from hal.operations.context import OperationContext
from hal.operations.lstm import check_tensor_rank, given
from hal.operations.registry import register, sig

SIGNATURES = [sig(v, [t] * 5 + ["INT32", "INT32"], [t, t], optional=[3])
              for v, t in (("V1_0", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16"))]


def _dim(ctx, i, k):
    s = ctx.inputs[i].shape
    return s[k] if ctx.has_input(i) and k < len(s) else 0


def validate(ctx: OperationContext):
    for i, r, what in ((0, 2, "input"), (1, 2, "weights_feature"), (2, 2, "weights_time"),
                       (3, 1, "bias"), (4, 2, "state in")):
        check_tensor_rank(ctx, i, r, what)
    rank = ctx.scalar(5)
    if rank is not None:
        ctx.require(rank > 0, f"input 5 (rank) must be > 0, got {rank}")
    check_fused_activation(ctx, 6)
    filters, mem = _dim(ctx, 1, 0), _dim(ctx, 2, 1)
    f2 = _dim(ctx, 2, 0)
    ctx.require(not filters or not f2 or filters == f2,
                f"input 2 (weights_time) has {f2} filters, input 1 (weights_feature) {filters}")
    in1, in0 = _dim(ctx, 1, 1), _dim(ctx, 0, 1)
    ctx.require(not in1 or not in0 or in1 == in0,
                f"input 1 (weights_feature) has input size {in1}, input 0 {in0}")
    if rank and filters:
        ctx.require(filters % rank == 0,
                    f"input 1 (weights_feature) has {filters} filters, not a multiple of "
                    f"input 5 (rank) {rank}")
        units = _dim(ctx, 3, 0) if given(ctx, 3) else 0
        ctx.require(not units or units * rank == filters,
                    f"input 3 (bias) has {units} units, expected {filters // rank}")
    st = _dim(ctx, 4, 1)
    ctx.require(not st or not mem or not filters or st == mem * filters,
                f"input 4 (state in) has {st} columns, expected memory_size * num_filters = "
                f"{mem * filters}")


def prepare(ctx: OperationContext):
    batch = _dim(ctx, 0, 0)
    filters, mem = _dim(ctx, 1, 0), _dim(ctx, 2, 1)
    rank = ctx.scalar(5) or 0
    units = filters // rank if rank > 0 else 0
    return [(batch, mem * filters), (batch, units)]


def execute(ctx: OperationContext):
    x = np.asarray(ctx.input(0), dtype=np.float32)
    wf = np.asarray(ctx.input(1), dtype=np.float32)
    wt = np.asarray(ctx.input(2), dtype=np.float32)
    state = np.asarray(ctx.input(4), dtype=np.float32)
    rank = int(ctx.scalar(5))
    if rank <= 0:
        raise ValueError(f"rank must be > 0, got {rank}")
    batch = x.shape[0]
    filters, mem = wt.shape
    if wf.shape != (filters, x.shape[1]) or filters % rank:
        raise ValueError(f"weights_feature {list(wf.shape)} / weights_time {list(wt.shape)} "
                         f"do not fit input {list(x.shape)} and rank {rank}")
    if state.shape != (batch, mem * filters):
        raise ValueError(f"state has shape {list(state.shape)}, expected "
                         f"[{batch}, {mem * filters}]")
    units = filters // rank
    s = state.reshape(batch, filters, mem)
    # the reference writes the new activation into the last slot of the incoming state,
    # filters, then shifts the memory left (the state out ends with an empty slot)
    cur = s.copy()
    cur[:, :, -1] = x @ wf.T
    scratch = np.einsum("bfm,fm->bf", cur, wt)
    new = np.zeros_like(s)
    new[:, :, :-1] = cur[:, :, 1:]
    out = scratch.reshape(batch, units, rank).sum(axis=2)
    if given(ctx, 3):
        out = out + np.asarray(ctx.input(3), dtype=np.float32)
    out = apply_activation_float(out.astype(np.float32), ctx.scalar(6))
    dt = ctx.outputs[0].dtype
    return [new.reshape(batch, mem * filters).astype(dt), out.astype(dt)]


register("SVDF", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="svdf")
