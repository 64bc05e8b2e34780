"""Streaming models: TFLite resource variables imported as state (clnn/tflite/state.py), kept
between clnn.load runs (clnn/stream.py), compared frame by frame with litert."""

from __future__ import annotations

import numpy as np
import pytest

import clnn
import clnn.tflite
from clnn.tflite import TfliteImportError
from tests.kits.stateful_tflite import BINS, WINDOW, stateful_model
from tests.kits.tflite_writer import Graph, write_model

FRAMES = 12


def _frames(kind: str, n: int = FRAMES, seed: int = 5) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if kind == "int8":
        return [rng.integers(-128, 128, (1, 1, BINS)).astype(np.int8) for _ in range(n)]
    return [rng.standard_normal((1, 1, BINS)).astype(np.float32) for _ in range(n)]


def _litert_stream(raw: bytes, frames, builtin: bool = True):
    """litert's outputs and assigned state tensors (by name) per frame."""
    pytest.importorskip("ai_edge_litert")
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kw = dict(experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
              experimental_preserve_all_tensors=True) if builtin else {}
    it = Interpreter(model_content=raw, **kw)
    it.allocate_tensors()
    names = {d["name"]: d["index"] for d in it.get_tensor_details()}
    ins = it.get_input_details()
    outs = [d["index"] for d in it.get_output_details()]
    results = []
    for x in frames:
        it.set_tensor(ins[0]["index"], x)
        it.invoke()
        state = ({"stream/window": it.get_tensor(names["new_window"])} if builtin else {})
        results.append(([it.get_tensor(o) for o in outs], state))
    return results


def test_import_adds_a_state_input_and_output_per_variable():
    imported = clnn.tflite.load(stateful_model("float32"))
    sg = imported.model.main
    assert [s.name for s in imported.states] == ["stream/window", "stream/sum"]
    assert len(sg.input_indexes) == 1 + 2 and len(sg.output_indexes) == 2 + 2
    assert [io.name for io in imported.inputs] == ["frame"]
    assert imported.states[0].shape == (1, WINDOW, BINS)
    assert np.all(imported.states[1].initial == 0)
    # the state operands: the variables' types and shapes
    window_in = sg.operands[sg.input_indexes[1]]
    assert tuple(window_in.dimensions) == (1, WINDOW, BINS)
    assert window_in.type.name == "TENSOR_FLOAT32"


def test_int8_state_keeps_its_quantization():
    imported = clnn.tflite.load(stateful_model("int8"))
    sg = imported.model.main
    op_in = sg.operands[sg.input_indexes[1]]
    op_out = sg.operands[sg.output_indexes[1]]
    assert op_in.type.name == op_out.type.name == "TENSOR_QUANT8_ASYMM_SIGNED"
    assert (op_in.scale, op_in.zero_point) == (op_out.scale, op_out.zero_point) == (0.5, -10)
    assert imported.states[0].initial.dtype == np.int8


@pytest.mark.parametrize("device", ["reference", "opencl"])
@pytest.mark.parametrize("kind", ["int8", "float32"])
def test_state_carried_across_runs_matches_litert(device, kind, tmp_path):
    raw = stateful_model(kind)
    frames = _frames(kind)
    expected = _litert_stream(raw, frames)
    model = clnn.load(raw, device=device, cache=tmp_path)
    assert [s.name for s in model.states][0] == "stream/window"
    first = []
    for k, (x, (want, want_state)) in enumerate(zip(frames, expected)):
        got = model.run(x)
        first.append(got)
        state = model.state()
        np.testing.assert_array_equal(state["stream/window"], want_state["stream/window"],
                                      err_msg=f"frame {k}: the window state")
        for g, w in zip(got, want):
            if kind == "int8":  # TFLite's bits (its FULLY_CONNECTED requantization)
                np.testing.assert_array_equal(g, w, err_msg=f"frame {k}")
            else:
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"frame {k}")
    # outputs depend on the state: the same frame twice in a row gives different outputs
    a, b = model.run(frames[0])[0], model.run(frames[0])[0]
    assert not np.array_equal(a, b)
    model.reset_state()
    initial = clnn.tflite.load(raw).states[0].initial
    np.testing.assert_array_equal(model.state()["stream/window"], initial)
    for k, (x, want) in enumerate(zip(frames, first)):
        for g, w in zip(model.run(x), want):
            np.testing.assert_array_equal(g, w, err_msg=f"after reset_state, frame {k}")


def test_litert_default_delegates_agree_on_the_float_stream():
    raw = stateful_model("float32")
    frames = _frames("float32")
    model = clnn.load(raw, device="reference", cache=False)
    for k, (x, (want, _)) in enumerate(zip(frames, _litert_stream(raw, frames, builtin=False))):
        for g, w in zip(model.run(x), want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"frame {k}")


def test_opencl_state_stays_in_device_memory(monkeypatch, tmp_path):
    """No state byte travels between host and device during the stream: the state is a
    ClBuffer pair, read and written by the kernels."""
    from clnn.memory import ClBuffer

    raw = stateful_model("int8")
    model = clnn.load(raw, device="opencl", cache=tmp_path)
    assert model._stream.on_device
    assert all(isinstance(b, ClBuffer) for pair in model._stream.buffers for b in pair)
    moves = []
    monkeypatch.setattr(ClBuffer, "download", lambda self, shape: moves.append("down"))
    monkeypatch.setattr(ClBuffer, "_store", lambda self, arr: moves.append("up"))
    for x in _frames("int8", 5):
        model.run(x)
    assert moves == []


