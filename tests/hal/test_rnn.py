import numpy as np
import pytest

from tests.kits.one_op_models import omitted, one_op_model, rejected, run, scalar, tensor

RNG = np.random.default_rng(11)
T = "TENSOR_FLOAT32"


def _w(*shape):
    return RNG.uniform(-0.5, 0.5, shape).astype(np.float32)


def _act(v, act):
    return {0: v, 1: np.maximum(v, 0), 2: np.clip(v, -1, 1), 3: np.clip(v, 0, 6)}[act]


def _rnn_model(batch, n_in, units, act=1, t=T):
    specs = [tensor(t, [batch, n_in]), tensor(t, [units, n_in]), tensor(t, [units, units]),
             tensor(t, [units]), tensor(t, [batch, units]), scalar("INT32", act)]
    return one_op_model("RNN", specs, [tensor(t, [batch, units])] * 2)


@pytest.mark.parametrize("act", [0, 1, 2, 3])
def test_rnn_formula(act):
    x, w, r, b, h = _w(2, 3), _w(4, 3) * 4, _w(4, 4), _w(4), _w(2, 4)
    state, out = run(_rnn_model(2, 3, 4, act), [x, w, r, b, h])
    np.testing.assert_allclose(out, _act(x @ w.T + h @ r.T + b, act), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(state, out)


def test_rnn_float16():
    x, w, r, b, h = _w(2, 3), _w(4, 3), _w(4, 4), _w(4), _w(2, 4)
    _, out = run(_rnn_model(2, 3, 4, 0, "TENSOR_FLOAT16"),
                 [a.astype(np.float16) for a in (x, w, r, b, h)])
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, x @ w.T + h @ r.T + b, atol=5e-3)


def test_rnn_zero_batch():
    # zero-sized tensors only reach an op as intermediates: drive the op's execute directly
    from hal.operations.context import OperandInfo, OperationContext
    from hal.operations.rnn import execute_rnn
    from hal.types import OperandType, OperationType

    ft = OperandType.TENSOR_FLOAT32
    vals = [np.zeros((0, 3), np.float32), _w(4, 3), _w(4, 4), _w(4),
            np.zeros((0, 4), np.float32)]
    ins = [OperandInfo(ft, v.shape, value=v) for v in vals]
    ins.append(OperandInfo(OperandType.INT32, (), value=np.array(1, np.int32)))
    outs = [OperandInfo(ft, (0, 4)), OperandInfo(ft, (0, 4))]
    state, out = execute_rnn(OperationContext(OperationType.RNN, ins, outs))
    assert out.shape == (0, 4) and state.shape == (0, 4)


def test_rnn_rejects():
    assert "fused activation" in rejected(_rnn_model(2, 3, 4, act=4))
    specs = [tensor(T, [2, 3, 1]), tensor(T, [4, 3]), tensor(T, [4, 4]), tensor(T, [4]),
             tensor(T, [2, 4]), scalar("INT32", 0)]
    assert "rank" in rejected(one_op_model("RNN", specs, [tensor(T, [2, 4])] * 2))
    specs[0] = tensor(T, [2, 3])
    specs[2] = tensor(T, [5, 5])
    assert "num_units" in rejected(one_op_model("RNN", specs, [tensor(T, [2, 4])] * 2))
    specs[2] = tensor(T, [4, 4])
    assert "signature" in rejected(one_op_model("RNN", specs, [tensor("TENSOR_INT32",
                                                                      [2, 4])] * 2))


def _sequence(x, h, w, r, b, act, reverse=False):
    out = np.zeros((x.shape[0], x.shape[1], w.shape[0]), np.float32)
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    for t in steps:
        h = _act(x[t] @ w.T + h @ r.T + b, act)
        out[t] = h
    return out, h


