"""The microWakeWord streaming models of pymicro-wakeword 2.5.0 (``clnn models fetch --int8``)
over 100 frames against litert's built-in kernels, frame by frame, outputs and state variables;
skipped when the models were not fetched (the self-made streaming model of
test_tflite_state.py always runs)."""

from __future__ import annotations

import numpy as np
import pytest

import clnn
from clnn.cli.stream_run import LiteRtStream
from clnn.models.int8 import present_int8
from clnn.stream import feature_frames

FRAMES = 100
#: a seed of the spectrogram-like frames per model that makes its output move over 100
#: frames (seeded random features leave every output at 0)
SEEDS = {"alexa": 21, "hey_jarvis": 21, "hey_mycroft": 21, "okay_nabu": 79}


def _path(name: str) -> str:
    path = present_int8(name)
    if path is None:
        pytest.skip(f"{name}.tflite not fetched (clnn models fetch --int8)")
    return path


def _stream(model, frames):
    outs, states = [], []
    for x in frames:
        outs.append(model.run(x)[0])
        states.append(model.state())
    return outs, states


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_stream_follows_litert(name, tmp_path):
    pytest.importorskip("ai_edge_litert")
    path = _path(name)
    model = clnn.load(path, device="reference", cache=False)
    frames = feature_frames(model.inputs[0].shape, model.inputs[0].dtype, FRAMES, SEEDS[name])
    litert = LiteRtStream(path, builtin=True)
    want = [litert.run(model._imported, [x]) for x in frames]
    got_outs, got_states = _stream(model, frames)
    moving = [int(w[0][0].ravel()[0]) for w in want]
    assert max(moving) > 0 and len(set(moving)) > 2, "the frames leave the output still"
    assert len(got_states[0]) == 6 and all(len(w[1]) == 6 for w in want)
    for k, (out, state, (want_outs, want_state)) in enumerate(zip(got_outs, got_states, want)):
        np.testing.assert_array_equal(out, want_outs[0], err_msg=f"{name}, frame {k}: output")
        for n in state:
            np.testing.assert_array_equal(state[n], want_state[n],
                                          err_msg=f"{name}, frame {k}: state {n}")


def test_opencl_stream_equals_the_reference(tmp_path):
    """The OpenCL device (state in device memory) gives the reference device's bits on every
    frame, outputs and state."""
    path = _path("hey_mycroft")
    ref = clnn.load(path, device="reference", cache=False)
    frames = feature_frames(ref.inputs[0].shape, ref.inputs[0].dtype, FRAMES, 21)
    cl = clnn.load(path, device="opencl", cache=tmp_path)
    assert cl._stream.on_device
    r_outs, r_states = _stream(ref, frames)
    c_outs, c_states = _stream(cl, frames)
    for k in range(FRAMES):
        np.testing.assert_array_equal(c_outs[k], r_outs[k], err_msg=f"frame {k}")
        for n in r_states[k]:
            np.testing.assert_array_equal(c_states[k][n], r_states[k][n],
                                          err_msg=f"frame {k}, state {n}")
    assert len({int(o.ravel()[0]) for o in r_outs}) > 2


def test_frames_in_isolation_give_litert_bits_per_operation():
    """Each frame fed litert's own state (so no difference is carried over): every operation
    whose inputs agree gives litert's bits (the per-channel int8 DEPTHWISE_CONV_2D and
    FULLY_CONNECTED included), so a difference of the stream names its first operation."""
    pytest.importorskip("ai_edge_litert")
    from clnn.tflite import load
    from clnn.tflite.reader import read_model
    from hal.reference.executor import Executor

    path = _path("okay_nabu")  # (SPLIT_V, six states)
    imported = load(path)
    graph = read_model(path).subgraphs[0]
    litert = LiteRtStream(path, builtin=True)
    executor = Executor(imported.model)
    state = [s.initial for s in imported.states]
    checked = set()
    for x in feature_frames((1, 3, 40), np.int8, 30, SEEDS["okay_nabu"]):
        values = executor.run_keeping_all(None, [x] + state)
        litert.run(imported, [x])
        tensor = litert.it.get_tensor
        ops = imported.tensor_operands
        for op in graph.operators:
            if not op.outputs or ops.get(op.outputs[0]) not in values:
                continue
            ins = [i for i in op.inputs if i >= 0 and graph.tensors[i].data is None
                   and ops.get(i) in values]
            if not all(np.array_equal(values[ops[i]].ravel(), tensor(i).ravel()) for i in ins):
                continue
            got, want = values[ops[op.outputs[0]]], tensor(op.outputs[0])
            lsb = int(np.abs(got.astype(int).ravel() - want.astype(int).ravel()).max())
            assert lsb == 0, f"operator {op.index} ({op.name}): {lsb} LSB from litert"
            checked.add(op.name)
        state = [np.array(tensor(s.tensor)) for s in imported.states]
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "SPLIT_V", "STRIDED_SLICE",
            "CONCATENATION", "QUANTIZE"} <= checked
