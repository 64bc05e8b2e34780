"""QUANTIZED_16BIT_LSTM and QUANTIZED_LSTM on OpenCL (no fallback) vs the reference device,
bit for bit, on random seeded weights and states: QUANTIZED_LSTM with and without CIFG,
peephole, layer normalization, projection (bias, clip) and cell clip, constant and
model-input weights, several batch rows."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import omitted as _omitted
from tests.kits.one_op_models import scalar, tensor

RNG = np.random.default_rng(21)


def omitted(t):
    """An absent operand (quantized types still need a valid scale)."""
    return replace(_omitted(t), scale=0.0 if t == "TENSOR_INT32" else 1.0)


def _q(t, shape, lo, hi, dt, const, scale, zp=0):
    a = RNG.integers(lo, hi + 1, shape).astype(dt)
    return tensor(t, shape, a if const else None, scale=scale, zero_point=zp), \
        (None if const else a)


@pytest.mark.parametrize("batch,n_in,n_out", [(1, 3, 4), (3, 5, 6), (2, 2, 2)])
@pytest.mark.parametrize("const", [False, True])
def test_quantized_16bit_lstm(cl_device, batch, n_in, n_out, const):
    specs, arrays = [], []

    def add(spec, arr):
        specs.append(spec)
        if arr is not None:
            arrays.append(arr)

    add(*_q("TENSOR_QUANT8_ASYMM", [batch, n_in], 0, 255, np.uint8, False, 1 / 128, 128))
    for k in range(8):
        add(*_q("TENSOR_QUANT8_ASYMM", [n_out, n_in if k < 4 else n_out], 0, 255, np.uint8,
                const, 0.00408021, 100))
    for _ in range(4):
        add(*_q("TENSOR_INT32", [n_out], -20000, 20000, np.int32, const,
                1 / 128 * 0.00408021))
    add(*_q("TENSOR_QUANT16_SYMM", [batch, n_out], -32768, 32767, np.int16, False, 2 ** -11))
    add(*_q("TENSOR_QUANT8_ASYMM", [batch, n_out], 0, 255, np.uint8, False, 1 / 128, 128))
    outs = [tensor("TENSOR_QUANT16_SYMM", [batch, n_out], scale=2 ** -11),
            tensor("TENSOR_QUANT8_ASYMM", [batch, n_out], scale=1 / 128, zero_point=128)]
    check("QUANTIZED_16BIT_LSTM", specs, outs, arrays, cl_device)


QLSTM_CASES = [dict(), dict(cifg=True), dict(peep=True), dict(ln=True),
               dict(cifg=True, peep=True, ln=True, cell_clip=0.5),
               dict(proj=True, proj_bias=True, proj_clip=0.5),
               dict(peep=True, ln=True, proj=True, const=True)]


@pytest.mark.parametrize("case", QLSTM_CASES, ids=str)
@pytest.mark.parametrize("batch", [1, 3])
def test_quantized_lstm(cl_device, case, batch, units=4):
    cifg, peep, ln, proj = (case.get(k, False) for k in ("cifg", "peep", "ln", "proj"))
    const = case.get("const", False)
    n_in = 5
    n_out = 3 if proj else units
    Q8S, Q8, Q16, I32 = ("TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_SYMM",
                         "TENSOR_QUANT16_SYMM", "TENSOR_INT32")
    specs, arrays = [], []

    def add(spec, arr=None):
        specs.append(spec)
        if arr is not None:
            arrays.append(arr)

    add(*_q(Q8S, [batch, n_in], -128, 127, np.int8, False, 0.0078125, 3))
    for k in range(8):
        if cifg and k in (0, 4):
            add(omitted(Q8))
        else:
            add(*_q(Q8, [units, n_in if k < 4 else n_out], -127, 127, np.int8, const,
                    0.00784314))
    for k in range(3):
        if peep and not (cifg and k == 0):
            add(*_q(Q16, [units], -3000, 3000, np.int16, const, 1.0 / 1024))
        else:
            add(omitted(Q16))
    for k in range(4):
        if cifg and k == 0:
            add(omitted(I32))
        else:
            add(*_q(I32, [units], -300_000, 300_000, np.int32, const, 0.0))
    if proj:
        add(*_q(Q8, [n_out, units], -127, 127, np.int8, const, 0.00392157))
        if case.get("proj_bias"):
            add(*_q(I32, [n_out], -2000, 2000, np.int32, const, 0.0))
        else:
            add(omitted(I32))
    else:
        add(omitted(Q8))
        add(omitted(I32))
    add(*_q(Q8S, [batch, n_out], -128, 127, np.int8, False, 3.05176e-05, -2))
    add(*_q(Q16, [batch, units], -20000, 20000, np.int16, False, 2.0 ** -15))
    for k in range(4):
        if ln and not (cifg and k == 0):
            add(*_q(Q16, [units], 3000, 30000, np.int16, const, 3.05182e-05))
        else:
            add(omitted(Q16))
    add(scalar("FLOAT32", case.get("cell_clip", 0.0)))
    add(scalar("FLOAT32", case.get("proj_clip", 0.0)))
    for s in (0.007059, 0.007812, 0.007059, 0.007812):
        add(scalar("FLOAT32", s))
    add(scalar("INT32", 1))
    add(scalar("FLOAT32", 0.007))
    out_scale = 0.01 if proj else 3.05176e-05  # a projection rescales to the output's scale
    outs = [tensor(Q8S, [batch, n_out], scale=out_scale, zero_point=-2),
            tensor(Q16, [batch, units], scale=2.0 ** -15),
            tensor(Q8S, [batch, n_out], scale=out_scale, zero_point=-2)]
    check("QUANTIZED_LSTM", specs, outs, arrays, cl_device)


def test_quantized_lstm_more_units_than_the_work_group(cl_device):
    # one work-group per batch row strides over the units (at most 256 work-items)
    test_quantized_lstm(cl_device, dict(peep=True, ln=True, proj=True), 2, units=300)
