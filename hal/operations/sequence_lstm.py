"""UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM: the LSTM cell of
:mod:`hal.operations.lstm` unrolled over a sequence (float32 / float16, since 1.2).

UNIDIRECTIONAL_SEQUENCE_LSTM (28 inputs)

| input | operand                                                    |
|-------|------------------------------------------------------------|
| 0     | input, [max_time, batch, input_size] or batch-major        |
| 1-19  | as LSTM inputs 1-19 (weights, biases, projection, states)   |
| 20-22 | activation (INT32), cell clip, projection clip (FLOAT32/16)  |
| 23    | time_major (BOOL)                                          |
| 24-27 | layer norm weights (optional)                              |

Outputs: output [max_time, batch, output_size] (or batch-major); since 1.3 optionally the last
output state [batch, output_size] and cell state [batch, units].

BIDIRECTIONAL_SEQUENCE_LSTM (61 inputs): 0 input; 1-17 forward weights (LSTM 1-17 layout);
18-34 backward weights; 35-38 fw h, fw c, bw h, bw c; 39 aux input; 40-43 fw aux weights;
44-47 bw aux weights; 48 activation; 49-50 clips; 51 merge_outputs; 52 time_major; 53-56 fw
layer norm weights; 57-60 bw layer norm weights. Outputs: fw output (with merge_outputs the
concatenation [.., fw_out + bw_out]), bw output (absent with merge_outputs), and since 1.3
optionally fw h, fw c, bw h, bw c of the last step.

Aux input: with aux weights (cross-linking) both directions add aux @ aux_weights; without aux
weights (parallel linking, 1.3) the backward direction reads the aux input instead of input.
"""

from __future__ import annotations

import numpy as np

from hal.operations.context import OperationContext
from hal.operations.lstm import (
    ACTIVATION,
    CELL_CLIP,
    FIRST_WEIGHT,
    OPTIONAL_REL,
    PROJ_CLIP,
    _dim,
    check_lstm_scalars,
    check_tensor_rank,
    given,
    load_weights,
    lstm_step,
    validate_cell,
    validate_direction,
)
from hal.operations.registry import register, sig

_TYPES = (("TENSOR_FLOAT32", "FLOAT32"), ("TENSOR_FLOAT16", "FLOAT16"))


def run_sequence(x, h, c, w, aux=None, reverse=False):
    """x: [time, batch, in] (time-major). Returns (outputs [time, batch, out], h, c)."""
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    out = np.zeros((x.shape[0], x.shape[1], w.output_size), dtype=np.float32)
    for t in steps:
        h, c, _ = lstm_step(x[t], h, c, w, None if aux is None else aux[t])
        out[t] = h
    return out, h, c


def _time_major(a: np.ndarray, time_major: bool) -> np.ndarray:
    a = np.asarray(a, dtype=np.float32)
    if a.ndim != 3:
        raise ValueError(f"sequence input must have rank 3, got shape {list(a.shape)}")
    return a if time_major else a.transpose(1, 0, 2)


def _check_state(h, c, batch, w, what):
    if h.shape != (batch, w.output_size) or c.shape != (batch, w.num_units):
        raise ValueError(f"{what} state shapes {list(h.shape)}, {list(c.shape)} do not match "
                         f"batch {batch}, output size {w.output_size}, units {w.num_units}")


def _seq_dims(ctx, i, time_major):
    shape = ctx.inputs[i].shape
    if len(shape) != 3:
        return 0, 0
    return (shape[0], shape[1]) if time_major else (shape[1], shape[0])


# ----------------------------------------------------------------------- unidirectional

def _uni_signatures():
    sigs = []
    opt = [1, 5, 9, 10, 11, 12, 16, 17, 24, 25, 26, 27]
    for t, s in _TYPES:
        ins = [t] * 20 + ["INT32", s, s, "BOOL"] + [t] * 4
        sigs.append(sig("V1_2", ins, [t], optional=opt))
        sigs.append(sig("V1_3", ins, [t] * 3, optional=opt))
    return sigs


UNI_SIGNATURES = _uni_signatures()


def validate_uni(ctx: OperationContext):
    validate_cell(ctx, 3, 24)


def prepare_uni(ctx: OperationContext):
    tm = ctx.scalar(23, True)
    shape = ctx.inputs[0].shape
    out = _dim(ctx, 6, 1)
    units = _dim(ctx, 2, 0)
    time, batch = _seq_dims(ctx, 0, tm)
    y = (time, batch, out) if tm else (batch, time, out)
    return [y, (batch, out), (batch, units)][:len(ctx.outputs)] if shape else \
        [()] * len(ctx.outputs)


def execute_uni(ctx: OperationContext):
    tm = bool(ctx.scalar(23))
    x = _time_major(ctx.input(0), tm)
    w = load_weights(ctx, FIRST_WEIGHT, ACTIVATION, CELL_CLIP, PROJ_CLIP, 24)
    h = np.asarray(ctx.input(18), dtype=np.float32)
    c = np.asarray(ctx.input(19), dtype=np.float32)
    if x.shape[2] != w.x["forget"].shape[1]:
        raise ValueError(f"input size {x.shape[2]} differs from the weights' "
                         f"{w.x['forget'].shape[1]}")
    _check_state(h, c, x.shape[1], w, "")
    y, h, c = run_sequence(x, h, c, w)
    dt = ctx.outputs[0].dtype
    res = [(y if tm else y.transpose(1, 0, 2)).astype(dt), h.astype(dt), c.astype(dt)]
    return res[:len(ctx.outputs)]


