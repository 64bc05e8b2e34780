"""QUANTIZED_16BIT_LSTM and QUANTIZED_LSTM on OpenCL (template quantized_lstm.cl.mako): the
integer cells of hal/operations/quantized_lstm.py, bit-exact (gemmlowp fixed-point logistic /
tanh, TFLite's integer layer norm and rescaling, with the reference's int16 wraparounds).

Both are single steps with small weight matrices (the CTS's are a few units), read in place
whether constants or model inputs: QUANTIZED_16BIT_LSTM is one kernel with a work-item per
(unit, batch row) computing its four gate dot products and the cell; QUANTIZED_LSTM one kernel
with a work-group per batch row (layer normalization reduces over the units; the work-group
size is the device's, a power of two) and, with a projection, one kernel with a work-item per
(output, batch row). Real multipliers (scale ratios) become fixed-point (multiplier, shift)
pairs on the host, as the reference's QuantizeMultiplier computes them.
"""

from __future__ import annotations

import math

from clnn.kernels import _gemm
from clnn.kernels.lstm import dims, expect_shapes, ln_group, local_memory_support, present
from clnn.kernels.registry import In, Out, Unplannable, register_kernel
from clnn.kernels.support import i32, qmul
from hal.operations.common import quantize_multiplier

#: gate -> (input weights, recurrent weights, peephole, bias, layer norm, intermediate scale)
GATE_INPUTS = {"f": (2, 6, 10, 13, 21, 27), "c": (3, 7, None, 14, 22, 28),
               "i": (1, 5, 9, 12, 20, 26), "o": (4, 8, 11, 15, 23, 29)}


def support(ctx):
    return None  # the HAL signatures are the only forms, all of which run


def plan_q16(ctx, b):
    batch, n_in = dims(ctx, 0, 2)
    n_out = dims(ctx, 1, 2)[0]
    want = {k: (n_out, n_in) for k in range(1, 5)}
    want.update({k: (n_out, n_out) for k in range(5, 9)})
    want.update({k: (n_out,) for k in range(9, 13)})
    want.update({13: (batch, n_out), 14: (batch, n_out)})
    expect_shapes(ctx, want)  # else the reference decides (it fails on these)
    w = ctx.inputs[1]
    q, s = quantize_multiplier(ctx.inputs[0].scale * w.scale * 4096.0)
    b.launch("quantized_lstm", "q16_lstm", {}, (n_out, batch),
             [In(0), *[In(k) for k in range(1, 13)], In(13), In(14), Out(0), Out(1),
              i32(n_in), i32(w.zero_point), i32(q), i32(s)])


def check_qlstm(ctx, gates, batch, n_in, units, n_out, cifg, peep, ln, proj):
    """The operands as the kernels take them; else the reference decides (expect_shapes)."""
    given = {g: [present(ctx, i) for i in GATE_INPUTS[g][:5] if i is not None]
             for g in GATE_INPUTS}
    if cifg and any(given["i"][:2]) or any(present(ctx, i) != peep for i in (10, 11)) or \
            any(present(ctx, i) != ln for i in (21, 22, 23)) or \
            (not proj and (n_out != units or present(ctx, 17))):
        raise Unplannable("optional operands given in a form the kernels do not take")
    want = {18: (batch, n_out), 19: (batch, units)}
    for g in gates:
        wi, wr, wp, bi, li, _ = GATE_INPUTS[g]
        want.update({wi: (units, n_in), wr: (units, n_out), bi: (units,)})
        if peep and wp is not None:
            want[wp] = (units,)
        if ln:
            want[li] = (units,)
    if proj:
        want[16] = (n_out, units)
        if present(ctx, 17):
            want[17] = (n_out,)
    expect_shapes(ctx, want)


def _cell_shift(scale: float) -> int:
    lg = math.log(scale) / math.log(2.0)
    return int(round(lg))


def plan_qlstm(ctx, b):
    x, h, c = ctx.inputs[0], ctx.inputs[18], ctx.inputs[19]
    batch, n_in = dims(ctx, 0, 2)
    units = dims(ctx, 2, 2)[0]
    n_out = dims(ctx, 18, 2)[1]
    cifg = not present(ctx, 1)
    peep = present(ctx, 10)
    ln = present(ctx, 21)
    proj = present(ctx, 16)
    gates = ["f", "c"] + ([] if cifg else ["i"]) + ["o"]
    check_qlstm(ctx, gates, batch, n_in, units, n_out, cifg, peep, ln, proj)
    args = [In(0), In(18), In(19)]
    for g in gates:
        wi, wr, wp, bi, li, si = GATE_INPUTS[g]
        if not present(ctx, bi):
            raise Unplannable(f"QUANTIZED_LSTM without the {g} gate bias")
        inter = float(ctx.scalar(si)) if ln else 2.0 ** -12
        args += [In(wi), In(wr), In(bi), *qmul(ctx.inputs[wi].scale * x.scale / inter),
                 *qmul(ctx.inputs[wr].scale * h.scale / inter)]
        if peep and g != "c":
            args += [In(wp), *qmul(2.0 ** _cell_shift(c.scale) * ctx.inputs[wp].scale / inter)]
        if ln:
            ln_scale = ctx.inputs[li].scale
            args += [In(li), *qmul(ln_scale), i32(min(1, int(10000 * ln_scale)))]
    acc = _gemm.scratch(b, batch * 4 * units * 4)
    args += [acc, Out(1)]
    hid = None
    if proj:
        hid = _gemm.scratch(b, batch * units)
        args.append(hid)
    else:
        args += [Out(0), Out(2)]
    cell_clip = float(ctx.scalar(24, 0.0) or 0.0)
    qc = int(min(max(cell_clip / c.scale, -32768.0), 32767.0)) if cell_clip > 0 else 0
    hidden_zp = int(ctx.scalar(30))
    hidden_scale = float(ctx.scalar(31))
    args += [i32(n_in), i32(n_out), i32(units), i32(x.zero_point), i32(h.zero_point),
             i32(_cell_shift(c.scale)), i32(qc),
             *qmul(2.0 ** -15 / hidden_scale * 2.0 ** -15), i32(hidden_zp)]
    group = ln_group(b, local_bytes=48)  # six int64 partial sums per work-item
    b.launch("quantized_lstm", "qlstm_cell",
             {"cifg": cifg, "peep": peep, "ln": ln, "clip": cell_clip > 0, "proj": proj,
              "L": group}, (group, batch), args, local_size=(group, 1))
    if proj:
        out = ctx.outputs[0]
        bias = present(ctx, 17)
        proj_clip = float(ctx.scalar(25, 0.0) or 0.0)
        qp = int(min(max(proj_clip / out.scale, -128.0), 127.0)) if proj_clip > 0 else 0
        b.launch("quantized_lstm", "qlstm_proj", {"bias": bias, "clip": proj_clip > 0},
                 (n_out, batch),
                 [hid, In(16), *([In(17)] if bias else []), Out(0), Out(2), i32(units),
                  i32(hidden_zp), *qmul(ctx.inputs[16].scale * hidden_scale / out.scale),
                  i32(out.zero_point), i32(qp)])


register_kernel("QUANTIZED_16BIT_LSTM", family="quantized_lstm", support=support,
                plan=plan_q16)
register_kernel("QUANTIZED_LSTM", family="quantized_lstm", support=support, plan=plan_qlstm,
                host_inputs=[24, 25, 26, 27, 28, 29, 30, 31], omitted_inputs=True,
                device_support=local_memory_support(48))
