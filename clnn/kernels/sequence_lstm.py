"""UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM on OpenCL: the float cell of
clnn/kernels/lstm.py unrolled over the sequence on the device (time-major or batch-major,
CIFG, peephole, projection with clip, layer normalization, state outputs; bidirectional with
merged outputs, aux input with cross-linking weights or parallel linking). The two directions
of a bidirectional LSTM are independent launch sequences of the same plan.
"""

from __future__ import annotations

from clnn.kernels.lstm import (
    Direction,
    float_support,
    local_memory_support,
    plan_direction,
    present,
    same_time_and_batch,
    scalars,
)
from clnn.kernels.registry import register_kernel
from hal.operations.sequence_lstm import AUX_INPUT, BW, BW_AUX, BW_LN, FW, FW_AUX, FW_LN


def _seq_dims(shape, time_major: bool):
    return (shape[0], shape[1]) if time_major else (shape[1], shape[0])


def plan_uni(ctx, b):
    tm = bool(ctx.scalar(23))
    steps, batch = _seq_dims(ctx.inputs[0].shape, tm)
    n_out = len(ctx.outputs)
    d = Direction(first=1, ln_first=24, aux_first=None, x=0, aux=None, h_in=18, c_in=19, y=0,
                  y_width=ctx.outputs[0].shape[2], h_out=1 if n_out > 1 else None,
                  c_out=2 if n_out > 2 else None)
    plan_direction(b, ctx, d, **scalars(ctx, 20, 21, 22), steps=steps, batch=batch,
                   time_major=tm)


def plan_bi(ctx, b):
    tm = bool(ctx.scalar(52))
    merge = bool(ctx.scalar(51))
    steps, batch = _seq_dims(ctx.inputs[0].shape, tm)
    aux = AUX_INPUT if present(ctx, AUX_INPUT) else None
    if aux is not None:
        same_time_and_batch(ctx, aux, 0)
    cross = aux is not None and present(ctx, FW_AUX + 1)
    n_out = len(ctx.outputs)
    states = list(range(1 if merge else 2, n_out))  # fw h, fw c, bw h, bw c when given
    states += [None] * (4 - len(states))
    fw_w = ctx.outputs[0].shape[2]
    bw_out = ctx.inputs[BW + 5].shape[1]
    fw = Direction(first=FW, ln_first=FW_LN, aux_first=FW_AUX if cross else None, x=0,
                   aux=aux if cross else None, h_in=35, c_in=36, y=0, y_width=fw_w,
                   h_out=states[0], c_out=states[1])
    # parallel linking (an aux input without aux weights): the backward cell reads it
    bw = Direction(first=BW, ln_first=BW_LN, aux_first=BW_AUX if cross else None,
                   x=aux if (aux is not None and not cross) else 0,
                   aux=aux if cross else None, h_in=37, c_in=38, y=0 if merge else 1,
                   y_col=fw_w - bw_out if merge else 0,
                   y_width=fw_w if merge else ctx.outputs[1].shape[2],
                   h_out=states[2], c_out=states[3], reverse=True)
    for d in (fw, bw):
        plan_direction(b, ctx, d, **scalars(ctx, 48, 49, 50), steps=steps, batch=batch,
                       time_major=tm)


register_kernel("UNIDIRECTIONAL_SEQUENCE_LSTM", family="sequence_lstm",
                support=float_support, plan=plan_uni, host_inputs=[20, 21, 22, 23],
                omitted_inputs=True, device_support=local_memory_support(24))
register_kernel("BIDIRECTIONAL_SEQUENCE_LSTM", family="sequence_lstm",
                support=float_support, plan=plan_bi, host_inputs=[48, 49, 50, 51, 52],
                omitted_inputs=True, device_support=local_memory_support(24))
