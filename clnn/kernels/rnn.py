"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN on OpenCL (float32,
float16): h_t = activation(x_t @ W^T + h_{t-1} @ R^T + b), the time loop on the device.

Before the loop one GEMM computes x @ W^T + b for every step into a float32 [steps, batch,
units] buffer (an aux input with cross-linking weights adds a second GEMM into it); each step
is then one GEMM h_{t-1} @ R^T whose epilogue adds that step's block and clamps with the fused
activation, into a float32 state (two buffers used in turn: a GEMM must not read the rows it
writes), and one copy into the output sequence in its type (time- or batch-major, merged
bidirectional outputs). Weights are packed once per plan (clnn/kernels/lstm.py helpers).
"""

from __future__ import annotations

from dataclasses import dataclass

from clnn.kernels import _gemm
from clnn.kernels.lstm import (
    dims,
    expect_shapes,
    float_support,
    gemm,
    present,
    ref,
    row_tile,
    same_time_and_batch,
    stack_rows,
    stacked_weights,
)
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import code, f32, i32
from hal.operations.common import activation_range_float


@dataclass
class Direction:
    w: int                    # input weights; recurrent weights, bias, hidden state follow
    x: int                    # the sequence input
    y: int | None             # output sequence
    y_col: int = 0
    y_width: int = 0
    h_out: int | None = None
    aux: int | None = None    # aux input (cross-linking)
    aux_w: int | None = None  # its weights
    reverse: bool = False


def copy_rows(b, src, dst, dt: str, cols: int, rows: int, sstride: int, dstride: int):
    b.launch("rnn", "copy_rows", {"dt": dt}, (cols, rows),
             [src[0], i32(src[1]), i32(sstride), dst[0], i32(dst[1]), i32(dstride)])


def plan_direction(b, ctx, d: Direction, *, act: int, steps: int, batch: int,
                   time_major: bool):
    units = dims(ctx, d.w, 2)[0]
    x_shape = tuple(ctx.inputs[d.x].shape)  # rank 2 (RNN) or 3, as validated
    in_size = x_shape[-1] if x_shape else 0
    want = {d.w: (units, in_size), d.w + 1: (units, units), d.w + 2: (units,),
            d.w + 3: (batch, units)}
    if d.aux is not None:
        want[d.aux_w] = (units, same_time_and_batch(ctx, d.aux, d.x)[2])
    expect_shapes(ctx, want)  # else the reference decides (it fails on these)
    odt = code(ctx.outputs[0])
    rows = steps * batch
    xt = row_tile(b, rows, units)
    xpre = _gemm.scratch(b, rows * units * 4)
    bias = In(d.w + 2)
    if code(ctx.inputs[d.w + 2]) != "f32":  # the GEMM epilogue reads a float32 bias
        bias = (_gemm.scratch(b, units * 4), 0)
        stack_rows(b, In(d.w + 2), code(ctx.inputs[d.w + 2]), bias, units, 1)
    seq = dict(M=rows, batch=(1, 1), a_b=(0, 0), c_b=(0, 0), ldc=units) if time_major else \
        dict(M=steps, batch=(batch, 1), a_b=(steps * in_size, 0), c_b=(units, 0),
             ldc=batch * units)
    gemm(b, a=In(d.x), a_dt=code(ctx.inputs[d.x]), bpk=stacked_weights(b, ctx, [d.w], in_size, xt),
         c=(xpre, 0), N=units, K=in_size, tile=xt, sam=in_size, bias=bias, **seq)
    if d.aux is not None:
        aux_size = ctx.inputs[d.aux_w].shape[1]
        ba = stacked_weights(b, ctx, [d.aux_w], aux_size, xt)
        gemm(b, a=In(d.aux), a_dt=code(ctx.inputs[d.aux]), bpk=ba, c=(xpre, 0), N=units,
             K=aux_size, tile=xt, sam=aux_size, res=(xpre, i32(0)),
             **dict(seq, a_b=(0 if time_major else steps * aux_size, 0)))
    lo, hi = (f32(v) for v in activation_range_float(act))
    rt = row_tile(b, batch, units)
    br = stacked_weights(b, ctx, [d.w + 1], units, rt)
    hs = [_gemm.scratch(b, batch * units * 4) for _ in range(2)]
    stack_rows(b, In(d.w + 3), code(ctx.inputs[d.w + 3]), (hs[0], 0), units, batch)
    st, sb = (batch * d.y_width, d.y_width) if time_major else (d.y_width, steps * d.y_width)
    order = range(steps - 1, -1, -1) if d.reverse else range(steps)
    cur = 0
    for t in order:
        gemm(b, a=(hs[cur], 0), a_dt="f32", bpk=br, c=(hs[1 - cur], 0), M=batch, N=units,
             K=units, tile=rt, sam=units, ldc=units, res=(xpre, i32(t * batch * units)),
             lo=lo, hi=hi)
        cur = 1 - cur
        if d.y is not None:
            copy_rows(b, (hs[cur], 0), ref(b, Out(d.y), d.y_col + t * st), odt, units, batch,
                      units, sb)
    if d.h_out is not None:
        copy_rows(b, (hs[cur], 0), ref(b, Out(d.h_out)), odt, units, batch, units, units)


def _seq_dims(shape, time_major: bool):
    return (shape[0], shape[1]) if time_major else (shape[1], shape[0])


def plan_rnn(ctx, b):
    d = Direction(w=1, x=0, y=1, y_width=ctx.outputs[1].shape[1], h_out=0)
    plan_direction(b, ctx, d, act=int(ctx.scalar(5)), steps=1,
                   batch=ctx.inputs[0].shape[0], time_major=True)


def plan_uni(ctx, b):
    tm = bool(ctx.scalar(6))
    steps, batch = _seq_dims(ctx.inputs[0].shape, tm)
    d = Direction(w=1, x=0, y=0, y_width=ctx.outputs[0].shape[2],
                  h_out=1 if len(ctx.outputs) > 1 else None)
    plan_direction(b, ctx, d, act=int(ctx.scalar(5)), steps=steps, batch=batch, time_major=tm)


def plan_bi(ctx, b):
    tm = bool(ctx.scalar(13))
    merge = bool(ctx.scalar(14))
    steps, batch = _seq_dims(ctx.inputs[0].shape, tm)
    aux = 9 if present(ctx, 9) else None
    if aux is not None:
        same_time_and_batch(ctx, aux, 0)
    cross = aux is not None and present(ctx, 10)
    n_first = 1 if merge else 2
    states = [i if i < len(ctx.outputs) else None for i in (n_first, n_first + 1)]
    fw_w = ctx.outputs[0].shape[2]
    bw_units = ctx.inputs[5].shape[0]
    fw = Direction(w=1, x=0, y=0, y_width=fw_w, h_out=states[0],
                   aux=aux if cross else None, aux_w=10 if cross else None)
    # parallel linking (an aux input without aux weights): the backward cell reads it
    bw = Direction(w=5, x=aux if (aux is not None and not cross) else 0, y=0 if merge else 1,
                   y_col=fw_w - bw_units if merge else 0,
                   y_width=fw_w if merge else ctx.outputs[1].shape[2], h_out=states[1],
                   aux=aux if cross else None, aux_w=11 if cross else None, reverse=True)
    for d in (fw, bw):
        plan_direction(b, ctx, d, act=int(ctx.scalar(12)), steps=steps, batch=batch,
                       time_major=tm)


register_kernel("RNN", family="rnn", support=float_support, plan=plan_rnn, host_inputs=[5])
register_kernel("UNIDIRECTIONAL_SEQUENCE_RNN", family="rnn", support=float_support,
                plan=plan_uni, host_inputs=[5, 6])
register_kernel("BIDIRECTIONAL_SEQUENCE_RNN", family="rnn", support=float_support,
                plan=plan_bi, host_inputs=[12, 13, 14], omitted_inputs=True)
