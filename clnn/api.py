"""The short Python API: ``clnn.load(model, device) -> Model`` with ``run``, ``profile`` and
``compare``.

    import clnn
    model = clnn.load("face_detection_short_range.tflite", device="opencl")
    outputs = model.run(image)                      # a list of arrays, in model.outputs order

A streaming model (TFLite resource variables: clnn/tflite/state.py) keeps its state between
``run`` calls, in device memory (clnn/stream.py); ``model.reset_state()`` restores the
initial values and ``model.state()`` reads the current ones.

``load`` takes a .tflite path, its bytes, or a ``hal.types.Model``, and a device name
(``clnn.devices.open_device``) or a HAL Device. It prepares through the HAL compilation
cache by default: files under ``compilation`` of the device's cache directory (its
``DeviceOptions.cache_dir``; ``$CLNN_CACHE_DIR`` for a device named here) named by a hash of
the model and of the device's identity, whose token is that hash; a cache that fails the HAL's
checks is prepared again (and saved over). Nothing here imports pyopencl or the TFLite reader
before a model needs them, so ``import clnn`` stays light.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from clnn.prepare_cached import cache_key  # noqa: F401
from clnn.prepare_cached import prepare_cached as _prepare
from hal.builder import read_outputs
from hal.errors import ErrorStatus, HalError
from hal.types import NUMPY_DTYPE
from hal.types import Model as HalModel

REFERENCES = ("reference", "litert", "onnxruntime")


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output: its name, shape (0: a dimension known only at run time) and
    NumPy dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


class Model:
    """A model prepared on a device (made by :func:`load`). ``inputs`` / ``outputs``: one
    :class:`TensorSpec` each; ``hal_model``, ``device``, ``prepared``: the HAL objects;
    ``from_cache``: whether the prepare came from the compilation cache; ``states``: a
    streaming model's state variables (a :class:`TensorSpec` each; empty for a stateless
    model), kept between :meth:`run` calls."""

    def __init__(self, hal_model, device, prepared, inputs, outputs, imported=None,
                 tflite=None, from_cache=False, prepare_s=0.0):
        self.hal_model = hal_model
        self.device = device
        self.prepared = prepared
        self.inputs = inputs
        self.outputs = outputs
        self.from_cache = from_cache
        self.prepare_s = prepare_s
        self._imported = imported  # clnn.tflite.ImportedModel (for litert), else None
        self._tflite = tflite  # the .tflite / .onnx path or bytes, else None
        states = imported.states if imported is not None else []
        self.states = [TensorSpec(st.name, st.shape, np.dtype(st.dtype)) for st in states]
        self._stream = None
        if states:
            from clnn.stream import StreamState

            self._stream = StreamState(device, prepared, hal_model, len(inputs), len(outputs),
                                       states)

    def __repr__(self):
        ins = ", ".join(f"{t.name} {list(t.shape)} {t.dtype}" for t in self.inputs)
        return (f"<clnn.Model on {getattr(self.device, 'name', type(self.device).__name__)}: "
                f"{len(self.hal_model.main.operations)} operations; inputs {ins}>")

    def plan(self):
        """Where each operation runs and why (a model loaded with several ``devices``): the
        runtime's :class:`clnn.nnapi.partition.Plan`."""
        plan = getattr(self.prepared, "plan", None)
        if plan is None:
            raise ValueError("this model runs on one device; load it with devices=[...] for "
                             "a placement plan")
        return plan()

    # ------------------------------------------------------------------ inputs
    def _arrays(self, inputs) -> list[np.ndarray]:
        """Inputs in model order, checked: a dict (by name), a list or tuple (one array per
        input), or one array (a model of one input)."""
        names = [t.name for t in self.inputs]
        if isinstance(inputs, dict):
            unknown = [k for k in inputs if k not in names]
            if unknown:
                raise ValueError(f"no input named {unknown[0]!r}; the inputs are "
                                 f"{', '.join(map(repr, names))}")
            missing = [n for n in names if n not in inputs]
            if missing:
                raise ValueError(f"input {missing[0]!r} is missing; the inputs are "
                                 f"{', '.join(map(repr, names))}")
            values = [inputs[n] for n in names]
        elif isinstance(inputs, (list, tuple)):
            values = list(inputs)
        else:
            values = [inputs]
        if len(values) != len(names):
            raise ValueError(f"the model takes {len(names)} input(s) "
                             f"({', '.join(map(repr, names))}), got {len(values)}")
        arrays = []
        for spec, x in zip(self.inputs, values):
            a = np.asarray(x)
            # float64 -> float32 is a convenience; float -> uint8 would truncate silently
            if not np.can_cast(a.dtype, spec.dtype, "same_kind"):
                raise ValueError(f"input {spec.name!r} is {a.dtype}; the model expects "
                                 f"{spec.dtype}")
            a = a.astype(spec.dtype, copy=False)
            known = len(a.shape) == len(spec.shape) and all(
                not d or d == n for d, n in zip(spec.shape, a.shape))
            if not known:
                raise ValueError(f"input {spec.name!r} has shape {list(a.shape)}; the model "
                                 f"expects {list(spec.shape)}")
            arrays.append(a)
        return arrays

    def _inputs_or_random(self, inputs) -> list[np.ndarray]:
        if inputs is None:
            from clnn.cli.run import random_inputs

            return random_inputs(self)
        return self._arrays(inputs)

    # ------------------------------------------------------------------ the API
    def run(self, inputs) -> list[np.ndarray]:
        """One execution: the output arrays, in ``outputs`` order. ``inputs``: one array (a
        model of one input), a list of arrays, or a dict by input name. A streaming model's
        step: it reads the state the last call left and leaves the new one (on the device)."""
        if self._stream is None:
            return _execute(self.prepared, self.hal_model, self._arrays(inputs))
        stream = self._stream
        request = stream.request(self._arrays(inputs))
        result = self.prepared.execute_synchronously(request)
        if result.status != ErrorStatus.NONE:
            raise HalError(f"execution failed: {result.message or result.status.name}",
                           result.status)
        # the state outputs stay in device memories (or, without them, come to the host)
        outputs = read_outputs(self.hal_model, stream.own_outputs(request)
                               if stream.on_device else request, result.output_shapes)
        stream.advance(outputs)
        return outputs[: len(self.outputs)]

    def reset_state(self):
        """A streaming model: every state variable back to its initial value (the model's
        state before its first run)."""
        self._stateful("reset_state")
        self._stream.reset()

    def state(self) -> dict[str, np.ndarray]:
        """A streaming model: the current value of each state variable, by name (a copy on
        the host; the executions keep theirs on the device)."""
        self._stateful("state")
        return self._stream.values()

    def _stateful(self, what: str):
        if self._stream is None:
            raise ValueError(f"{what}: this model has no state variables (a streaming model "
                             "keeps its state in TFLite resource variables)")

    def _stateless(self, what: str):
        if self._stream is not None:
            raise ValueError(f"{what} runs single executions; this streaming model's outputs "
                             "depend on its state: compare frame by frame with clnn run "
                             "--stream N --compare")

    def profile(self, inputs=None, iterations: int = 1) -> list[dict]:
        """Per operation (as ``clnn run --profile``): ``operation`` (index), ``type``,
        ``kernels``, ``ms`` (kernel time per run: from OpenCL profiling events, or, for the
        launches of a chain the executions already run, from the chain's cycle counters:
        ``chained``) and ``share``, heaviest first. ``inputs``: as :meth:`run`, or seeded
        random ones."""
        from clnn.cli.run import profile_prepared

        self._stateless("profile")
        if iterations < 1:
            raise ValueError(f"iterations {iterations}: at least one run is needed")
        queue = getattr(self.device, "queue", None)
        if not hasattr(self.prepared, "run") or queue is None:
            raise RuntimeError(f"profile reads OpenCL profiling events; "
                               f"{getattr(self.device, 'name', self.device)} is not an "
                               "OpenCL device")
        import pyopencl as cl

        if not queue.properties & cl.command_queue_properties.PROFILING_ENABLE:
            raise RuntimeError("profile needs a device opened with profiling=True "
                               "(clnn.load opens one so when given a device name)")
        return profile_prepared(self.prepared, self.hal_model,
                                self._inputs_or_random(inputs), iterations)

    def compare(self, reference: str = "reference", inputs=None,
                per_op: bool = False) -> list[dict]:
        """Per output: ``name``, ``max_abs_err``, ``max_rel_err`` (over max |expected|) and
        ``within_tolerance`` against ``reference`` ("reference": the NumPy reference device;
        "litert": ai-edge-litert on the same .tflite; "onnxruntime": onnxruntime on the same
        .onnx). ``per_op``: per-operation divergence from
        ``clnn.suites.divergence.per_op_report`` instead."""
        from clnn.cli.run import compare

        self._stateless("compare")
        if reference not in REFERENCES:
            raise ValueError(f"unknown reference {reference!r}; choose one of "
                             f"{', '.join(REFERENCES)}")
        arrays = self._inputs_or_random(inputs)
        if per_op:
            from clnn.suites.divergence import per_op_report

            return self._per_op(per_op_report, reference, arrays)
        outputs = self.run(arrays)
        expected = self._expected(reference, arrays)
        return [{"name": spec.name, **row}
                for spec, row in zip(self.outputs, compare(outputs, expected))]

    def _per_op(self, per_op_report, reference: str, arrays) -> dict:
        """The divergence report reads the imported model (TFLite tensor per operand) and, for
        litert, the .tflite file."""
        if self._imported is None:
            raise ValueError("per_op needs a .tflite model (its tensors are what is compared); "
                             "this one was given as a hal Model")
        target = SimpleNamespace(imported=self._imported, device=self.device, path=None)
        from clnn.importing.formats import is_onnx

        if reference != "reference" and is_onnx(self._tflite) != (reference == "onnxruntime"):
            raise ValueError("compare an ONNX model with onnxruntime and a TFLite model with "
                             "litert")
        if isinstance(self._tflite, (str, os.PathLike)):
            target.path = str(self._tflite)
            return per_op_report(target, reference, arrays)
        with tempfile.TemporaryDirectory(prefix="clnn-per-op-") as tmp:
            suffix = ".onnx" if is_onnx(self._tflite) else ".tflite"
            target.path = os.path.join(tmp, "model" + suffix)
            Path(target.path).write_bytes(bytes(self._tflite))
            return per_op_report(target, reference, arrays)

    def _expected(self, reference: str, arrays) -> list[np.ndarray]:
        if reference == "reference":
            from hal.reference import ReferenceDevice

            prepared = ReferenceDevice().prepare_model(self.hal_model)
            return _execute(prepared, self.hal_model, arrays)
        if self._imported is None:
            kind = ".onnx" if reference == "onnxruntime" else ".tflite"
            raise ValueError(f"compare with {reference} needs a {kind} model; this one was "
                             "given as a hal Model")
        from clnn.cli.onnx_run import OrtRunner
        from clnn.cli.run import litert_expected  # a quantized model: litert's builtin kernels
        from clnn.importing.formats import is_onnx

        if is_onnx(self._tflite) != (reference == "onnxruntime"):
            raise ValueError("compare an ONNX model with onnxruntime and a TFLite model with "
                             "litert")
        if reference == "onnxruntime":
            return OrtRunner(self._tflite).run(self._imported, arrays)[0]

        if isinstance(self._tflite, (str, os.PathLike)):
            return litert_expected(str(self._tflite), self._imported, arrays)
        with tempfile.TemporaryDirectory(prefix="clnn-litert-") as tmp:
            path = os.path.join(tmp, "model.tflite")  # the runner reads a file
            Path(path).write_bytes(bytes(self._tflite))
            return litert_expected(path, self._imported, arrays)


