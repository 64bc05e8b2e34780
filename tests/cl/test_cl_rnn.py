"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN and SVDF on OpenCL (no
fallback) vs the reference device: every fused activation, constant and model-input weights,
float32 / float16, time- and batch-major, merged outputs, aux inputs (cross and parallel
linking), state outputs; SVDF with and without bias, rank 1 and 2, memory 1."""

from __future__ import annotations

import numpy as np
import pytest

from hal.reference import ReferenceDevice
from tests.kits.cl_compare import assert_close, outputs_of, run_cl, run_ref, status_of
from tests.kits.one_op_models import omitted, one_op_model, scalar, tensor

RNG = np.random.default_rng(5)
REFERENCE = ReferenceDevice()
F32, F16 = "TENSOR_FLOAT32", "TENSOR_FLOAT16"


def _arr(t, shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, shape).astype(np.float16 if t == F16 else np.float32)


def _inputs(t, shapes, const):
    """Specs / arrays: constants (weights) where ``const`` holds, else model inputs."""
    specs, arrays = [], []
    for shape, c in zip(shapes, const):
        a = _arr(t, shape, -0.5, 0.5)
        if c:
            specs.append(tensor(t, shape, a))
        else:
            specs.append(tensor(t, shape))
            arrays.append(a)
    return specs, arrays


def _compare(model, arrays, device, kind):
    got = run_cl(model, arrays, device)
    for g, w in zip(got, run_ref(model, arrays)):
        assert_close(g, w, kind)


@pytest.mark.parametrize("act", [0, 1, 2, 3])
@pytest.mark.parametrize("t,const", [(F32, False), (F32, True), (F16, False)])
def test_rnn(cl_device, act, t, const):
    batch, n_in, units = 3, 4, 5
    specs, arrays = _inputs(t, [[batch, n_in], [units, n_in], [units, units], [units],
                                [batch, units]], [False, const, const, const, False])
    model = one_op_model("RNN", specs + [scalar("INT32", act)],
                         [tensor(t, [batch, units])] * 2)
    _compare(model, arrays, cl_device, "f16" if t == F16 else "f32")


@pytest.mark.parametrize("tm", [0, 1])
@pytest.mark.parametrize("t,states", [(F32, False), (F32, True), (F16, True)])
def test_unidirectional_rnn(cl_device, tm, t, states):
    steps, batch, n_in, units = 6, 2, 3, 4
    x = [steps, batch, n_in] if tm else [batch, steps, n_in]
    specs, arrays = _inputs(t, [x, [units, n_in], [units, units], [units], [batch, units]],
                            [False, True, False, True, False])
    y = [steps, batch, units] if tm else [batch, steps, units]
    outs = [tensor(t, y)] + ([tensor(t, [batch, units])] if states else [])
    model = one_op_model("UNIDIRECTIONAL_SEQUENCE_RNN",
                         specs + [scalar("INT32", 1), scalar("INT32", tm)], outs)
    _compare(model, arrays, cl_device, "f16" if t == F16 else "f32")


@pytest.mark.parametrize("tm,merge,aux,states", [
    (True, False, None, False), (False, True, None, True), (True, True, "cross", True),
    (False, False, "parallel", True)])
def test_bidirectional_rnn(cl_device, tm, merge, aux, states):
    t, steps, batch, n_in, fw, bw = F32, 5, 2, 3, 4, 3
    x = [steps, batch, n_in] if tm else [batch, steps, n_in]
    specs, arrays = _inputs(t, [x, [fw, n_in], [fw, fw], [fw], [batch, fw], [bw, n_in],
                                [bw, bw], [bw], [batch, bw]], [False, True] + [False] * 7)
    if aux:
        specs.append(tensor(t, x))
        arrays.append(_arr(t, x))
    else:
        specs.append(omitted(t))
    if aux == "cross":
        s, a = _inputs(t, [[fw, n_in], [bw, n_in]], [False, True])
        specs += s
        arrays += a
    else:
        specs += [omitted(t)] * 2
    specs += [scalar("INT32", 3), scalar("BOOL", tm), scalar("BOOL", merge)]

    def seq(n):
        return tensor(t, [steps, batch, n] if tm else [batch, steps, n])

    outs = [seq(fw + bw)] if merge else [seq(fw), seq(bw)]
    if states:
        outs += [tensor(t, [batch, fw]), tensor(t, [batch, bw])]
    model = one_op_model("BIDIRECTIONAL_SEQUENCE_RNN", specs, outs)
    _compare(model, arrays, cl_device, "f32")


def test_rnn_sequence_is_one_gemm_per_step(cl_device):
    steps, batch, n_in, units = 8, 1, 3, 4
    specs, arrays = _inputs(F32, [[steps, batch, n_in], [units, n_in], [units, units], [units],
                                  [batch, units]], [False, True, True, True, False])
    model = one_op_model("UNIDIRECTIONAL_SEQUENCE_RNN",
                         specs + [scalar("INT32", 0), scalar("INT32", 1)],
                         [tensor(F32, [steps, batch, units])])
    prepared = cl_device.prepare_model(model)
    outputs_of(model, prepared, arrays)
    (part,) = prepared.partitions
    (plan,) = [p for p in part.plans.values() if p is not None]
    names = [launch.name for launch in plan.launches]
    assert names.count("gemm.gemm") == steps + 1
    assert names.count("rnn.copy_rows") == steps


@pytest.mark.parametrize("rank,mem,bias,act", [(1, 4, True, 0), (2, 3, False, 1),
                                               (2, 1, True, 3), (1, 2, True, 2)])
@pytest.mark.parametrize("t,const", [(F32, True), (F32, False), (F16, False)])
def test_svdf(cl_device, rank, mem, bias, act, t, const):
    batch, n_in, units = 2, 5, 3
    filters = units * rank
    specs, arrays = _inputs(t, [[batch, n_in], [filters, n_in], [filters, mem]],
                            [False, const, const])
    if bias:
        s, a = _inputs(t, [[units]], [const])
        specs += s
        arrays += a
    else:
        specs.append(omitted(t))
    s, a = _inputs(t, [[batch, mem * filters]], [False])
    specs += s + [scalar("INT32", rank), scalar("INT32", act)]
    arrays += a
    model = one_op_model("SVDF", specs, [tensor(t, [batch, mem * filters]),
                                         tensor(t, [batch, units])])
    _compare(model, arrays, cl_device, "f16" if t == F16 else "f32")


def test_svdf_broadcast_bias_and_bad_state_decided_by_the_reference(cl_device):
    # shapes the model validation accepts but the kernels do not take: the reference runs
    # them, so a [1] bias broadcasts and a state of the wrong width fails, as there
    batch, n_in, units, rank, mem = 2, 3, 2, 1, 2

    # bias and state of unknown dimensions: the request gives them
    specs = [tensor(F32, [batch, n_in]), tensor(F32, [units * rank, n_in]),
             tensor(F32, [units * rank, mem]), tensor(F32, [0]), tensor(F32, [batch, 0]),
             scalar("INT32", rank), scalar("INT32", 0)]
    outs = [tensor(F32, [batch, mem * units * rank]), tensor(F32, [batch, units])]
    shapes = [[batch, n_in], [units * rank, n_in], [units * rank, mem]]
    arrays = [_arr(F32, d) for d in shapes] + [_arr(F32, [1]), _arr(F32, [batch, mem * units])]
    m = one_op_model("SVDF", specs, outs)
    got = outputs_of(m, cl_device.prepare_model(m), arrays)
    for g, w in zip(got, run_ref(m, arrays)):
        assert_close(g, w, "f32")
    arrays[4] = _arr(F32, [batch, mem * units + 1])
    assert status_of("SVDF", specs, outs, arrays, cl_device) == \
        status_of("SVDF", specs, outs, arrays, REFERENCE) != 0


def test_sequence_of_no_steps_returns_the_input_state(cl_device):
    # a [0, batch, in] sequence made inside the model (TILE by [0, 1, 1]: requests cannot carry
    # zero-sized tensors): the output sequence is empty, the state output is the input state
    from hal.types import Model, OperandLifeTime, Operation, OperationType, Subgraph

    batch, n_in, units = 2, 3, 4
    w = [_arr(F32, s) for s in ([units, n_in], [units, units], [units])]
    base = one_op_model("TILE", [
        tensor(F32, [2, batch, n_in]), tensor("TENSOR_INT32", [3], np.array([0, 1, 1], np.int32)),
        *[tensor(F32, a.shape, a) for a in w], tensor(F32, [batch, units]),
        scalar("INT32", 0), scalar("INT32", 1)],
        [tensor(F32, [0, batch, n_in]), tensor(F32, [0, batch, units]),
         tensor(F32, [batch, units])])
    sg = base.main
    sg.operands[8].lifetime = OperandLifeTime.TEMPORARY_VARIABLE
    ops = [Operation(OperationType.TILE, [0, 1], [8]),
           Operation(OperationType.UNIDIRECTIONAL_SEQUENCE_RNN, [8, 2, 3, 4, 5, 6, 7], [9, 10])]
    model = Model(Subgraph(sg.operands, ops, [0, 5], [9, 10]), [], base.operand_values,
                  base.pools, False)
    h0 = _arr(F32, [batch, units])
    x = [_arr(F32, [2, batch, n_in]), h0]
    assert cl_device.get_supported_operations(model) == [True, True]
    y, h = outputs_of(model, cl_device.prepare_model(model), x)
    assert y.shape == (0, batch, units)
    assert np.array_equal(h, h0)
    assert np.array_equal(h, run_ref(model, x)[1])
