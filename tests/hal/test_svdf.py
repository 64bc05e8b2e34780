import numpy as np
import pytest

from tests.kits.one_op_models import omitted, one_op_model, rejected, run, scalar, tensor

RNG = np.random.default_rng(5)
T = "TENSOR_FLOAT32"


def _model(batch, n_in, units, rank, mem, bias=True, act=0, t=T):
    f = units * rank
    specs = [tensor(t, [batch, n_in]), tensor(t, [f, n_in]), tensor(t, [f, mem]),
             tensor(t, [units]) if bias else omitted(t), tensor(t, [batch, mem * f]),
             scalar("INT32", rank), scalar("INT32", act)]
    return one_op_model("SVDF", specs, [tensor(t, [batch, mem * f]), tensor(t, [batch, units])])


@pytest.mark.parametrize("rank,bias,act", [(1, True, 0), (2, False, 1), (2, True, 3)])
def test_svdf_step(rank, bias, act):
    batch, n_in, units, mem = 2, 3, 4, 5
    f = units * rank
    x, wf, wt = RNG.normal(size=(batch, n_in)), RNG.normal(size=(f, n_in)), \
        RNG.normal(size=(f, mem))
    b = RNG.normal(size=units)
    state = RNG.normal(size=(batch, f, mem))
    state[:, :, -1] = 0
    arrs = [a.astype(np.float32) for a in (x, wf, wt, b, state.reshape(batch, -1))]
    feed = arrs if bias else arrs[:3] + arrs[4:]
    new_state, out = run(_model(batch, n_in, units, rank, mem, bias, act), feed)
    mem_now = state.copy()
    mem_now[:, :, -1] = x @ wf.T
    ref = (mem_now * wt).sum(2).reshape(batch, units, rank).sum(2) + (b if bias else 0)
    ref = {0: ref, 1: np.maximum(ref, 0), 3: np.clip(ref, 0, 6)}[act]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    shifted = np.concatenate([mem_now[:, :, 1:], np.zeros((batch, f, 1))], 2)
    np.testing.assert_allclose(new_state.reshape(batch, f, mem), shifted, rtol=1e-5, atol=1e-6)


def test_svdf_state_feeds_next_step():
    m = _model(1, 2, 1, 1, 3, bias=False)
    wf = np.array([[1.0, 0.0]], np.float32)
    wt = np.array([[1.0, 10.0, 100.0]], np.float32)
    state = np.zeros((1, 3), np.float32)
    outs = []
    for v in (1.0, 2.0, 3.0):
        state, out = run(m, [np.array([[v, 0]], np.float32), wf, wt, state])
        outs.append(float(out[0, 0]))
    assert outs == [100.0, 10.0 + 200.0, 1.0 + 20.0 + 300.0]


def test_svdf_rejects():
    assert "rank" in rejected(_model(1, 2, 2, 0, 3))
    assert "fused activation" in rejected(_model(1, 2, 2, 1, 3, act=7))
    specs = [tensor(T, [1, 2]), tensor(T, [2, 2]), tensor(T, [2, 3]), omitted(),
             tensor(T, [1, 5]), scalar("INT32", 1), scalar("INT32", 0)]
    assert "state in" in rejected(one_op_model("SVDF", specs, [tensor(T, [1, 6]),
                                                                tensor(T, [1, 2])]))
