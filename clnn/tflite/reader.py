"""Reading a .tflite flatbuffer through the ``tflite`` schema package into plain objects.

:func:`read_model` returns a :class:`TfModel`: its subgraphs hold :class:`TfTensor` (name,
dtype, shape, constant data, quantization) and :class:`TfOperator` (the builtin operator name
as in ``tflite.BuiltinOperator`` or ``CUSTOM:<code>``, input/output tensor indexes with -1 for
an omitted input, the parsed builtin options object and the raw custom options).

Constant buffers may live inside the flatbuffer or, for models over 2 GB, after it
(``Buffer.offset``/``size``). Sparse constants (TFLite's sparsity parameters, the input of
DENSIFY) are densified here by :func:`densify`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

try:
    import tflite
    from tflite.BuiltinOperator import BuiltinOperator
    from tflite.BuiltinOptions import BuiltinOptions
except ImportError as e:  # pragma: no cover - tflite is a main dependency
    raise ImportError("reading .tflite files needs the 'tflite' package "
                      "(pip install tflite)") from e

from clnn.tflite.errors import TfliteImportError
from clnn.tflite.limits import MAX_MODEL_BYTES, MAX_TENSOR_BYTES
from clnn.tflite.sparse import densify
from clnn.tflite.verify import verify

#: the highest tensor rank accepted (TFLite kernels handle up to 6)
MAX_RANK = 8


def _enum_names(cls) -> dict[int, str]:
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


OPERATOR_NAMES = _enum_names(BuiltinOperator)
OPTION_NAMES = _enum_names(BuiltinOptions)

#: tflite.TensorType -> NumPy dtype
TENSOR_DTYPES = {
    0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 6: np.bool_,
    7: np.int16, 9: np.int8, 10: np.float64, 12: np.uint64, 15: np.uint32, 16: np.uint16,
}
TENSOR_TYPE_NAMES = _enum_names(tflite.TensorType)


@dataclass
class TfTensor:
    index: int
    name: str
    type_code: int
    shape: tuple[int, ...]
    #: shape_signature: -1 where the dimension is dynamic (else equal to shape)
    signature: tuple[int, ...]
    data: np.ndarray | None = None
    scales: np.ndarray | None = None
    zero_points: np.ndarray | None = None
    quantized_dimension: int = 0

    @property
    def dtype(self):
        return TENSOR_DTYPES.get(self.type_code)

    @property
    def type_name(self) -> str:
        return TENSOR_TYPE_NAMES.get(self.type_code, str(self.type_code))

    @property
    def quantized(self) -> bool:
        return self.scales is not None and len(self.scales) > 0


@dataclass
class TfOperator:
    index: int
    name: str
    inputs: list[int]
    outputs: list[int]
    options: object | None = None
    custom_options: bytes = b""


@dataclass
class TfSubgraph:
    name: str
    tensors: list[TfTensor]
    operators: list[TfOperator]
    inputs: list[int]
    outputs: list[int]


@dataclass
class TfModel:
    version: int
    description: str
    subgraphs: list[TfSubgraph] = field(default_factory=list)


def _ints(table, field: str) -> list[int]:
    if not getattr(table, f"{field}Length")():
        return []
    return [int(x) for x in getattr(table, f"{field}AsNumpy")()]


def _buffer_bytes(raw: bytes, model, index: int, what: str) -> bytes | None:
    if index == 0:  # buffer 0 is the empty sentinel: a tensor without constant data
        return None
    if index >= model.BuffersLength():
        raise TfliteImportError(f"{what}: buffer index {index} is out of range (the model has "
                                f"{model.BuffersLength()} buffers)")
    buf = model.Buffers(index)
    offset = buf.Offset() if hasattr(buf, "Offset") else 0
    if offset > 1:  # data after the flatbuffer (models over 2 GB)
        size = buf.Size()
        if offset + size > len(raw):
            raise TfliteImportError(f"{what}: buffer {index} ({size} bytes at byte {offset}) "
                                    f"lies outside the file ({len(raw)} bytes)")
        return raw[offset:offset + size]
    if buf.DataLength() == 0:
        return None
    return buf.DataAsNumpy().tobytes()


def _shape(t, what: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(shape, signature), checked: non-negative dimensions (-1 only in the signature, where
    a dimension is dynamic), a sane rank, signature and shape of one rank."""
    shape = tuple(_ints(t, "Shape"))
    sig = tuple(_ints(t, "ShapeSignature")) if t.ShapeSignatureLength() else shape
    if len(shape) > MAX_RANK:
        raise TfliteImportError(f"{what}: rank {len(shape)} exceeds {MAX_RANK}")
    if any(d < 0 for d in shape):
        raise TfliteImportError(f"{what}: shape {list(shape)} has a negative dimension")
    if len(sig) != len(shape) or any(s < -1 or (s >= 0 and s != d) for s, d in zip(sig, shape)):
        raise TfliteImportError(f"{what}: shape signature {list(sig)} does not match the "
                                f"shape {list(shape)}")
    return shape, sig


def _quantization(t, tensor: TfTensor, what: str):
    q = t.Quantization()
    if q is None or not q.ScaleLength():
        return
    scales = q.ScaleAsNumpy().astype(np.float64)
    zps = (q.ZeroPointAsNumpy().astype(np.int64) if q.ZeroPointLength()
           else np.zeros(len(scales), np.int64))
    dim = int(q.QuantizedDimension())
    if len(zps) not in (1, len(scales)):
        raise TfliteImportError(f"{what}: {len(zps)} zero points for {len(scales)} scales")
    if len(scales) > 1 and not (0 <= dim < len(tensor.shape)
                                and tensor.shape[dim] == len(scales)):
        raise TfliteImportError(f"{what}: {len(scales)} per-channel scales do not match "
                                f"dimension {dim} of shape {list(tensor.shape)}")
    tensor.scales, tensor.zero_points, tensor.quantized_dimension = scales, zps, dim


