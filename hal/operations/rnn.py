"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN: basic recurrent cells
h = activation(x @ W^T + h @ R^T + b) with a fused activation (0..3).

| op                          | inputs                                                        |
|-----------------------------|---------------------------------------------------------------|
| RNN (1.0; f16 1.2)          | 0 input [batch, in], 1 weights [units, in], 2 recurrent        |
|                             | [units, units], 3 bias [units], 4 hidden [batch, units],       |
|                             | 5 activation (INT32)                                          |
| UNIDIRECTIONAL_SEQUENCE_RNN | 0 input [time, batch, in] / [batch, time, in], 1-4 as RNN,    |
| (1.2)                       | 5 activation, 6 time_major (INT32 0/1)                        |
| BIDIRECTIONAL_SEQUENCE_RNN  | 0 input, 1-4 forward W, R, b, h, 5-8 backward W, R, b, h,     |
| (1.2)                       | 9 aux input, 10 fw aux weights, 11 bw aux weights (optional), |
|                             | 12 activation, 13 time_major (BOOL), 14 merge_outputs (BOOL)  |

Outputs: RNN: hidden state out, output (both [batch, units]). UNIDIRECTIONAL: output sequence,
and since 1.3 optionally the last hidden state. BIDIRECTIONAL: fw output (concatenated with bw
when merge_outputs), bw output (absent when merged), since 1.3 optionally fw and bw last hidden
states. Aux input with aux weights: cross-linking; without them (1.3): parallel linking, the
backward cell reads the aux input. Float16 computes in float32.
"""

from __future__ import annotations

import numpy as np

from hal.operations.common import apply_activation_float, check_fused_activation
from hal.operations.common import input_dim as _dim
from hal.operations.context import OperationContext
from hal.operations.lstm import check_tensor_rank, given
from hal.operations.registry import register, sig

_TYPES = ("TENSOR_FLOAT32", "TENSOR_FLOAT16")


def _f32(ctx, i):
    return np.asarray(ctx.input(i), dtype=np.float32)


def rnn_step(x, h, w, r, b, act, aux=None, aux_w=None):
    acc = x @ w.T + h @ r.T + b
    if aux is not None and aux_w is not None:
        acc = acc + aux @ aux_w.T
    return apply_activation_float(acc.astype(np.float32), act)


def run_sequence(x, h, w, r, b, act, aux=None, aux_w=None, reverse=False):
    """x time-major [time, batch, in]; returns (outputs [time, batch, units], last h)."""
    if w.ndim != 2 or r.shape != (w.shape[0], w.shape[0]) or b.shape != (w.shape[0],):
        raise ValueError(f"weights {list(w.shape)}, recurrent weights {list(r.shape)} and bias "
                         f"{list(b.shape)} do not agree")
    if x.shape[2] != w.shape[1] or h.shape != (x.shape[1], w.shape[0]):
        raise ValueError(f"input {list(x.shape)} / hidden state {list(h.shape)} do not match "
                         f"weights {list(w.shape)}")
    out = np.zeros((x.shape[0], x.shape[1], w.shape[0]), dtype=np.float32)
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    for t in steps:
        h = rnn_step(x[t], h, w, r, b, act, None if aux is None else aux[t], aux_w)
        out[t] = h
    return out, h


def _check_units(ctx, w, r, b, h=None):
    units = _dim(ctx, w, 0)
    for i, k in ((r, 0), (r, 1), (b, 0)) + (((h, 1),) if h is not None else ()):
        u = _dim(ctx, i, k)
        ctx.require(not units or not u or u == units,
                    f"input {i} dimension {k} is {u}, expected num_units {units}")


def _validate_weights(ctx, w, r, b, h):
    check_tensor_rank(ctx, w, 2, "weights")
    check_tensor_rank(ctx, r, 2, "recurrent weights")
    check_tensor_rank(ctx, b, 1, "bias")
    check_tensor_rank(ctx, h, 2, "hidden state")
    _check_units(ctx, w, r, b, h)


# ------------------------------------------------------------------------------ RNN

RNN_SIGNATURES = [sig(v, [t] * 5 + ["INT32"], [t, t])
                  for v, t in (("V1_0", "TENSOR_FLOAT32"), ("V1_2", "TENSOR_FLOAT16"))]


def validate_rnn(ctx: OperationContext):
    check_tensor_rank(ctx, 0, 2, "input")
    _validate_weights(ctx, 1, 2, 3, 4)
    check_fused_activation(ctx, 5)


def prepare_rnn(ctx: OperationContext):
    shape = (_dim(ctx, 0, 0), _dim(ctx, 1, 0))
    return [shape, shape]


def execute_rnn(ctx: OperationContext):
    x = _f32(ctx, 0)
    seq, h = run_sequence(x[None], _f32(ctx, 4), _f32(ctx, 1), _f32(ctx, 2), _f32(ctx, 3),
                          ctx.scalar(5))
    dt = ctx.outputs[0].dtype
    return [h.astype(dt), h.astype(dt)]


register("RNN", execute_rnn, signatures=RNN_SIGNATURES, validate=validate_rnn,
         prepare=prepare_rnn, family="rnn")


# ------------------------------------------------------------------ unidirectional

UNI_SIGNATURES = [sig(v, [t] * 5 + ["INT32", "INT32"], [t] * n)
                  for t in _TYPES for v, n in (("V1_2", 1), ("V1_3", 2))]


def _seq(ctx, i, tm):
    s = ctx.inputs[i].shape
    if len(s) != 3:
        return 0, 0
    return (s[0], s[1]) if tm else (s[1], s[0])


def validate_uni(ctx: OperationContext):
    check_tensor_rank(ctx, 0, 3, "input")
    _validate_weights(ctx, 1, 2, 3, 4)
    check_fused_activation(ctx, 5)
    tm = ctx.scalar(6)
    if tm is not None:
        ctx.require(tm in (0, 1), f"input 6 (time_major) must be 0 or 1, got {tm}")


def prepare_uni(ctx: OperationContext):
    tm = ctx.scalar(6, 1)
    time, batch = _seq(ctx, 0, tm)
    units = _dim(ctx, 1, 0)
    y = (time, batch, units) if tm else (batch, time, units)
    return [y, (batch, units)][:len(ctx.outputs)]


def _to_time_major(a, tm):
    a = np.asarray(a, dtype=np.float32)
    if a.ndim != 3:
        raise ValueError(f"sequence input must have rank 3, got shape {list(a.shape)}")
    return a if tm else a.transpose(1, 0, 2)


def execute_uni(ctx: OperationContext):
    tm = bool(ctx.scalar(6))
    x = _to_time_major(ctx.input(0), tm)
    y, h = run_sequence(x, _f32(ctx, 4), _f32(ctx, 1), _f32(ctx, 2), _f32(ctx, 3),
                        ctx.scalar(5))
    dt = ctx.outputs[0].dtype
    return [(y if tm else y.transpose(1, 0, 2)).astype(dt), h.astype(dt)][:len(ctx.outputs)]


register("UNIDIRECTIONAL_SEQUENCE_RNN", execute_uni, signatures=UNI_SIGNATURES,
         validate=validate_uni, prepare=prepare_uni, family="rnn")


# ------------------------------------------------------------------- bidirectional

BI_SIGNATURES = [sig(v, [t] * 12 + ["INT32", "BOOL", "BOOL"], [t] * n, optional=[9, 10, 11])
                 for t in _TYPES
                 for v, n in (("V1_2", 2), ("V1_2", 1), ("V1_3", 4), ("V1_3", 3))]


def validate_bi(ctx: OperationContext):
    check_tensor_rank(ctx, 0, 3, "input")
    _validate_weights(ctx, 1, 2, 3, 4)
    _validate_weights(ctx, 5, 6, 7, 8)
    check_tensor_rank(ctx, 9, 3, "aux input")
    check_tensor_rank(ctx, 10, 2, "forward aux weights")
    check_tensor_rank(ctx, 11, 2, "backward aux weights")
    check_fused_activation(ctx, 12)
    ctx.require(ctx.has_input(10) == ctx.has_input(11),
                "inputs 10 and 11 (aux weights) must both be given or both be omitted")
    ctx.require(not ctx.has_input(10) or ctx.has_input(9),
                "aux weights (inputs 10, 11) are given without the aux input (input 9)")
    merge = ctx.scalar(14)
    if merge is not None:
        n = len(ctx.outputs)
        ctx.require(n in ((1, 3) if merge else (2, 4)),
                    f"{n} outputs do not fit merge_outputs={bool(merge)}")


def prepare_bi(ctx: OperationContext):
    tm = ctx.scalar(13, True)
    merge = bool(ctx.scalar(14, False))
    time, batch = _seq(ctx, 0, tm)
    fw, bw = _dim(ctx, 1, 0), _dim(ctx, 5, 0)

    def seq(n):
        return (time, batch, n) if tm else (batch, time, n)

    shapes = [seq(fw + bw)] if merge else [seq(fw), seq(bw)]
    return (shapes + [(batch, fw), (batch, bw)])[:len(ctx.outputs)]


def execute_bi(ctx: OperationContext):
    tm = bool(ctx.scalar(13))
    merge = bool(ctx.scalar(14))
    act = ctx.scalar(12)
    x = _to_time_major(ctx.input(0), tm)
    aux = _to_time_major(ctx.input(9), tm) if given(ctx, 9) else None
    fw_aux_w = _f32(ctx, 10) if given(ctx, 10) else None
    bw_aux_w = _f32(ctx, 11) if given(ctx, 11) else None
    if (fw_aux_w is None) != (bw_aux_w is None):
        raise ValueError("forward and backward aux weights must both be given or omitted")
    cross = aux is not None and fw_aux_w is not None
    bw_x = aux if (aux is not None and not cross) else x
    if aux is not None and aux.shape[:2] != x.shape[:2]:
        raise ValueError(f"aux input {list(aux.shape)} does not match input {list(x.shape)}")
    fw_y, fw_h = run_sequence(x, _f32(ctx, 4), _f32(ctx, 1), _f32(ctx, 2), _f32(ctx, 3), act,
                              aux if cross else None, fw_aux_w)
    bw_y, bw_h = run_sequence(bw_x, _f32(ctx, 8), _f32(ctx, 5), _f32(ctx, 6), _f32(ctx, 7), act,
                              aux if cross else None, bw_aux_w, reverse=True)
    dt = ctx.outputs[0].dtype

    def out(y):
        return (y if tm else y.transpose(1, 0, 2)).astype(dt)

    res = [out(np.concatenate([fw_y, bw_y], axis=2))] if merge else [out(fw_y), out(bw_y)]
    return (res + [fw_h.astype(dt), bw_h.astype(dt)])[:len(ctx.outputs)]


register("BIDIRECTIONAL_SEQUENCE_RNN", execute_bi, signatures=BI_SIGNATURES,
         validate=validate_bi, prepare=prepare_bi, family="rnn")
