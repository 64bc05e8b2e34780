"""QUANTIZED_16BIT_LSTM (1.2) and QUANTIZED_LSTM (1.3): integer LSTM cells.

QUANTIZED_16BIT_LSTM

| input | operand                                                              |
|-------|----------------------------------------------------------------------|
| 0     | input [batch, input_size] QUANT8_ASYMM (scale 1/128, zero point 128) |
| 1-4   | input-to-{input,forget,cell,output} weights [output_size, input_size] |
| 5-8   | recurrent-to-{...} weights [output_size, output_size] (QUANT8_ASYMM)  |
| 9-12  | gate biases [output_size] TENSOR_INT32 (scale input * weights)        |
| 13    | previous cell state [batch, output_size] QUANT16_SYMM (scale 2^-11)   |
| 14    | previous output [batch, output_size] QUANT8_ASYMM                     |

Outputs: cell state (QUANT16_SYMM), output (QUANT8_ASYMM). The pipeline is the reference's:
int32 fully connected layer rescaled to Q3.12 int16, gemmlowp fixed-point logistic/tanh, cell
state in Q4.11, output rescaled to 8 bits.

QUANTIZED_LSTM: inputs as LSTM (input/output QUANT8_ASYMM_SIGNED, weights QUANT8_SYMM, peephole
and layer norm weights QUANT16_SYMM, biases TENSOR_INT32, cell state QUANT16_SYMM with a power
of two scale), then 24 cell clip, 25 projection clip, 26-29 gate intermediate scales, 30 hidden
state zero point, 31 hidden state scale. Outputs: output state, cell state, output. The pipeline
is TFLite's 8x8->16 integer LSTM step as the NNAPI reference runs it.
"""

from __future__ import annotations

import math

import numpy as np

from hal.operations import _fixedpoint16 as fp
from hal.operations.common import input_dim as _dim
from hal.operations.common import quantize_multiplier
from hal.operations.context import OperationContext
from hal.operations.lstm import check_tensor_rank, given
from hal.operations.registry import register, sig


def _i64(ctx, i):
    return np.asarray(ctx.input(i), dtype=np.int64)


# ------------------------------------------------------------------ QUANTIZED_16BIT_LSTM

Q16_SIGNATURES = [sig("V1_2", ["TENSOR_QUANT8_ASYMM"] * 9 + ["TENSOR_INT32"] * 4 +
                      ["TENSOR_QUANT16_SYMM", "TENSOR_QUANT8_ASYMM"],
                      ["TENSOR_QUANT16_SYMM", "TENSOR_QUANT8_ASYMM"])]


def validate_q16(ctx: OperationContext):
    for i in (0, 13, 14):
        check_tensor_rank(ctx, i, 2, "input")
    for i in range(1, 9):
        check_tensor_rank(ctx, i, 2, "weights")
    for i in range(9, 13):
        check_tensor_rank(ctx, i, 1, "bias")
    w = ctx.inputs[1]
    for i in range(2, 9):
        ctx.require(ctx.inputs[i].scale == w.scale and ctx.inputs[i].zero_point == w.zero_point,
                    f"input {i} (weights) must have the scale and zero point of input 1")
    for i in range(9, 14):
        ctx.require(ctx.inputs[i].zero_point == 0, f"input {i} must have zero point 0")
    out = _dim(ctx, 1, 0)
    for i in range(2, 15):
        k = 1 if i >= 13 else 0
        d = _dim(ctx, i, k)
        ctx.require(not out or not d or d == out,
                    f"input {i} has {d} units, expected output size {out}")


def prepare_q16(ctx: OperationContext):
    shape = (_dim(ctx, 0, 0), _dim(ctx, 1, 0))
    return [shape, shape]


