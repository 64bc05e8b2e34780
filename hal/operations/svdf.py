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
from hal.operations.common import input_dim as _dim
from hal.operations.context import OperationContext
from hal.operations.lstm import check_tensor_rank, given
from hal.operations.registry import register, sig

#: operand slots (the reference's kInputTensor, kWeightsFeatureTensor, ...)
INPUT, WEIGHTS_FEATURE, WEIGHTS_TIME, BIAS, STATE_IN, RANK, ACTIVATION = range(7)
STATE_OUT, OUTPUT = range(2)

SIGNATURES = [sig(v, [t] * 5 + ["INT32", "INT32"], [t, t], optional=[BIAS])
              for v, t in (("V1_0", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16"))]


def validate(ctx: OperationContext):
    for i, r, what in ((INPUT, 2, "input"), (WEIGHTS_FEATURE, 2, "weights_feature"),
                       (WEIGHTS_TIME, 2, "weights_time"), (BIAS, 1, "bias"),
                       (STATE_IN, 2, "state in")):
        check_tensor_rank(ctx, i, r, what)
    rank = ctx.scalar(RANK)
    if rank is not None:
        ctx.require(rank > 0, f"input 5 (rank) must be > 0, got {rank}")
    check_fused_activation(ctx, ACTIVATION)
    filters, mem = _dim(ctx, WEIGHTS_FEATURE, 0), _dim(ctx, WEIGHTS_TIME, 1)
    f2 = _dim(ctx, WEIGHTS_TIME, 0)
    ctx.require(not filters or not f2 or filters == f2,
                f"input 2 (weights_time) has {f2} filters, input 1 (weights_feature) {filters}")
    in1, in0 = _dim(ctx, WEIGHTS_FEATURE, 1), _dim(ctx, INPUT, 1)
    ctx.require(not in1 or not in0 or in1 == in0,
                f"input 1 (weights_feature) has input size {in1}, input 0 {in0}")
    if rank and filters:
        ctx.require(filters % rank == 0,
                    f"input 1 (weights_feature) has {filters} filters, not a multiple of "
                    f"input 5 (rank) {rank}")
        units = _dim(ctx, BIAS, 0) if given(ctx, BIAS) else 0
        ctx.require(not units or units * rank == filters,
                    f"input 3 (bias) has {units} units, expected {filters // rank}")
    st = _dim(ctx, STATE_IN, 1)
    ctx.require(not st or not mem or not filters or st == mem * filters,
                f"input 4 (state in) has {st} columns, expected memory_size * num_filters = "
                f"{mem * filters}")


def prepare(ctx: OperationContext):
    batch = _dim(ctx, INPUT, 0)
    filters, mem = _dim(ctx, WEIGHTS_FEATURE, 0), _dim(ctx, WEIGHTS_TIME, 1)
    rank = ctx.scalar(RANK) or 0
    units = filters // rank if rank > 0 else 0
    return [(batch, mem * filters), (batch, units)]


def execute(ctx: OperationContext):
    x = np.asarray(ctx.input(INPUT), dtype=np.float32)
    wf = np.asarray(ctx.input(WEIGHTS_FEATURE), dtype=np.float32)
    wt = np.asarray(ctx.input(WEIGHTS_TIME), dtype=np.float32)
    state = np.asarray(ctx.input(STATE_IN), dtype=np.float32)
    rank = int(ctx.scalar(RANK))
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
    if given(ctx, BIAS):
        out = out + np.asarray(ctx.input(BIAS), dtype=np.float32)
    out = apply_activation_float(out.astype(np.float32), ctx.scalar(ACTIVATION))
    dt = ctx.outputs[STATE_OUT].dtype  # both outputs have the input type
    return [new.reshape(batch, mem * filters).astype(dt), out.astype(dt)]


register("SVDF", execute, signatures=SIGNATURES, validate=validate, prepare=prepare,
         family="svdf")
