"""clnn.load and its Model: run (by position and name), input errors, metadata, profile,
compare, the compilation cache, hal Model and bytes input, and the README's Python blocks run
as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import clnn
from hal.builder import ModelBuilder
from tests.kits.devices import open_or_skip

FACE = "face_detection_short_range.tflite"
README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture(scope="module")
def face_path():
    from clnn.models.mediapipe import FetchError, model_path

    try:
        return model_path(FACE)
    except (FetchError, OSError) as e:
        pytest.skip(f"{FACE} cannot be fetched: {e}")


@pytest.fixture(scope="module")
def opencl():
    return open_or_skip("opencl", profiling=True)


@pytest.fixture(scope="module")
def face(face_path, opencl, tmp_path_factory):
    return clnn.load(face_path, device=opencl, cache=tmp_path_factory.mktemp("compilation"))


def _image(seed=0):
    return np.random.default_rng(seed).random((1, 128, 128, 3), dtype=np.float32)


def _small_model():
    """y = relu(x + x) on a [2, 3] float tensor."""
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [2, 3])
    s = b.op("ADD", [x, x, b.int32(0)], b.tensor("TENSOR_FLOAT32", [2, 3]))
    b.op("RELU", [s], b.output("TENSOR_FLOAT32", [2, 3]))
    return b.finish()


def test_import_clnn_imports_neither_pyopencl_nor_tflite():
    code = ("import sys, clnn; clnn.load; clnn.Model; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyopencl', 'tflite') "
            "or m.startswith('clnn.tflite')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
    assert {"load", "Model", "TensorSpec"} <= set(clnn.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        clnn.nothing  # noqa: B018


def test_inputs_and_outputs_metadata(face, face_path):
    import clnn.tflite

    imported = clnn.tflite.load(face_path)
    assert [(t.name, t.shape, t.dtype) for t in face.inputs] == \
        [(t.name, tuple(t.shape), np.dtype(t.dtype)) for t in imported.inputs]
    assert [t.name for t in face.outputs] == [t.name for t in imported.outputs]
    assert face.inputs[0].shape == (1, 128, 128, 3)
    assert face.inputs[0].dtype == np.float32


def test_run_by_position_list_and_name(face):
    image = _image()
    outs = face.run(image)
    assert [o.shape for o in outs] == [t.shape for t in face.outputs]
    assert [o.dtype for o in outs] == [t.dtype for t in face.outputs]
    by_name = face.run({face.inputs[0].name: image})
    as_list = face.run([image])
    for a, b, c in zip(outs, by_name, as_list):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    other = face.run(_image(1))  # the outputs follow the input
    assert any(not np.array_equal(a, b) for a, b in zip(outs, other))


@pytest.mark.parametrize("bad, message", [
    (lambda x: [x, x], r"the model takes 1 input\(s\) \('input'\), got 2"),
    (lambda x: x[:, :64], r"input 'input' has shape \[1, 64, 128, 3\]; the model expects "
                          r"\[1, 128, 128, 3\]"),
    (lambda x: {"image": x}, r"no input named 'image'; the inputs are 'input'"),
    (lambda x: {}, r"input 'input' is missing"),
    (lambda x: "pixels", r"input 'input' is <U6; the model expects float32"),
    (lambda x: x.astype(np.complex64), r"input 'input' is complex64; the model expects "
                                       r"float32"),
])
def test_wrong_inputs_raise_one_clear_error(face, bad, message):
    with pytest.raises(ValueError, match=message) as e:
        face.run(bad(_image()))
    assert "\n" not in str(e.value)


def test_profile_rows_name_the_models_operations(face):
    rows = face.profile(_image(), iterations=2)
    ops = face.hal_model.main.operations
    timed = [r for r in rows if r["operation"] is not None]
    assert timed
    for r in timed:
        assert r["type"] == ops[r["operation"]].type.name
        assert r["ms"] >= 0 and r["kernels"]
    assert sum(r["ms"] for r in timed) > 0
    assert {r["type"] for r in timed if r["ms"] > 0} >= {"CONV_2D"}


def test_profile_needs_opencl(face_path):
    model = clnn.load(face_path, device="reference", cache=False)
    with pytest.raises(RuntimeError, match="not an OpenCL device"):
        model.profile()


@pytest.mark.parametrize("reference", ["reference", "litert"])
def test_compare_within_tolerance(face, reference):
    if reference == "litert":
        pytest.importorskip("ai_edge_litert")
    rows = face.compare(reference)
    assert [r["name"] for r in rows] == [t.name for t in face.outputs]
    for r in rows:
        assert r["within_tolerance"], r
        assert 0 <= r["max_abs_err"] < 1e-3
    rows_given = face.compare(reference, inputs=_image(3))
    assert all(r["within_tolerance"] for r in rows_given)


def test_compare_rejects_an_unknown_reference(face):
    with pytest.raises(ValueError, match="unknown reference 'numpy'"):
        face.compare("numpy")


def test_compare_per_op_on_the_real_model(face):
    """per_op=True: the divergence report of clnn.suites.divergence, every operation of the
    model in order, none out of tolerance, against the reference and against litert."""
    image = _image()
    n = len(face.hal_model.main.operations)
    for reference in ("reference", "litert"):
        report = face.compare(reference, inputs=image, per_op=True)
        assert report["reference"] == reference
        assert [r["index"] for r in report["rows"]] == list(range(n))
        assert report["first_divergent"] is None, report["rows"][:3]


def test_compare_per_op_needs_a_tflite_model(opencl):
    from hal.builder import ModelBuilder

    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", (1, 4))
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", (1, 4)))
    m = clnn.load(b.finish(), device=opencl, cache=False)
    with pytest.raises(ValueError, match="per_op needs a .tflite model"):
        m.compare(per_op=True)


def test_second_load_prepares_from_the_cache(face_path, opencl, tmp_path):
    first = clnn.load(face_path, device=opencl, cache=tmp_path)
    assert not first.from_cache
    files = sorted(tmp_path.iterdir())
    assert len(files) == sum(opencl.get_number_of_cache_files_needed())
    second = clnn.load(face_path, device=opencl, cache=tmp_path)
    assert second.from_cache
    image = _image()
    for a, b in zip(first.run(image), second.run(image)):
        np.testing.assert_array_equal(a, b)
    # another device: another key, so its own files
    on_reference = clnn.load(face_path, device="reference", cache=tmp_path)
    assert not on_reference.from_cache and len(list(tmp_path.iterdir())) > len(files)


def test_a_cache_failing_its_checks_is_prepared_again(face_path, opencl, tmp_path):
    clnn.load(face_path, device=opencl, cache=tmp_path)
    for f in tmp_path.iterdir():  # flip the last byte of every file
        data = bytearray(f.read_bytes())
        data[-1] ^= 0xFF
        f.write_bytes(bytes(data))
    again = clnn.load(face_path, device=opencl, cache=tmp_path)
    assert not again.from_cache
    assert all(r["within_tolerance"] for r in again.compare("reference"))
    assert clnn.load(face_path, device=opencl, cache=tmp_path).from_cache  # saved anew


def test_cache_false_writes_nothing(face_path, tmp_path, monkeypatch):
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path))
    model = clnn.load(face_path, device="reference", cache=False)
    assert not model.from_cache and not (tmp_path / "compilation").exists()


@pytest.mark.parametrize("device", ["reference", "opencl"])
def test_hal_model_input(device, tmp_path):
    if device == "opencl":
        open_or_skip("opencl")
    model = clnn.load(_small_model(), device=device, cache=tmp_path)
    assert [(t.name, t.shape, t.dtype) for t in model.inputs] == [("input0", (2, 3),
                                                                   np.float32)]
    assert [t.name for t in model.outputs] == ["output0"]
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    (y,) = model.run(x)
    np.testing.assert_array_equal(y, np.maximum(x + x, 0))
    (y,) = model.run({"input0": x.astype(np.float64)})  # float64 -> float32: same kind
    np.testing.assert_array_equal(y, np.maximum(x + x, 0))
    (y,) = model.run([x.astype(np.int32)])  # integers are read as floats
    np.testing.assert_array_equal(y, np.maximum(x + x, 0))
    assert clnn.load(_small_model(), device=device, cache=tmp_path).from_cache
    with pytest.raises(ValueError, match="litert needs a .tflite model"):
        model.compare("litert")


def test_bytes_input_and_litert_from_bytes(face_path):
    pytest.importorskip("ai_edge_litert")
    model = clnn.load(Path(face_path).read_bytes(), device="reference", cache=False)
    assert model.inputs[0].name == "input"
    assert all(r["within_tolerance"] for r in model.compare("litert"))


@pytest.mark.parametrize("args, error, message", [
    ((42,), TypeError, "model must be a .tflite / .onnx path, its bytes or a hal Model, got a "
     "int"),
    (("/nonexistent/model.tflite",), FileNotFoundError, "no model file"),
    ((b"not a flatbuffer",), ValueError, "not a TFLite flatbuffer"),  # TfliteImportError
])
def test_bad_models(args, error, message):
    with pytest.raises(error, match=message) as e:
        clnn.load(*args, device="reference", cache=False)
    assert "\n" not in str(e.value)


def test_bad_device():
    from hal.errors import HalError

    # a name that is neither "reference" nor an OpenCL device found: DEVICE_UNAVAILABLE
    with pytest.raises(HalError, match="no OpenCL device matches 'tpu'"):
        clnn.load(_small_model(), device="tpu", cache=False)
    with pytest.raises(TypeError, match="device must be a device name or a HAL Device"):
        clnn.load(_small_model(), device=3, cache=False)


def _python_block(section: str) -> str:
    text = README.read_text()
    start = text.index(f"\n## {section}\n")
    m = re.compile(r"```python\n(.*?)```", re.S).search(text, start)
    assert m and m.start() < text.find("\n## ", start + 1)
    return m.group(1)


def test_readme_api_block_runs_as_written(face_path, opencl):
    scope = {}
    exec(compile(_python_block("Python API"), "README: Python API", "exec"), scope)
    model, outputs = scope["model"], scope["outputs"]
    assert isinstance(model, clnn.Model) and len(outputs) == len(model.outputs)
    assert scope["rows"] and all(r["within_tolerance"] for r in scope["errors"])


def test_readme_hal_block_runs_as_written():
    scope = {}
    exec(compile(_python_block("Using the HAL from Python"), "README: HAL", "exec"), scope)
    np.testing.assert_array_equal(scope["y"], [[0, 0, 0], [0, 2, 4]])
    assert scope["status"] == 0
    assert scope["callback"].wait().status == 0
    assert scope["launch"].sync_fence.wait(30)
    assert scope["prepared"] is not None