def execute_q16(ctx: OperationContext):
    x = _i64(ctx, 0) - 128
    h = _i64(ctx, 14) - 128
    c = _i64(ctx, 13)
    zp = ctx.inputs[1].zero_point
    w_scale = ctx.inputs[1].scale
    q, shift = quantize_multiplier(ctx.inputs[0].scale * w_scale * 4096.0)
    # The reference multiplies the concatenation [input, previous output] with weight rows laid
    # out as [recurrent-to-gate | input-to-gate]; the CTS goldens follow that layout.
    xh = np.concatenate([x, h], axis=1)
    gates = []
    for g in range(4):  # input, forget, cell, output
        w = np.concatenate([_i64(ctx, 5 + g), _i64(ctx, 1 + g)], axis=1) - zp
        if w.shape[1] != xh.shape[1]:
            raise ValueError(f"weights of gate {g} do not fit input and output sizes")
        acc = _i64(ctx, 9 + g) + xh @ w.T
        gates.append(fp.sat(fp.mbqm(acc, q, shift)))
    i_gate = fp.logistic(gates[0], 3)
    f_gate = fp.logistic(gates[1], 3)
    g_gate = fp.tanh(gates[2], 3)
    o_gate = fp.logistic(gates[3], 3)
    # cell state in Q4.11
    new_c = fp.sat(fp.srmpot(fp.mul(i_gate, g_gate), -4) + fp.mul(f_gate, c))
    out = fp.mul(o_gate, fp.tanh(fp.srmpot(new_c, 1), 3))
    out8 = np.clip(fp.rounding_divide_by_pot(out, 8), -128, 127) + 128
    return [new_c.astype(np.int16), out8.astype(np.uint8)]


register("QUANTIZED_16BIT_LSTM", execute_q16, signatures=Q16_SIGNATURES, validate=validate_q16,
         prepare=prepare_q16, family="quantized_lstm")


# ------------------------------------------------------------------------ QUANTIZED_LSTM

_Q8S, _Q8, _Q16, _I32 = ("TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_SYMM",
                         "TENSOR_QUANT16_SYMM", "TENSOR_INT32")
QLSTM_SIGNATURES = [sig("V1_3", [_Q8S] + [_Q8] * 8 + [_Q16] * 3 + [_I32] * 4 + [_Q8, _I32, _Q8S,
                                _Q16] + [_Q16] * 4 + ["FLOAT32"] * 6 + ["INT32", "FLOAT32"],
                        [_Q8S, _Q16, _Q8S],
                        optional=[1, 5, 9, 10, 11, 12, 16, 17, 20, 21, 22, 23, 24, 25])]

# gate -> (input weights, recurrent weights, peephole, bias, layer norm, intermediate scale)
_GATE_INPUTS = {"input": (1, 5, 9, 12, 20, 26), "forget": (2, 6, 10, 13, 21, 27),
                "cell": (3, 7, None, 14, 22, 28), "output": (4, 8, 11, 15, 23, 29)}


def _cell_shift(scale: float) -> int | None:
    if scale <= 0:
        return None
    lg = math.log(scale) / math.log(2.0)
    r = round(lg)
    return int(r) if abs(lg - r) < 1e-3 else None


def validate_qlstm(ctx: OperationContext):
    for i in (0, 18, 19):
        check_tensor_rank(ctx, i, 2, "input")
    for i in (1, 2, 3, 4, 5, 6, 7, 8, 16):
        check_tensor_rank(ctx, i, 2, "weights")
    for i in (9, 10, 11, 12, 13, 14, 15, 17, 20, 21, 22, 23):
        check_tensor_rank(ctx, i, 1, "vector")
    ctx.require(_cell_shift(ctx.inputs[19].scale) is not None,
                f"input 19 (cell state) scale {ctx.inputs[19].scale} must be a power of two")
    cifg = [ctx.has_input(i) for i in (1, 5, 12)]
    ctx.require(all(cifg) or not any(cifg),
                "inputs 1, 5 and 12 (input gate weights and bias) must all be given or omitted")
    peep = [ctx.has_input(i) for i in (10, 11)]
    ctx.require(all(peep) or not any(peep),
                "inputs 10 and 11 (cell-to-forget/output weights) must both be given or omitted")
    ln = [ctx.has_input(i) for i in (21, 22, 23)]
    ctx.require(all(ln) or not any(ln),
                "inputs 21, 22 and 23 (layer norm weights) must all be given or omitted")
    for i, what in ((24, "cell clip"), (25, "projection clip")):
        v = ctx.scalar(i)
        ctx.require(v is None or v >= 0, f"input {i} ({what}) must be >= 0, got {v}")


def prepare_qlstm(ctx: OperationContext):
    batch = _dim(ctx, 0, 0)
    out = _dim(ctx, 18, 1) or _dim(ctx, 8, 1)
    units = _dim(ctx, 2, 0)
    return [(batch, out), (batch, units), (batch, out)]


