"""SVDF on OpenCL (float32, float16): the feature GEMM on the shared GEMM (weights packed once
per plan, on the device when they are model inputs), then one kernel for the output (one
work-item per unit and batch row, summing its rank filters over the memory) and one for the
shifted state (one work-item per state element). Both read the incoming state, so neither
waits for the other's writes.
"""

from __future__ import annotations

from clnn.kernels import _gemm
from clnn.kernels.lstm import (
    dims,
    expect_shapes,
    float_support,
    gemm,
    present,
    row_tile,
    stacked_weights,
)
from clnn.kernels.registry import In, Out, Unplannable, register_kernel
from clnn.kernels.support import code, f32, i32
from hal.operations.common import activation_range_float


def plan(ctx, b):
    batch, in_size = dims(ctx, 0, 2)
    filters, mem = dims(ctx, 2, 2)
    rank = int(ctx.scalar(5))
    if rank <= 0 or filters % rank:
        raise Unplannable(f"input 5 (rank) {rank} does not divide the {filters} filters")
    want = {1: (filters, in_size), 4: (batch, mem * filters)}
    if present(ctx, 3):
        want[3] = (filters // rank,)
    expect_shapes(ctx, want)  # else the reference decides (it fails or broadcasts)
    dt = code(ctx.outputs[1])
    tile = row_tile(b, batch, filters)
    feat = _gemm.scratch(b, batch * filters * 4)
    gemm(b, a=In(0), a_dt=code(ctx.inputs[0]), bpk=stacked_weights(b, ctx, [1], in_size, tile),
         c=(feat, 0), M=batch, N=filters, K=in_size, tile=tile, sam=in_size, ldc=filters)
    bias = present(ctx, 3)
    lo, hi = (f32(v) for v in activation_range_float(int(ctx.scalar(6))))
    b.launch("svdf", "svdf_out", {"dt": dt, "bias": bias}, (filters // rank, batch),
             [feat, i32(0), In(4), In(2), *([In(3)] if bias else []), Out(1), i32(rank),
              i32(mem), lo, hi])
    b.launch("svdf", "svdf_state", {"dt": dt}, (mem, filters, batch),
             [feat, i32(0), In(4), Out(0), i32(mem)])


register_kernel("SVDF", family="svdf", support=float_support, plan=plan, host_inputs=[5, 6],
                omitted_inputs=True)
