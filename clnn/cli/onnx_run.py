"""ONNX models in the commands: importing a model file (which importer it needs:
clnn/importing/formats.py), ``--shape``, and onnxruntime as the peer of ``clnn run --compare
onnxruntime`` and ``clnn bench models --onnx``.
"""

from __future__ import annotations

import os
import time

import numpy as np

from clnn.bench import timing
from clnn.importing.formats import ONNX_EXTRA, is_onnx, load_onnx

ORT_THREADS = 2
ORT_EXTRA = "pip install 'clnn[bench]'"


def parse_shapes(specs) -> dict[str, tuple[int, ...]] | None:
    """``--shape NAME=1,3,224,224`` (repeatable) -> {NAME: (1, 3, 224, 224)}; None when none."""
    from clnn.cli.errors import UsageError

    shapes = {}
    for spec in specs or ():
        name, sep, dims = spec.partition("=")
        try:
            shape = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
        except ValueError:
            shape = None
        if not sep or not name or shape is None or any(d < 1 for d in shape):
            raise UsageError(f"--shape {spec!r}: expected NAME=D1,D2,... with positive "
                             "integer dimensions")
        if name in shapes:
            raise UsageError(f"--shape {spec!r}: input {name!r} is given twice")
        shapes[name] = shape
    return shapes or None


def import_model(path: str, shapes=None):
    """The ImportedModel of a .tflite or .onnx file, every failure a CliError naming the file
    (``shapes``: ONNX input dimensions fixed at load, ``--shape``)."""
    from clnn.cli.errors import CliError, UsageError, describe, import_tflite, one_line

    if not is_onnx(path):
        if shapes:
            raise UsageError("--shape fixes dimensions of ONNX inputs; a TFLite model has its "
                             "own shapes")
        return import_tflite(path)
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory, not an .onnx file")
    try:
        return load_onnx(path, shapes)
    except RuntimeError as e:
        if "onnx package" in str(e):
            raise CliError(str(e)) from None
        raise CliError(f"cannot import {path}: {one_line(e)}") from e
    except Exception as e:  # noqa: BLE001 - the importer's errors name the node at fault
        module = type(e).__module__ or ""
        what = str(e) if module.startswith(("clnn.onnx", "onnx", "google.protobuf")) \
            else describe(e)[0]
        raise CliError(f"cannot import {path}: {one_line(what)}") from e


class OrtRunner:
    """onnxruntime (CPUExecutionProvider) on the same model: the peer of an ONNX model as
    ai-edge-litert is of a TFLite one. ``run(imported, inputs) -> (outputs, seconds)``."""

    name = "onnxruntime"

    def __init__(self, model, threads: int = ORT_THREADS):
        try:
            import onnxruntime as ort
        except ImportError as e:
            raise RuntimeError(f"--compare onnxruntime needs onnxruntime ({ORT_EXTRA})") from e
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # warnings about unused initializers are noise here
        source = model if isinstance(model, (bytes, bytearray)) else os.fspath(model)
        self.threads = threads
        self.session = ort.InferenceSession(source, sess_options=options,
                                            providers=["CPUExecutionProvider"])
        self._inputs = {i.name: i for i in self.session.get_inputs()}

    def run(self, imported, inputs) -> tuple[list[np.ndarray], float]:
        feed = {}
        for io, x in zip(imported.inputs, inputs):
            if io.name not in self._inputs:
                raise RuntimeError(f"onnxruntime's model has no input named {io.name!r}")
            feed[io.name] = np.asarray(x, _ort_dtype(self._inputs[io.name].type, x))
        names = [io.name for io in imported.outputs]
        t0 = time.perf_counter()
        outs = self.session.run(names, feed)
        return outs, time.perf_counter() - t0

    def latency(self, imported, inputs, iterations: int):
        outs, s = timing.time_callable(lambda: self.run(imported, inputs)[0], iterations,
                                       warmup=0)
        return outs, [t * 1e-3 for t in s["times_ms"]]


_ORT_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16,
              "tensor(double)": np.float64, "tensor(int64)": np.int64,
              "tensor(int32)": np.int32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
              "tensor(bool)": np.bool_}


def _ort_dtype(ort_type: str, x) -> np.dtype:
    # the importer narrows int64 inputs to int32 (NNAPI has no int64): onnxruntime wants them
    # in the file's type
    return np.dtype(_ORT_TYPES.get(ort_type, np.asarray(x).dtype))


def check_peer(kind: str, path: str) -> None:
    """A RuntimeError when the runtime ``--compare`` names (``litert``, ``onnxruntime``) does
    not run the model file's kind."""
    onnx_model = is_onnx(path)
    if kind == "onnxruntime" and not onnx_model:
        raise RuntimeError("onnxruntime runs ONNX models; compare a .tflite model with litert")
    if kind == "litert" and onnx_model:
        raise RuntimeError("litert runs TFLite models; compare an .onnx model with onnxruntime")


def onnxruntime_values(imported, model, inputs) -> dict:
    """Every ONNX value the importer mapped to an operand (``imported.tensor_operands``: value
    name -> operand), as that operand's value, from one onnxruntime run of ``model`` (a path
    or bytes) with each of those values made a graph output: the peer side of
    ``clnn run MODEL.onnx --compare onnxruntime --per-op``."""
    try:
        import onnx
    except ImportError as e:
        raise RuntimeError(f"--per-op on an ONNX model needs the onnx package ({ONNX_EXTRA})") \
            from e
    proto = onnx.load_from_string(bytes(model)) if isinstance(model, (bytes, bytearray)) \
        else onnx.load(os.fspath(model))
    g = proto.graph
    known = {o.name for o in g.output} | {i.name for i in g.input} | \
        {t.name for t in g.initializer}
    produced = {name for node in g.node for name in node.output}
    extra = [n for n in imported.tensor_operands if n in produced and n not in known]
    # an output needs only its name and element type; onnxruntime infers the rest. The types
    # come from shape inference (float where it says nothing: the importer's float values)
    try:
        inferred = onnx.shape_inference.infer_shapes(proto).graph.value_info
        types = {v.name: v.type.tensor_type.elem_type for v in inferred}
    except Exception:  # noqa: BLE001 - inference is only a hint here
        types = {}
    for name in extra:
        g.output.append(onnx.helper.make_tensor_value_info(
            name, types.get(name) or onnx.TensorProto.FLOAT, None))
    runner = OrtRunner(proto.SerializeToString())
    names = [o.name for o in g.output]
    feed = {}
    for io, x in zip(imported.inputs, inputs):
        feed[io.name] = np.asarray(x, _ort_dtype(runner._inputs[io.name].type, x))
    values = dict(zip(names, runner.session.run(names, feed)))
    return {imported.tensor_operands[n]: np.asarray(v) for n, v in values.items()
            if n in imported.tensor_operands}