def _read_tensor(raw: bytes, model, t, index: int, budget: list[int]) -> TfTensor:
    """A tensor; ``budget``: [bytes of non-constant tensors so far, the most one tensor may
    claim, the most all of them may claim]."""
    name = (t.Name() or b"").decode(errors="replace")
    what = f"tensor {index} ({name})"
    shape, sig = _shape(t, what)
    tensor = TfTensor(index, name, t.Type(), shape, sig)
    _quantization(t, tensor, what)
    elements = math.prod(shape)
    itemsize = np.dtype(tensor.dtype).itemsize if tensor.dtype is not None else 1
    if elements * itemsize > budget[1]:
        raise TfliteImportError(f"{what}: shape {list(shape)} needs {elements * itemsize} "
                                f"bytes, over the {budget[1]}-byte limit per tensor")
    data = _buffer_bytes(raw, model, t.Buffer(), what)
    if data is None:
        budget[0] += elements * itemsize
        if budget[0] > budget[2]:
            raise TfliteImportError(f"{what}: the non-constant tensors up to this one need "
                                    f"{budget[0]} bytes, over the {budget[2]}-byte limit")
        return tensor
    dtype = tensor.dtype
    if dtype is None:
        raise TfliteImportError(f"{what}: constant of type {tensor.type_name} is not supported")
    if len(data) % itemsize:
        raise TfliteImportError(f"{what}: buffer of {len(data)} bytes is not a whole number "
                                f"of {tensor.type_name} values")
    flat = np.frombuffer(data, dtype=dtype)
    sparsity = t.Sparsity()
    if sparsity is not None:
        tensor.data = densify(flat, shape, sparsity, what)
    else:
        if flat.size != elements:
            raise TfliteImportError(f"{what}: buffer holds {flat.size} values for shape "
                                    f"{list(shape)}")
        tensor.data = flat.reshape(shape)
    return tensor


def _options(op):
    kind = op.BuiltinOptionsType()
    if kind == 0:
        return None
    name = OPTION_NAMES.get(kind)
    cls = getattr(tflite, name, None) if name else None
    table = op.BuiltinOptions()
    if cls is None or table is None:
        return None
    obj = cls()
    obj.Init(table.Bytes, table.Pos)
    return obj


def operator_name(model, opcode_index: int, what: str) -> str:
    if not 0 <= opcode_index < model.OperatorCodesLength():
        raise TfliteImportError(f"{what}: opcode index {opcode_index} is out of range (the "
                                f"model has {model.OperatorCodesLength()} operator codes)")
    oc = model.OperatorCodes(opcode_index)
    code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
    name = OPERATOR_NAMES.get(code, f"BUILTIN_{code}")
    if name == "CUSTOM":
        name = "CUSTOM:" + (oc.CustomCode() or b"").decode(errors="replace")
    return name


def _indexes(values: list[int], count: int, what: str, optional: bool = False) -> list[int]:
    """Tensor indexes checked against the subgraph's tensor count (-1: an omitted input)."""
    low = -1 if optional else 0
    for v in values:
        if not low <= v < count:
            raise TfliteImportError(f"{what}: tensor index {v} is out of range (the subgraph "
                                    f"has {count} tensors)")
    return values


def _read_operator(model, op, k: int, n_tensors: int) -> TfOperator:
    what = f"operator {k}"
    name = operator_name(model, op.OpcodeIndex(), what)
    what = f"operator {k} ({name})"
    custom = op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() else b""
    return TfOperator(k, name, _indexes(_ints(op, "Inputs"), n_tensors, f"{what} inputs", True),
                      _indexes(_ints(op, "Outputs"), n_tensors, f"{what} outputs"),
                      _options(op), custom)


def read_model(path_or_bytes, max_tensor_bytes: int = MAX_TENSOR_BYTES,
               max_model_bytes: int = MAX_MODEL_BYTES) -> TfModel:
    """Parse a .tflite file (a path, or its bytes); the flatbuffer is checked first
    (:func:`clnn.tflite.verify.verify`), then every index and size read from it. Tensors
    over ``max_tensor_bytes``, or non-constant tensors over ``max_model_bytes`` together, are
    rejected."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        raw = bytes(path_or_bytes)
    else:
        try:
            with open(path_or_bytes, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise TfliteImportError(f"cannot read {path_or_bytes}: {e.strerror}") from None
    verify(raw)
    model = tflite.Model.GetRootAs(raw, 0)
    result = TfModel(int(model.Version()), (model.Description() or b"").decode(errors="replace"))
    budget = [0, max_tensor_bytes, max_model_bytes]
    for s in range(model.SubgraphsLength()):
        g = model.Subgraphs(s)
        n = g.TensorsLength()
        tensors = [_read_tensor(raw, model, g.Tensors(i), i, budget) for i in range(n)]
        ops = [_read_operator(model, g.Operators(k), k, n) for k in range(g.OperatorsLength())]
        result.subgraphs.append(TfSubgraph(
            (g.Name() or b"").decode(errors="replace"), tensors, ops,
            _indexes(_ints(g, "Inputs"), n, f"subgraph {s} inputs"),
            _indexes(_ints(g, "Outputs"), n, f"subgraph {s} outputs")))
    return result