register("UNIDIRECTIONAL_SEQUENCE_LSTM", execute_uni, signatures=UNI_SIGNATURES,
         validate=validate_uni, prepare=prepare_uni, family="sequence_lstm")


# ------------------------------------------------------------------------ bidirectional

FW, BW = 1, 18
AUX_INPUT, FW_AUX, BW_AUX = 39, 40, 44
FW_LN, BW_LN = 53, 57


def _bi_signatures():
    sigs = []
    opt = ([FW + r for r in OPTIONAL_REL] + [BW + r for r in OPTIONAL_REL] +
           list(range(39, 48)) + list(range(53, 61)))
    for t, s in _TYPES:
        ins = [t] * 48 + ["INT32", s, s, "BOOL", "BOOL"] + [t] * 8
        for version, n_out in (("V1_2", 2), ("V1_2", 1), ("V1_3", 6), ("V1_3", 5)):
            sigs.append(sig(version, ins, [t] * n_out, optional=opt))
    return sigs


BI_SIGNATURES = _bi_signatures()


def validate_bi(ctx: OperationContext):
    check_tensor_rank(ctx, 0, 3, "input")
    for i, what in ((35, "forward output state"), (36, "forward cell state"),
                    (37, "backward output state"), (38, "backward cell state")):
        check_tensor_rank(ctx, i, 2, what)
    check_tensor_rank(ctx, AUX_INPUT, 3, "aux input")
    in_size = _dim(ctx, 0, 2)
    validate_direction(ctx, FW, FW_LN, in_size, "forward ")
    # with parallel linking the backward cell reads the aux input
    validate_direction(ctx, BW, BW_LN, 0 if ctx.has_input(AUX_INPUT) else in_size, "backward ")
    check_lstm_scalars(ctx, 48, 49, 50)
    merge = ctx.scalar(51)
    if merge is not None:
        n_out = len(ctx.outputs)
        ctx.require(n_out in ((1, 5) if merge else (2, 6)),
                    f"{n_out} outputs do not fit merge_outputs={bool(merge)} (expected "
                    f"{'1 or 5' if merge else '2 or 6'})")
    aux_w = [ctx.has_input(i) for i in range(FW_AUX + 1, BW_AUX + 4)]
    if any(aux_w):
        ctx.require(ctx.has_input(AUX_INPUT),
                    "aux weights (inputs 40-47) are given without the aux input (input 39)")


def prepare_bi(ctx: OperationContext):
    tm = ctx.scalar(52, True)
    merge = bool(ctx.scalar(51, False))
    fw_out, bw_out = _dim(ctx, FW + 5, 1), _dim(ctx, BW + 5, 1)
    fw_units, bw_units = _dim(ctx, FW + 1, 0), _dim(ctx, BW + 1, 0)
    time, batch = _seq_dims(ctx, 0, tm)

    def seq(n):
        return (time, batch, n) if tm else (batch, time, n)

    shapes = [seq(fw_out + bw_out)] if merge else [seq(fw_out), seq(bw_out)]
    shapes += [(batch, fw_out), (batch, fw_units), (batch, bw_out), (batch, bw_units)]
    return shapes[:len(ctx.outputs)]


def execute_bi(ctx: OperationContext):
    tm = bool(ctx.scalar(52))
    merge = bool(ctx.scalar(51))
    x = _time_major(ctx.input(0), tm)
    fw = load_weights(ctx, FW, 48, 49, 50, FW_LN, FW_AUX)
    bw = load_weights(ctx, BW, 48, 49, 50, BW_LN, BW_AUX)
    aux = _time_major(ctx.input(AUX_INPUT), tm) if given(ctx, AUX_INPUT) else None
    cross = aux is not None and fw.aux["forget"] is not None
    if aux is not None and aux.shape[:2] != x.shape[:2]:
        raise ValueError(f"aux input shape {list(aux.shape)} does not match the input's "
                         f"time and batch {list(x.shape[:2])}")
    bw_x = x if (aux is None or cross) else aux
    batch = x.shape[1]
    states = [np.asarray(ctx.input(i), dtype=np.float32) for i in (35, 36, 37, 38)]
    _check_state(states[0], states[1], batch, fw, "forward")
    _check_state(states[2], states[3], batch, bw, "backward")
    fw_y, fw_h, fw_c = run_sequence(x, states[0], states[1], fw, aux if cross else None)
    bw_y, bw_h, bw_c = run_sequence(bw_x, states[2], states[3], bw, aux if cross else None,
                                    reverse=True)
    dt = ctx.outputs[0].dtype

    def out(y):
        return (y if tm else y.transpose(1, 0, 2)).astype(dt)

    res = [out(np.concatenate([fw_y, bw_y], axis=2))] if merge else [out(fw_y), out(bw_y)]
    res += [a.astype(dt) for a in (fw_h, fw_c, bw_h, bw_c)]
    return res[:len(ctx.outputs)]


register("BIDIRECTIONAL_SEQUENCE_LSTM", execute_bi, signatures=BI_SIGNATURES,
         validate=validate_bi, prepare=prepare_bi, family="sequence_lstm")
