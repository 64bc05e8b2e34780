"""LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM on OpenCL (no fallback)
vs the reference device: CIFG, peephole, projection (bias, clip), layer normalization, cell
clip, every activation, constant and model-input weights, float32 / float16 / relaxed,
time- and batch-major, merged outputs, aux inputs (cross and parallel linking), request-
omitted optional inputs, and the plan's time loop staying on the device."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import assert_close, outputs_of, run_cl, run_ref
from tests.kits.one_op_models import omitted, one_op_model, scalar, tensor

RNG = np.random.default_rng(11)
F32, F16 = "TENSOR_FLOAT32", "TENSOR_FLOAT16"


def _w(shape):
    return RNG.uniform(-0.5, 0.5, shape).astype(np.float32)


def direction(t, n_in, units, out, *, cifg=False, peep=False, proj=False, proj_bias=False,
              const=False):
    """Specs and input arrays of LSTM inputs 1-17 (one direction)."""
    shapes = [[units, n_in]] * 4 + [[units, out]] * 4 + [[units]] * 7 + [[out, units], [out]]
    absent = set()
    if cifg:
        absent |= {0, 4, 8, 11}
    if not peep:
        absent |= {8, 9, 10}
    if not proj:
        absent |= {15, 16}
    if not proj_bias:
        absent.add(16)
    return _specs(t, shapes, absent, const)


def _specs(t, shapes, absent, const):
    dt = np.float16 if t == F16 else np.float32
    specs, arrays = [], []
    for k, shape in enumerate(shapes):
        if k in absent:
            specs.append(omitted(t))
            continue
        a = _w(shape).astype(dt)
        if const:
            specs.append(tensor(t, shape, a))
        else:
            specs.append(tensor(t, shape))
            arrays.append(a)
    return specs, arrays


def layer_norm(t, units, cifg, const):
    return _specs(t, [[units]] * 4, {0} if cifg else set(), const)


def _scalars(t, act, cell_clip, proj_clip):
    s = "FLOAT16" if t == F16 else "FLOAT32"
    return [scalar("INT32", act), scalar(s, cell_clip), scalar(s, proj_clip)]


def _compare(model, inputs, kind):
    got = run_cl(model, inputs, CL[0])
    want = run_ref(model, inputs)
    for g, w in zip(got, want):
        assert_close(g, w, kind)
    return got


CL = []


@pytest.fixture(autouse=True)
def _device(cl_device):
    CL[:] = [cl_device]


def _arr(t, shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, shape).astype(np.float16 if t == F16 else np.float32)


LSTM_CASES = [
    dict(),
    dict(cifg=True),
    dict(peep=True),
    dict(cifg=True, peep=True),
    dict(proj=True, proj_bias=True, proj_clip=0.3),
    dict(peep=True, proj=True, ln=True, cell_clip=0.4),
    dict(cifg=True, peep=True, ln=True),
    dict(act=1), dict(act=3), dict(act=6), dict(act=0, cell_clip=0.2),
]


@pytest.mark.parametrize("case", LSTM_CASES, ids=str)
@pytest.mark.parametrize("const", [False, True])
def test_lstm_cell(case, const):
    case = dict(case)
    act, cc, pc, ln = (case.pop(k, d) for k, d in (("act", 4), ("cell_clip", 0.0),
                                                   ("proj_clip", 0.0), ("ln", False)))
    batch, n_in, units = 3, 5, 6
    out = 4 if case.get("proj") else units
    d_specs, d_arr = direction(F32, n_in, units, out, const=const, **case)
    specs = [tensor(F32, [batch, n_in])] + d_specs + [tensor(F32, [batch, out]),
                                                      tensor(F32, [batch, units])]
    specs += _scalars(F32, act, cc, pc)
    arrays = [_arr(F32, [batch, n_in])] + d_arr + [_arr(F32, [batch, out]),
                                                   _arr(F32, [batch, units])]
    if ln:
        ln_specs, ln_arr = layer_norm(F32, units, case.get("cifg"), const)
        specs += ln_specs
        arrays += ln_arr
    gates = 3 if case.get("cifg") else 4
    outs = [tensor(F32, [batch, units * gates]), tensor(F32, [batch, out]),
            tensor(F32, [batch, units]), tensor(F32, [batch, out])]
    _compare(one_op_model("LSTM", specs, outs), arrays, "f32")


def _uni(t, steps, batch, n_in, units, out, tm, *, ln=False, states=True, act=4, cc=0.0,
         pc=0.0, const=False, relaxed=False, **case):
    d_specs, d_arr = direction(t, n_in, units, out, const=const, **case)
    x_shape = [steps, batch, n_in] if tm else [batch, steps, n_in]
    specs = [tensor(t, x_shape)] + d_specs + [tensor(t, [batch, out]), tensor(t, [batch, units])]
    specs += _scalars(t, act, cc, pc) + [scalar("BOOL", tm)]
    arrays = [_arr(t, x_shape)] + d_arr + [_arr(t, [batch, out]), _arr(t, [batch, units])]
    if ln:
        ln_specs, ln_arr = layer_norm(t, units, case.get("cifg"), const)
        specs += ln_specs
        arrays += ln_arr
    else:
        specs += [omitted(t)] * 4
    y = [steps, batch, out] if tm else [batch, steps, out]
    outs = [tensor(t, y)] + ([tensor(t, [batch, out]), tensor(t, [batch, units])]
                             if states else [])
    return one_op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", specs, outs, relaxed=relaxed), arrays


@pytest.mark.parametrize("tm", [True, False])
@pytest.mark.parametrize("case", [dict(), dict(cifg=True, peep=True, ln=True, const=True),
                                  dict(peep=True, proj=True, proj_bias=True, pc=0.5, cc=1.0)],
                         ids=str)
def test_unidirectional_lstm(tm, case):
    out = 3 if case.get("proj") else 5
    model, arrays = _uni(F32, 7, 2, 4, 5, out, tm, **case)
    _compare(model, arrays, "f32")


def test_unidirectional_lstm_float16_and_relaxed():
    model, arrays = _uni(F16, 5, 2, 3, 4, 4, False, peep=True, ln=True)
    _compare(model, arrays, "f16")
    model, arrays = _uni(F32, 5, 2, 3, 4, 4, True, relaxed=True, cifg=True)
    _compare(model, arrays, "f32")


def test_unidirectional_lstm_one_batch_long_sequence_without_state_outputs():
    model, arrays = _uni(F32, 40, 1, 16, 24, 24, True, states=False, const=True)
    _compare(model, arrays, "f32")


def test_lstm_sequence_plan_has_the_time_loop_on_the_device(cl_device):
    steps = 9
    model, arrays = _uni(F32, steps, 2, 3, 4, 4, True, const=True)
    prepared = cl_device.prepare_model(model)
    (part,) = prepared.partitions
    assert part.on_cl
    outputs_of(model, prepared, arrays)
    (plan,) = [p for p in part.plans.values() if p is not None]
    names = [launch.name for launch in plan.launches]
    # one recurrent GEMM and one fused cell kernel per step, the input GEMM once
    assert names.count("lstm.cell") == steps
    assert names.count("gemm.gemm") == steps + 1


def _bi(t, steps, batch, n_in, units, tm, merge, aux=None, states=False, ln=False):
    fw_s, fw_a = direction(t, n_in, units, units, peep=ln)
    bw_s, bw_a = direction(t, n_in, units, units, cifg=ln)
    x_shape = [steps, batch, n_in] if tm else [batch, steps, n_in]
    specs = [tensor(t, x_shape)] + fw_s + bw_s + [tensor(t, [batch, units])] * 4
    arrays = [_arr(t, x_shape)] + fw_a + bw_a + [_arr(t, [batch, units]) for _ in range(4)]
    specs.append(tensor(t, x_shape) if aux else omitted(t))
    if aux:
        arrays.append(_arr(t, x_shape))
    aux_w = aux == "cross"
    for _ in range(8):
        specs.append(tensor(t, [units, n_in]) if aux_w else omitted(t))
        if aux_w:
            arrays.append(_arr(t, [units, n_in], -0.5, 0.5))
    specs += _scalars(t, 4, 0.0, 0.0) + [scalar("BOOL", merge), scalar("BOOL", tm)]
    for cifg in (False, True):
        if ln:
            s, a = layer_norm(t, units, cifg, False)
            specs += s
            arrays += a
        else:
            specs += [omitted(t)] * 4
    y = [steps, batch, units] if tm else [batch, steps, units]
    y2 = list(y[:2]) + [2 * units]
    outs = [tensor(t, y2)] if merge else [tensor(t, y), tensor(t, y)]
    if states:
        outs += [tensor(t, [batch, units])] * 4
    return one_op_model("BIDIRECTIONAL_SEQUENCE_LSTM", specs, outs), arrays


@pytest.mark.parametrize("tm,merge,aux,states,ln", [
    (True, False, None, False, False), (False, True, None, True, False),
    (True, True, "cross", True, False), (False, False, "parallel", False, True)])
def test_bidirectional_lstm(tm, merge, aux, states, ln):
    model, arrays = _bi(F32, 4, 2, 3, 5, tm, merge, aux, states, ln)
    _compare(model, arrays, "f32")


def test_bidirectional_lstm_float16():
    model, arrays = _bi(F16, 3, 2, 3, 4, False, True, "cross", True)
    _compare(model, arrays, "f16")


def test_lstm_request_omitted_inputs_run_on_the_device(cl_device):
    # the CTS passes absent optional operands as model inputs the request omits (no value):
    # the plan takes them as NO_VALUE instead of running the partition on the reference
    batch, n_in, units = 2, 3, 4
    d_specs, d_arr = direction(F32, n_in, units, units)
    specs = [tensor(F32, [batch, n_in])]
    arrays = [_arr(F32, [batch, n_in])]
    it = iter(d_arr)
    shapes = [[units, n_in]] * 4 + [[units, units]] * 4 + [[units]] * 7 + \
        [[units, units], [units]]
    for s, shape in zip(d_specs, shapes):
        specs.append(tensor(F32, shape))
        arrays.append(None if s.omitted else next(it))
    specs += [tensor(F32, [batch, units]), tensor(F32, [batch, units])] + _scalars(F32, 4, 0, 0)
    arrays += [_arr(F32, [batch, units]), _arr(F32, [batch, units])]
    outs = [tensor(F32, [batch, 4 * units])] + [tensor(F32, [batch, units])] * 3
    model = one_op_model("LSTM", specs, outs)
    prepared = cl_device.prepare_model(model)
    got = outputs_of(model, prepared, arrays)
    (part,) = prepared.partitions
    # the plan of this execution is keyed by the omitted inputs (a plan made at prepare from
    # the declared shapes is not)
    assert any(key[2] and p is not None for key, p in part.plans.items())
    want = run_ref(model, arrays)
    for g, w in zip(got, want):
        assert_close(g, w, "f32")


def test_layer_norm_cell_with_more_units_than_its_work_group():
    # the layer-norm cell strides over the units with one work-group per batch row (at most
    # 256 work-items): 300 units take two passes per work-item
    model, arrays = _uni(F32, 3, 2, 3, 300, 300, True, ln=True, peep=True)
    _compare(model, arrays, "f32")