def test_stateless_only_calls_refuse_a_streaming_model(tmp_path):
    model = clnn.load(stateful_model("int8"), device="reference", cache=False)
    with pytest.raises(ValueError, match="streaming model"):
        model.compare("reference")
    plain = clnn.load(clnn.tflite.load(stateful_model("int8")).model, device="reference",
                      cache=False)
    with pytest.raises(ValueError, match="no state variables"):
        plain.reset_state()


# ------------------------------------------------------------------------------ errors

def _variable_model(init_const: bool = True, handle_read: bool = True, init: bool = True,
                    handle_options: str = "VarHandleOptions"):
    g = Graph()
    x = g.tensor([1, 2], name="x")
    r = g.tensor([], "resource")
    s = g.tensor([1, 2])
    y = g.tensor([1, 2], name="y")
    if init:
        g.op("CALL_ONCE", [], [], "CallOnceOptions", InitSubgraphIndex=1)
    if handle_options == "VarHandleOptions":
        g.op("VAR_HANDLE", [], [r], handle_options, SharedName="v")
    else:  # a corrupted options type
        g.op("VAR_HANDLE", [], [r], handle_options, InitSubgraphIndex=1)
    g.op("READ_VARIABLE", [r if handle_read else x], [s])
    g.op("ADD", [s, x], [y], "AddOptions")
    g.op("ASSIGN_VARIABLE", [r, y], [])
    ig = Graph()
    ir = ig.tensor([], "resource")
    iv = ig.tensor([1, 2], data=np.ones((1, 2), np.float32) if init_const else None)
    ig.op("VAR_HANDLE", [], [ir], "VarHandleOptions", SharedName="v")
    ig.op("ASSIGN_VARIABLE", [ir, iv], [])
    return write_model([(g, [x], [y]), (ig, [], [])])


def test_an_assigned_model_output_is_also_the_state_output():
    imported = clnn.tflite.load(_variable_model())
    model = clnn.load(_variable_model(), device="reference", cache=False)
    assert len(imported.model.main.output_indexes) == 2
    x = np.array([[1.0, 2.0]], np.float32)
    np.testing.assert_array_equal(model.run(x)[0], [[2.0, 3.0]])
    np.testing.assert_array_equal(model.run(x)[0], [[3.0, 5.0]])


@pytest.mark.parametrize("kwargs, match", [
    (dict(init_const=False), "initial value .* must be a constant"),
    (dict(handle_read=False), "not the output of a VAR_HANDLE"),
    (dict(init=False), "has no initial value"),
    (dict(handle_options="CallOnceOptions"), "VAR_HANDLE.*CallOnceOptions, not "
                                              "VarHandleOptions"),
])
def test_malformed_variables_are_named(kwargs, match):
    with pytest.raises(TfliteImportError, match=match):
        clnn.tflite.load(_variable_model(**kwargs))


# ------------------------------------------------------------------------------ clnn run --stream

def test_cli_stream_compares_every_frame_and_state(tmp_path, capsys):
    from clnn.cli.main import main

    path = tmp_path / "stream.tflite"
    path.write_bytes(stateful_model("float32"))
    status = main(["run", str(path), "--stream", "6", "--compare", "litert-builtin",
                   "--json", "--no-cache"])
    import json

    report = json.loads(capsys.readouterr().out)
    assert status == 0, report
    assert report["frames"] == 6 and len(report["per_frame"]) == 6
    assert [s["name"] for s in report["states"]] == ["stream/window", "stream/sum"]
    assert report["max_output_diff"] <= 1e-5 and report["max_state_diff"] == 0
    # every frame's state compared (the window and the sum)
    assert all(set(r["state_diff"]) == {"stream/window", "stream/sum"}
               for r in report["per_frame"])
    assert report["frames_with_new_outputs"] == 5


def test_cli_stream_text_report_and_refusals(tmp_path, capsys):
    from clnn.cli.main import main

    path = tmp_path / "stream.tflite"
    path.write_bytes(stateful_model("int8"))
    assert main(["run", str(path), "--stream", "3", "--stream-input", "features",
                 "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "3 frames (features inputs" in out and "frame    2" in out
    assert "1 state variables kept in device memory" in out
    # a streaming model without --stream: a sentence, no traceback
    assert main(["run", str(path), "--no-cache"]) != 0
    assert "--stream N" in capsys.readouterr().err


def test_feature_frames_are_seeded_and_span_the_type():
    from clnn.stream import feature_frames

    a = feature_frames((1, 3, 40), np.int8, 50, 21)
    b = feature_frames((1, 3, 40), np.int8, 50, 21)
    assert len(a) == 50 and all(x.shape == (1, 3, 40) and x.dtype == np.int8 for x in a)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    stacked = np.concatenate(a)
    assert stacked.min() >= -128 and stacked.max() > stacked.min() + 50
    f = feature_frames((1, 8), np.float32, 4, 0)
    assert all(0 <= x.min() and x.max() <= 1 for x in f)