def _matmul_acc(acc, x, x_zp, w, extra_bias, scale: float):
    """MatrixBatchVectorMultiplyAccumulate into int16 with the zero point folded in a bias."""
    bias = -x_zp * w.sum(axis=1)
    if extra_bias is not None:
        bias = bias + extra_bias
    q, s = quantize_multiplier(scale)
    return fp.sat(fp.mbqm(x @ w.T + bias, q, s) + acc)


def execute_qlstm(ctx: OperationContext):
    x = _i64(ctx, 0)
    h = _i64(ctx, 18)
    c = _i64(ctx, 19)
    x_info, h_info = ctx.inputs[0], ctx.inputs[18]
    cell_shift = _cell_shift(ctx.inputs[19].scale)
    if cell_shift is None:
        raise ValueError("the cell state scale is not a power of two")
    use_ln = given(ctx, 21)
    cifg = not given(ctx, 1)
    batch, units = x.shape[0], _dim(ctx, 2, 0)

    def gate(name, cell_state, activation):
        wi, wr, wp, bi, li, si = _GATE_INPUTS[name]
        inter = ctx.scalar(si) if use_ln else 2.0 ** -12
        bias = _i64(ctx, bi) if given(ctx, bi) else None
        acc = np.zeros((batch, units), dtype=np.int64)
        acc = _matmul_acc(acc, x, x_info.zero_point, _i64(ctx, wi), None if use_ln else bias,
                          ctx.inputs[wi].scale * x_info.scale / inter)
        acc = _matmul_acc(acc, h, h_info.zero_point, _i64(ctx, wr), None,
                          ctx.inputs[wr].scale * h_info.scale / inter)
        if wp is not None and given(ctx, wp):
            q, s = quantize_multiplier(2.0 ** cell_shift * ctx.inputs[wp].scale / inter)
            acc = fp.sat(fp.mbqm(_i64(ctx, wp) * cell_state, q, s) + acc)
        if use_ln:
            ln_scale = ctx.inputs[li].scale
            q, s = quantize_multiplier(ln_scale)
            limit = min(1, int(10000 * ln_scale))
            acc = fp.layer_norm(acc, _i64(ctx, li), bias if bias is not None else 0, q, s,
                                limit)
        return activation(acc, 3)

    f = gate("forget", c, fp.logistic)
    g = gate("cell", c, fp.tanh)
    i = fp.wrap(fp.I16_MAX - f) if cifg else gate("input", c, fp.logistic)
    fc = fp.wrap(fp.rounding_divide_by_pot(f * c, 15))
    ig = fp.wrap(fp.rounding_divide_by_pot(i * g, 30 + cell_shift))
    new_c = fp.sat(fc + ig)
    cell_clip = ctx.scalar(24, 0.0) or 0.0
    if cell_clip > 0:
        qc = int(min(max(cell_clip / ctx.inputs[19].scale, -32768.0), 32767.0))
        new_c = np.clip(new_c, -qc, qc)
    o = gate("output", new_c, fp.logistic)
    t = fp.tanh(new_c, 15 + cell_shift)
    hidden_zp = int(ctx.scalar(30))
    hidden_scale = float(ctx.scalar(31))
    q, s = quantize_multiplier(2.0 ** -15 / hidden_scale * 2.0 ** -15)
    hidden = np.clip(fp.mbqm(o * t, q, s) + hidden_zp, -128, 127)
    out_info = ctx.outputs[0]
    if given(ctx, 16):
        wp = _i64(ctx, 16)
        bias = _i64(ctx, 17) if given(ctx, 17) else 0
        bias = bias - hidden_zp * wp.sum(axis=1)
        q, s = quantize_multiplier(ctx.inputs[16].scale * hidden_scale / out_info.scale)
        out = np.clip(fp.mbqm(hidden @ wp.T + bias, q, s) + out_info.zero_point, -128, 127)
        proj_clip = ctx.scalar(25, 0.0) or 0.0
        if proj_clip > 0:
            qp = int(min(max(proj_clip / out_info.scale, -128.0), 127.0))
            out = np.clip(out, -qp, qp)
    else:
        out = hidden
    return [out.astype(np.int8), new_c.astype(np.int16), out.astype(np.int8)]


register("QUANTIZED_LSTM", execute_qlstm, signatures=QLSTM_SIGNATURES, validate=validate_qlstm,
         prepare=prepare_qlstm, family="quantized_lstm")