def _execute(prepared, hal_model, arrays) -> list[np.ndarray]:
    from hal.builder import make_request

    request = make_request(hal_model, arrays)
    result = prepared.execute_synchronously(request)
    if result.status != ErrorStatus.NONE:
        raise HalError(f"execution failed: {result.message or result.status.name}",
                       result.status)
    return read_outputs(hal_model, request, result.output_shapes)


def _specs_of(hal_model) -> tuple[list[TensorSpec], list[TensorSpec]]:
    sg = hal_model.main

    def spec(kind, k, i):
        op = sg.operands[i]
        return TensorSpec(f"{kind}{k}", tuple(op.dimensions), NUMPY_DTYPE[op.type])

    return ([spec("input", k, i) for k, i in enumerate(sg.input_indexes)],
            [spec("output", k, i) for k, i in enumerate(sg.output_indexes)])


def _open(device):
    if isinstance(device, str):
        from clnn.devices import open_device

        # profiling events cost little and let Model.profile work on the same device
        return open_device(device, profiling=True)
    if not callable(getattr(device, "prepare_model", None)):
        raise TypeError(f"device must be a device name or a HAL Device, got a "
                        f"{type(device).__name__}")
    return device


def open_device_for_runtime(device):
    """A device of ``load(devices=...)``: an nnapi Device as it is, else as :func:`_open`."""
    from clnn.nnapi import Device

    return device if isinstance(device, Device) else _open(device)


