import numpy as np
import pytest

from tests.kits.lstm_models import make_lstm
from tests.kits.one_op_models import omitted, one_op_model, rejected, run, scalar, tensor

RNG = np.random.default_rng(3)
T = "TENSOR_FLOAT32"


def _direction(units, n_in, peephole=False):
    """17 weight specs / arrays of one direction (LSTM inputs 1-17), no CIFG, no projection."""
    specs, arrays = [], []
    for k in range(17):
        if k < 4:
            shape = [units, n_in]
        elif k < 8:
            shape = [units, units]
        elif k < 15:
            shape = [units]
        else:
            shape = None
        if shape is None or (8 <= k <= 10 and not peephole):
            specs.append(omitted())
            arrays.append(None)
        else:
            a = RNG.uniform(-0.5, 0.5, shape).astype(np.float32)
            specs.append(tensor(T, shape))
            arrays.append(a)
    return specs, arrays


def _lstm_steps(x_seq, h, c, weights, reverse=False):
    """Run the single-step LSTM op over a time-major sequence."""
    units, n_in = weights[1].shape
    m, _, _ = make_lstm(batch=x_seq.shape[1], n_in=n_in, units=units,
                        peephole=weights[9] is not None)
    outs = [None] * x_seq.shape[0]
    order = range(x_seq.shape[0] - 1, -1, -1) if reverse else range(x_seq.shape[0])
    for t in order:
        feed = [x_seq[t]] + [w for w in weights[1:18] if w is not None] + [h, c]
        _, h, c, _ = run(m, feed)
        outs[t] = h
    return np.stack(outs), h, c


@pytest.mark.parametrize("time_major", [True, False])
@pytest.mark.parametrize("state_outputs", [False, True])
def test_unidirectional_equals_unrolled_lstm(time_major, state_outputs):
    steps, batch, n_in, units = 3, 2, 3, 4
    dir_specs, dir_arrays = _direction(units, n_in, peephole=True)
    x = RNG.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32)
    h0 = RNG.uniform(-1, 1, (batch, units)).astype(np.float32)
    c0 = RNG.uniform(-1, 1, (batch, units)).astype(np.float32)
    x_in = x if time_major else x.transpose(1, 0, 2)
    specs = [tensor(T, x_in.shape)] + dir_specs + [tensor(T, [batch, units])] * 2 + \
        [scalar("INT32", 4), scalar("FLOAT32", 0.0), scalar("FLOAT32", 0.0),
         scalar("BOOL", time_major)] + [omitted()] * 4
    y_shape = list(x_in.shape[:2]) + [units]
    outs = [tensor(T, y_shape)] + ([tensor(T, [batch, units])] * 2 if state_outputs else [])
    m = one_op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", specs, outs)
    res = run(m, [x_in] + [a for a in dir_arrays if a is not None] + [h0, c0])
    ref, h, c = _lstm_steps(x, h0, c0, [None] + dir_arrays)
    y = res[0] if time_major else res[0].transpose(1, 0, 2)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    if state_outputs:
        np.testing.assert_allclose(res[1], h, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(res[2], c, rtol=1e-5, atol=1e-6)


def _bidir_model(steps, batch, n_in, units, merge, aux=False, aux_weights=False,
                 merge_value=None):
    fw_specs, fw = _direction(units, n_in)
    bw_specs, bw = _direction(units, n_in)
    specs = [tensor(T, [steps, batch, n_in])] + fw_specs + bw_specs + \
        [tensor(T, [batch, units])] * 4
    specs += [tensor(T, [steps, batch, n_in]) if aux else omitted()]
    aux_w = [RNG.uniform(-0.5, 0.5, (units, n_in)).astype(np.float32) for _ in range(8)]
    specs += [tensor(T, [units, n_in]) if aux_weights else omitted()] * 8
    specs += [scalar("INT32", 4), scalar("FLOAT32", 0.0), scalar("FLOAT32", 0.0),
              scalar("BOOL", merge if merge_value is None else merge_value),
              scalar("BOOL", True)] + [omitted()] * 8
    outs = ([tensor(T, [steps, batch, 2 * units])] if merge else
            [tensor(T, [steps, batch, units])] * 2)
    m = one_op_model("BIDIRECTIONAL_SEQUENCE_LSTM", specs, outs)
    return m, fw, bw, aux_w


@pytest.mark.parametrize("merge", [False, True])
def test_bidirectional_runs_backward_cell_reversed(merge):
    steps, batch, n_in, units = 3, 1, 2, 3
    m, fw, bw, _ = _bidir_model(steps, batch, n_in, units, merge)
    x = RNG.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32)
    z = np.zeros((batch, units), np.float32)
    res = run(m, [x] + [a for a in fw + bw if a is not None] + [z] * 4)
    fw_ref, _, _ = _lstm_steps(x, z, z, [None] + fw)
    bw_ref, _, _ = _lstm_steps(x, z, z, [None] + bw, reverse=True)
    if merge:
        np.testing.assert_allclose(res[0], np.concatenate([fw_ref, bw_ref], 2), atol=1e-6)
    else:
        np.testing.assert_allclose(res[0], fw_ref, atol=1e-6)
        np.testing.assert_allclose(res[1], bw_ref, atol=1e-6)


def test_bidirectional_parallel_linking_reads_aux_backward():
    steps, batch, n_in, units = 2, 1, 2, 3
    m, fw, bw, _ = _bidir_model(steps, batch, n_in, units, False, aux=True)
    x = RNG.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32)
    aux = RNG.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32)
    z = np.zeros((batch, units), np.float32)
    res = run(m, [x] + [a for a in fw + bw if a is not None] + [z] * 4 + [aux])
    bw_ref, _, _ = _lstm_steps(aux, z, z, [None] + bw, reverse=True)
    np.testing.assert_allclose(res[1], bw_ref, atol=1e-6)


def test_bidirectional_rejects_output_count_for_merge():
    m, _, _, _ = _bidir_model(2, 1, 2, 3, merge=False, merge_value=True)
    assert "merge_outputs" in rejected(m)


def test_unidirectional_rejects_bad_activation_and_rank():
    dir_specs, _ = _direction(4, 3)
    base = [tensor(T, [2, 2, 3])] + dir_specs + [tensor(T, [2, 4])] * 2
    tail = [scalar("FLOAT32", 0.0), scalar("FLOAT32", 0.0), scalar("BOOL", True)] + \
        [omitted()] * 4
    outs = [tensor(T, [2, 2, 4])]
    m = one_op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", base + [scalar("INT32", 2)] + tail, outs)
    assert "activation" in rejected(m)
    base[0] = tensor(T, [2, 3])
    m = one_op_model("UNIDIRECTIONAL_SEQUENCE_LSTM", base + [scalar("INT32", 4)] + tail, outs)
    assert "rank" in rejected(m)
