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

from dataclasses import dataclass, field

import numpy as np

try:
    import tflite
    from tflite.BuiltinOperator import BuiltinOperator
    from tflite.BuiltinOptions import BuiltinOptions
except ImportError as e:  # pragma: no cover - tflite is a main dependency
    raise ImportError("reading .tflite files needs the 'tflite' package "
                      "(pip install tflite)") from e


class TfliteImportError(ValueError):
    """The .tflite file cannot be read or mapped to NNAPI operations."""


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


def _buffer_bytes(raw: bytes, model, index: int) -> bytes | None:
    if index <= 0 or index >= model.BuffersLength():
        return None
    buf = model.Buffers(index)
    offset = buf.Offset() if hasattr(buf, "Offset") else 0
    if offset > 1:
        return raw[offset:offset + buf.Size()]
    if buf.DataLength() == 0:
        return None
    return buf.DataAsNumpy().tobytes()


def _read_tensor(raw: bytes, model, t, index: int) -> TfTensor:
    shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
    sig = tuple(int(d) for d in t.ShapeSignatureAsNumpy()) if t.ShapeSignatureLength() else shape
    tensor = TfTensor(index, (t.Name() or b"").decode(errors="replace"), t.Type(), shape, sig)
    q = t.Quantization()
    if q is not None and q.ScaleLength():
        tensor.scales = q.ScaleAsNumpy().astype(np.float64)
        tensor.zero_points = (q.ZeroPointAsNumpy().astype(np.int64) if q.ZeroPointLength()
                              else np.zeros(len(tensor.scales), np.int64))
        tensor.quantized_dimension = int(q.QuantizedDimension())
    data = _buffer_bytes(raw, model, t.Buffer())
    if data is not None:
        dtype = tensor.dtype
        if dtype is None:
            raise TfliteImportError(f"tensor {index} ({tensor.name}): constant of type "
                                    f"{tensor.type_name} is not supported")
        flat = np.frombuffer(data, dtype=dtype)
        sparsity = t.Sparsity()
        if sparsity is not None:
            tensor.data = densify(flat, shape, sparsity)
        else:
            if flat.size != int(np.prod(shape, dtype=np.int64)):
                raise TfliteImportError(f"tensor {index} ({tensor.name}): buffer holds "
                                        f"{flat.size} values for shape {list(shape)}")
            tensor.data = flat.reshape(shape)
    return tensor


def _index_vector(dm, which: str) -> np.ndarray:
    """array_segments / array_indices of a DimensionMetadata (a union of int vectors)."""
    kind = getattr(dm, f"Array{which}Type")()
    table = getattr(dm, f"Array{which}")()
    if kind == 0 or table is None:
        raise TfliteImportError(f"sparse tensor: SPARSE_CSR dimension without array_{which}")
    cls = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}[kind]
    vec = cls()
    vec.Init(table.Bytes, table.Pos)
    return vec.ValuesAsNumpy().astype(np.int64) if vec.ValuesLength() else np.zeros(0, np.int64)


def densify(values: np.ndarray, shape, sparsity) -> np.ndarray:
    """The dense array of a TFLite sparse constant (TACO-style format: dimensions visited in
    ``traversal_order``, each DENSE or SPARSE_CSR, optional block dimensions in
    ``block_map``)."""
    rank = len(shape)
    order = [int(x) for x in sparsity.TraversalOrderAsNumpy()]
    block_map = ([int(x) for x in sparsity.BlockMapAsNumpy()] if sparsity.BlockMapLength()
                 else [])
    dims = [sparsity.DimMetadata(i) for i in range(sparsity.DimMetadataLength())]
    if len(order) != len(dims) or len(order) != rank + len(block_map):
        raise TfliteImportError("sparse tensor: traversal order, dimension metadata and block "
                                "map do not agree")
    # positions: index into the next level's storage; coords: expanded-space coordinates
    positions = np.zeros(1, np.int64)
    coords = np.zeros((1, len(order)), np.int64)
    for level, dm in enumerate(dims):
        if dm.Format() == 0:  # DENSE
            n = int(dm.DenseSize())
            positions = (positions[:, None] * n + np.arange(n)[None, :]).reshape(-1)
            idx = np.tile(np.arange(n), len(coords))
            coords = np.repeat(coords, n, axis=0)
        else:  # SPARSE_CSR
            seg = _index_vector(dm, "Segments")
            ind = _index_vector(dm, "Indices")
            counts = seg[positions + 1] - seg[positions]
            starts = np.repeat(seg[positions], counts)
            within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
            positions = starts + within
            idx = ind[positions]
            coords = np.repeat(coords, counts, axis=0)
        coords[:, order[level]] = idx
    if len(positions) != values.size:
        raise TfliteImportError(f"sparse tensor: {values.size} values for {len(positions)} "
                                "positions")
    dense_coords = coords[:, :rank].copy()
    for j, d in enumerate(block_map):
        block = int(dims[order.index(rank + j)].DenseSize())
        dense_coords[:, d] = dense_coords[:, d] * block + coords[:, rank + j]
    out = np.zeros(shape, values.dtype)
    keep = np.all(dense_coords < np.asarray(shape, np.int64), axis=1)
    out[tuple(dense_coords[keep].T)] = values[positions[keep]]
    return out


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


def operator_name(model, opcode_index: int) -> str:
    oc = model.OperatorCodes(opcode_index)
    code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
    name = OPERATOR_NAMES.get(code, f"BUILTIN_{code}")
    if name == "CUSTOM":
        name = "CUSTOM:" + (oc.CustomCode() or b"").decode(errors="replace")
    return name


def read_model(path_or_bytes) -> TfModel:
    """Parse a .tflite file (a path, or its bytes)."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        raw = bytes(path_or_bytes)
    else:
        with open(path_or_bytes, "rb") as f:
            raw = f.read()
    if len(raw) < 8 or raw[4:8] != b"TFL3":
        raise TfliteImportError("not a TFLite flatbuffer (file identifier 'TFL3' missing)")
    model = tflite.Model.GetRootAs(raw, 0)
    result = TfModel(int(model.Version()), (model.Description() or b"").decode(errors="replace"))
    for s in range(model.SubgraphsLength()):
        g = model.Subgraphs(s)
        tensors = [_read_tensor(raw, model, g.Tensors(i), i) for i in range(g.TensorsLength())]
        ops = []
        for k in range(g.OperatorsLength()):
            op = g.Operators(k)
            custom = op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() else b""
            ops.append(TfOperator(k, operator_name(model, op.OpcodeIndex()),
                                  [int(i) for i in op.InputsAsNumpy()] if op.InputsLength()
                                  else [],
                                  [int(i) for i in op.OutputsAsNumpy()] if op.OutputsLength()
                                  else [],
                                  _options(op), custom))
        result.subgraphs.append(TfSubgraph(
            (g.Name() or b"").decode(errors="replace"), tensors, ops,
            [int(i) for i in g.InputsAsNumpy()] if g.InputsLength() else [],
            [int(i) for i in g.OutputsAsNumpy()] if g.OutputsLength() else []))
    return result
