import numpy as np
import pytest

from tests.kits.lstm_models import make_lstm
from tests.kits.one_op_models import omitted, one_op_model, rejected, run, scalar, tensor

RNG = np.random.default_rng(7)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def reference_lstm(n, act=4, cell_clip=0.0, proj_clip=0.0):
    """Straightforward LSTM step from the spec equations."""
    x, h, c = n[0], n[18], n[19]
    g_act = {4: np.tanh, 1: lambda v: np.maximum(v, 0), 0: lambda v: v}[act]
    ln = n.get(24) is not None

    def gate(wx, wr, b, peep=None, state=None, lnw=None):
        z = x @ n[wx].T + h @ n[wr].T
        if peep is not None and n[peep] is not None:
            z = z + n[peep] * state
        if ln:
            z = (z - z.mean(1, keepdims=True)) / np.sqrt(z.var(1, keepdims=True) + 1e-8)
            z = z * n[lnw]
        return z + n[b]

    f = _sig(gate(2, 6, 13, 10, c, 24))
    i = 1 - f if n[1] is None else _sig(gate(1, 5, 12, 9, c, 23))
    c_new = f * c + i * g_act(gate(3, 7, 14, lnw=25))
    if cell_clip:
        c_new = np.clip(c_new, -cell_clip, cell_clip)
    o = _sig(gate(4, 8, 15, 11, c_new, 26))
    h_new = o * g_act(c_new)
    if n.get(16) is not None:
        h_new = h_new @ n[16].T + (n[17] if n.get(17) is not None else 0)
        if proj_clip:
            h_new = np.clip(h_new, -proj_clip, proj_clip)
    return h_new, c_new


@pytest.mark.parametrize("kw", [
    {}, {"cifg": True}, {"peephole": True}, {"cifg": True, "peephole": True},
    {"proj": True}, {"proj": True, "proj_bias": True, "proj_clip": 0.05},
    {"cell_clip": 0.1, "act": 1}, {"ln": True, "peephole": True, "proj": True},
    {"ln": True, "cifg": True},
])
def test_float_matches_equations(kw):
    m, arrays, named = make_lstm(**kw)
    scratch, h, c, o = run(m, arrays)
    act = kw.get("act", 4)
    h_ref, c_ref = reference_lstm(named, act, kw.get("cell_clip", 0.0), kw.get("proj_clip", 0.0))
    np.testing.assert_allclose(c, c_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, h_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(h, o)
    assert scratch.shape[1] == 4 * (3 if kw.get("cifg") else 4)


def test_float16_close_to_float32():
    m32, arrays, named = make_lstm(peephole=True)
    m16, _, _ = make_lstm(peephole=True, t="TENSOR_FLOAT16", s="FLOAT16")
    _, h32, c32, _ = run(m32, arrays)
    _, h16, c16, _ = run(m16, [a.astype(np.float16) for a in arrays])
    assert h16.dtype == np.float16
    np.testing.assert_allclose(h16, h32, atol=5e-3)
    np.testing.assert_allclose(c16, c32, atol=5e-3)


def test_cell_clip_bounds_state():
    m, arrays, named = make_lstm(cell_clip=0.01)
    arrays = [a * 20 for a in arrays]
    _, _, c, _ = run(m, arrays)
    assert np.abs(c).max() <= 0.01 + 1e-7


def _set_scalar(m, index, value, dtype):
    """Rewrite the constant scalar input ``index`` of the single operation in ``m``."""
    op = m.main.operands[m.main.operations[0].inputs[index]]
    loc = op.location
    data = bytearray(m.operand_values)
    data[loc.offset:loc.offset + loc.length] = np.asarray(value, dtype=dtype).tobytes()
    m.operand_values = bytes(data)


@pytest.mark.parametrize("index,value,dtype,needle", [
    (20, 2, np.int32, "activation"), (20, 5, np.int32, "activation"),
    (21, -1.0, np.float32, "cell clip"), (22, -0.5, np.float32, "projection clip"),
])
def test_rejects_bad_scalars(index, value, dtype, needle):
    m, _, _ = make_lstm()
    _set_scalar(m, index, value, dtype)
    assert needle in rejected(m)


def test_rejects_partial_cifg():
    m, _, _ = make_lstm()
    ops = m.main.operands
    from hal.types import OperandLifeTime
    i = m.main.operations[0].inputs[5]
    ops[i].lifetime = OperandLifeTime.NO_VALUE
    m.main.input_indexes.remove(i)
    assert "input gate" in rejected(m)


def test_rejects_wrong_rank_and_type():
    t = "TENSOR_FLOAT32"
    specs = [tensor(t, [2, 3, 1])] + [tensor(t, [4, 3])] * 4 + [tensor(t, [4, 4])] * 4 + \
        [omitted()] * 3 + [tensor(t, [4])] * 4 + [omitted()] * 2 + \
        [tensor(t, [2, 4]), tensor(t, [2, 4]), scalar("INT32", 4), scalar("FLOAT32", 0.0),
         scalar("FLOAT32", 0.0)]
    outs = [tensor(t, [2, 16]), tensor(t, [2, 4]), tensor(t, [2, 4]), tensor(t, [2, 4])]
    assert "rank" in rejected(one_op_model("LSTM", specs, outs))
    specs[0] = tensor(t, [2, 3])
    specs[20] = scalar("FLOAT32", 4.0)
    assert "signature" in rejected(one_op_model("LSTM", specs, outs))
    specs[20] = scalar("INT32", 4)
    assert "signature" in rejected(one_op_model("LSTM", specs[:22], outs))