def load(model, device="opencl", cache=True, shapes=None, devices=None) -> Model:
    """Prepare ``model`` (a .tflite or .onnx path, its bytes, or a ``hal.types.Model``) on
    ``device`` ("reference", "opencl", a name ``clnn.devices.open_device`` knows, or a
    HAL Device). ``cache``: True (the compilation cache under clnn's cache directory), a
    directory to keep it in instead, or False (always prepare afresh). ``shapes``: for an
    ONNX model, input dimensions fixed at load (``{"x": (1, 3, 224, 224)}``). ``devices``:
    several devices (names, HAL devices or ``clnn.nnapi`` Devices): the model is compiled by
    the NNAPI runtime over them, each operation placed by the devices' capabilities
    (``model.plan()`` says where); ``device`` and ``cache`` are then not used."""
    imported = tflite = None
    if isinstance(model, HalModel):
        from hal import compilation_cache

        hal_model = model
        model_bytes = b"hal\0" + compilation_cache.dumps(model)
        inputs, outputs = _specs_of(model)
    elif isinstance(model, (str, os.PathLike, bytes, bytearray, memoryview)):
        import clnn.tflite

        if isinstance(model, (str, os.PathLike)):
            if not os.path.isfile(model):
                raise FileNotFoundError(f"no model file {os.fspath(model)!r}")
            model_bytes = Path(model).read_bytes()
        else:
            model_bytes = bytes(model)
        from clnn.importing.formats import is_onnx, load_onnx

        onnx_model = is_onnx(model if isinstance(model, (str, os.PathLike)) else model_bytes)
        if onnx_model:  # the file (or bytes) tells which importer: clnn/importing/formats.py
            imported = load_onnx(model_bytes, shapes)
        else:
            if shapes:
                raise ValueError("shapes fixes dimensions of ONNX inputs; a TFLite model has "
                                 "its own")
            imported = clnn.tflite.load(model_bytes)
        tflite = model if isinstance(model, (str, os.PathLike)) else model_bytes
        hal_model = imported.model
        inputs = [TensorSpec(t.name, tuple(int(d or 0) for d in t.shape), np.dtype(t.dtype))
                  for t in imported.inputs]
        outputs = [TensorSpec(t.name, tuple(int(d or 0) for d in t.shape), np.dtype(t.dtype))
                   for t in imported.outputs]
        # the shapes fixed at load make another model from the same file
        model_bytes = (b"onnx\0" + repr(sorted((shapes or {}).items())).encode() + b"\0"
                       if onnx_model else b"tflite\0") + model_bytes
    else:
        raise TypeError(f"model must be a .tflite / .onnx path, its bytes or a hal Model, "
                        f"got a "
                        f"{type(model).__name__}")
    if devices is not None and len(devices) > 1:
        from clnn.nnapi.hal_adapter import RuntimeDevice

        # names are opened together: OpenCL devices of one platform share a context
        dev = RuntimeDevice([d if isinstance(d, str) else open_device_for_runtime(d)
                             for d in devices])
        t0 = time.perf_counter()
        prepared = dev.prepare_model(hal_model)
        return Model(hal_model, dev, prepared, inputs, outputs, imported=imported,
                     tflite=tflite, prepare_s=time.perf_counter() - t0)
    if devices is not None:
        if len(devices) != 1:
            raise ValueError("devices must name at least one device")
        device = devices[0]
    dev = _open(device)
    key = cache_key(model_bytes, dev) if cache else None
    t0 = time.perf_counter()
    directory = None if isinstance(cache, bool) else cache
    if directory is None and cache:  # (a device without options: the environment's root)
        from clnn.devices import compilation_dir

        directory = compilation_dir(dev)
    prepared, from_cache = _prepare(dev, hal_model, key, directory)
    return Model(hal_model, dev, prepared, inputs, outputs, imported=imported, tflite=tflite,
                 from_cache=from_cache, prepare_s=time.perf_counter() - t0)