@pytest.mark.parametrize("time_major", [0, 1])
@pytest.mark.parametrize("n_out", [1, 2])
def test_unidirectional(time_major, n_out):
    x, w, r, b, h = _w(3, 2, 3), _w(4, 3), _w(4, 4), _w(4), _w(2, 4)
    x_in = x if time_major else x.transpose(1, 0, 2)
    specs = [tensor(T, x_in.shape), tensor(T, [4, 3]), tensor(T, [4, 4]), tensor(T, [4]),
             tensor(T, [2, 4]), scalar("INT32", 1), scalar("INT32", time_major)]
    outs = [tensor(T, list(x_in.shape[:2]) + [4]), tensor(T, [2, 4])][:n_out]
    res = run(one_op_model("UNIDIRECTIONAL_SEQUENCE_RNN", specs, outs), [x_in, w, r, b, h])
    ref, h_last = _sequence(x, h, w, r, b, 1)
    np.testing.assert_allclose(res[0], ref if time_major else ref.transpose(1, 0, 2),
                               atol=1e-6)
    if n_out == 2:
        np.testing.assert_allclose(res[1], h_last, atol=1e-6)


def test_unidirectional_rejects_time_major_value():
    specs = [tensor(T, [3, 2, 3]), tensor(T, [4, 3]), tensor(T, [4, 4]), tensor(T, [4]),
             tensor(T, [2, 4]), scalar("INT32", 1), scalar("INT32", 2)]
    m = one_op_model("UNIDIRECTIONAL_SEQUENCE_RNN", specs, [tensor(T, [3, 2, 4])])
    assert "time_major" in rejected(m)


def _bidir(merge, aux_mode, n_states=0):
    specs = [tensor(T, [3, 2, 3])]
    for _ in range(2):
        specs += [tensor(T, [4, 3]), tensor(T, [4, 4]), tensor(T, [4]), tensor(T, [2, 4])]
    specs += [tensor(T, [3, 2, 3]) if aux_mode else omitted()]
    specs += [tensor(T, [4, 3]) if aux_mode == "cross" else omitted()] * 2
    specs += [scalar("INT32", 0), scalar("BOOL", True), scalar("BOOL", merge)]
    outs = [tensor(T, [3, 2, 8])] if merge else [tensor(T, [3, 2, 4])] * 2
    outs += [tensor(T, [2, 4])] * n_states
    return one_op_model("BIDIRECTIONAL_SEQUENCE_RNN", specs, outs)


@pytest.mark.parametrize("merge", [False, True])
@pytest.mark.parametrize("aux_mode", [None, "cross", "parallel"])
def test_bidirectional(merge, aux_mode):
    x, aux = _w(3, 2, 3), _w(3, 2, 3)
    fw = [_w(4, 3), _w(4, 4), _w(4), _w(2, 4)]
    bw = [_w(4, 3), _w(4, 4), _w(4), _w(2, 4)]
    aux_w = [_w(4, 3), _w(4, 3)]
    feed = [x] + fw + bw + ([aux] if aux_mode else []) + (aux_w if aux_mode == "cross" else [])
    res = run(_bidir(merge, aux_mode, 2), feed)
    if aux_mode == "cross":
        fw_ref, fw_h = _sequence(np.concatenate([x, aux], 2), fw[3],
                                 np.concatenate([fw[0], aux_w[0]], 1), fw[1], fw[2], 0)
        bw_ref, bw_h = _sequence(np.concatenate([x, aux], 2), bw[3],
                                 np.concatenate([bw[0], aux_w[1]], 1), bw[1], bw[2], 0, True)
    else:
        fw_ref, fw_h = _sequence(x, fw[3], fw[0], fw[1], fw[2], 0)
        bw_in = aux if aux_mode == "parallel" else x
        bw_ref, bw_h = _sequence(bw_in, bw[3], bw[0], bw[1], bw[2], 0, True)
    if merge:
        np.testing.assert_allclose(res[0], np.concatenate([fw_ref, bw_ref], 2), atol=1e-5)
    else:
        np.testing.assert_allclose(res[0], fw_ref, atol=1e-5)
        np.testing.assert_allclose(res[1], bw_ref, atol=1e-5)
    np.testing.assert_allclose(res[-2], fw_h, atol=1e-5)
    np.testing.assert_allclose(res[-1], bw_h, atol=1e-5)


def test_bidirectional_rejects():
    m = _bidir(False, None)  # two outputs, but merge_outputs set to true below
    op = m.main.operations[0]
    loc = m.main.operands[op.inputs[14]].location
    data = bytearray(m.operand_values)
    data[loc.offset] = 1
    m.operand_values = bytes(data)
    assert "merge_outputs" in rejected(m)
    m = _bidir(False, "cross")
    m.main.operands[m.main.operations[0].inputs[11]].dimensions = (4, 3, 1)
    assert "rank" in rejected(m)
