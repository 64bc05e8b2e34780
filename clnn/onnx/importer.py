"""The ONNX -> NNAPI graph importer: values to operands, nodes through the table in
:mod:`clnn.onnx.ops` (``CONVERTERS``), the result a validated :class:`hal.types.Model`.

Two passes over the (topologically sorted) nodes: the first (:mod:`clnn.onnx.shapes`) folds
every node whose inputs are all constants (initializers, Constant, Shape of a tensor whose
shape is known, and what follows from them) with onnx's reference evaluator, and gives the
values onnx's shape inference left without a shape the shapes their operators compute from
what is known, until nothing changes; the second maps the other nodes. Folding first
means a converter sees every constant the graph can compute, e.g. a BatchNormalization's
statistics when its preceding Conv is mapped.
"""

from __future__ import annotations

import numpy as np

from clnn.importing import ImportedModel, IoTensor
from clnn.onnx import views
from clnn.onnx.dtypes import ELEM_TYPES
from clnn.onnx.errors import OnnxImportError
from clnn.onnx.ops_qlinear import MS, MS_OPS
from clnn.onnx.reader import Node, model_opset, node_attrs, read_model
from clnn.onnx.shapes import propagate
from hal.builder import ModelBuilder
from hal.errors import BuilderError, HalError
from hal.types import NUMPY_DTYPE, OperandType

OT = OperandType
#: operators that state the quantization of an input: {input: (scale input, zero point input)}
QUANT_READERS = {"DequantizeLinear": {0: (1, 2)}, "QLinearConv": {0: (1, 2)},
                 "QLinearMatMul": {0: (1, 2), 3: (4, 5)}, "QLinearAveragePool": {0: (1, 2)},
                 "QLinearGlobalAveragePool": {0: (1, 2)}, "QLinearAdd": {0: (1, 2), 3: (4, 5)},
                 "QLinearMul": {0: (1, 2), 3: (4, 5)}}
QUANTIZED_MODES = ("nnapi", "onnxruntime")
#: operators whose converters read rank > 4 views themselves (clnn.onnx.views: the others)
VIEW_NATIVE = {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze"}
class Importer:
    """Builds one NNAPI model from an ONNX graph; converters call its helpers."""

    def __init__(self, model, shapes=None, quantized="nnapi"):
        from onnx import numpy_helper

        if quantized not in QUANTIZED_MODES:
            raise OnnxImportError(f"quantized={quantized!r}: expected one of "
                                  f"{', '.join(QUANTIZED_MODES)}")
        #: "nnapi": quantized operators on NNAPI's quantized operations (TFLite's rounding);
        #: "onnxruntime": computed as onnxruntime does, in float (clnn/onnx/ops_qfloat.py)
        self.quantized = quantized
        self.opset = model_opset(model)
        self.model = model
        graph = model.graph
        self.graph = graph
        self.b = ModelBuilder()
        self.consts: dict[str, np.ndarray] = {}
        for t in graph.initializer:
            self.consts[t.name] = numpy_helper.to_array(t)
        self.input_names = [i.name for i in graph.input if i.name not in self.consts]
        self._fix_input_shapes(shapes or {})
        self.info = self._infer()
        self.operands: dict[str, int] = {}
        #: value name -> (scale, zero point) of a quantized tensor
        self.quant: dict[str, tuple[float, int]] = {}
        self.shape_override: dict[str, tuple] = {}
        self.nodes = [Node(p, k, node_attrs(p), set()) for k, p in enumerate(graph.node)]
        self.readers: dict[str, list[Node]] = {}
        for n in self.nodes:
            for name in n.inputs:
                if name:
                    self.readers.setdefault(name, []).append(n)
        self.outputs = [o.name for o in graph.output]
        self.skipped: set[int] = set()
        #: folded constants computed from a Shape with dynamic dimensions, 0 standing for
        #: each; only a Reshape's shape may read them (0: "copy the input's dimension")
        self.symbolic: set[str] = set()
        #: values of rank > 4 (NNAPI's limit for RESHAPE and TRANSPOSE): (operand holding the
        #: same elements in a lower rank, the ONNX shape); only Reshape and Transpose read them
        self.views: dict[str, tuple[int, tuple]] = {}
        self.node: Node | None = None

    # ------------------------------------------------------------------ shapes
    def _fix_input_shapes(self, shapes: dict):
        by_name = {i.name: i for i in self.graph.input}
        for name, dims in shapes.items():
            if name not in by_name or name in self.consts:
                raise OnnxImportError(f"shapes: the model has no input named {name!r} "
                                      f"(inputs: {', '.join(self.input_names)})")
            tt = by_name[name].type.tensor_type
            if tt.HasField("shape") and len(tt.shape.dim) not in (0, len(dims)):
                raise OnnxImportError(f"shapes: input {name!r} has rank {len(tt.shape.dim)}, "
                                      f"not {len(dims)}")
            tt.shape.Clear()
            for d in dims:
                if int(d) <= 0:
                    raise OnnxImportError(f"shapes: input {name!r} dimension {d} is not "
                                          "positive")
                tt.shape.dim.add().dim_value = int(d)

    def _infer(self) -> dict:
        """value name -> (element type, shape with 0 for unknown dims or None for unknown
        rank), from onnx's shape inference (best effort: a model it rejects keeps the shapes
        the file declares)."""
        import onnx

        model = self.model
        if model.ir_version < 4:  # IR 3 infers only through initializers listed as inputs
            listed = {i.name for i in model.graph.input}
            missing = [t for t in model.graph.initializer if t.name not in listed]
            if missing:
                model = onnx.ModelProto()
                model.CopyFrom(self.model)
                model.graph.input.extend(onnx.helper.make_tensor_value_info(
                    t.name, t.data_type, list(t.dims)) for t in missing)
        try:
            inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
        except Exception:
            inferred = self.model
        info = {}
        g = inferred.graph
        for vi in [*g.input, *g.value_info, *g.output]:
            tt = vi.type.tensor_type
            if not vi.type.HasField("tensor_type"):
                continue
            shape = None
            if tt.HasField("shape"):
                shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 0
                              for d in tt.shape.dim)
            info[vi.name] = (tt.elem_type, shape)
        return info

    def shape(self, name: str):
        """The shape of a value (0 for a dimension known only at execution), None when even
        the rank is unknown."""
        if name in self.consts:
            return tuple(self.consts[name].shape)
        if name in self.views:
            return self.views[name][1]
        if name in self.shape_override:
            return self.shape_override[name]
        if name in self.operands:
            o = self.b._operands[self.operands[name]]
            if o.dimensions:
                return tuple(o.dimensions)
        return self.info.get(name, (0, None))[1]

    def rank(self, name: str) -> int:
        s = self.shape(name)
        if s is None:
            self.fail(f"the rank of {name!r} is unknown (shape inference could not find it)")
        return len(s)

    def static_shape(self, name: str, what: str = "") -> tuple:
        s = self.shape(name)
        if s is None or 0 in s:
            self.fail(f"{what or repr(name)} needs a known shape, has "
                      f"{'an unknown rank' if s is None else list(s)} (fix the input shapes "
                      "with shapes= / --shape)")
        return s

    def elem(self, name: str) -> int:
        if name in self.consts:
            from onnx import helper

            return helper.np_dtype_to_tensor_dtype(self.consts[name].dtype)
        return self.info.get(name, (0, None))[0]

    def is_float(self, name: str) -> bool:
        return self.operand_type(name) in (OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16)

    def operand_type(self, name: str) -> OperandType:
        if name in self.operands:
            return self.b._operands[self.operands[name]].type
        e = self.elem(name)
        if e not in ELEM_TYPES:
            from onnx import helper

            self.fail(f"{name!r} has element type "
                      f"{helper.tensor_dtype_to_string(e) if e else 'unknown'}, which has no "
                      "NNAPI operand type")
        return ELEM_TYPES[e]

    # ------------------------------------------------------------------ values
    def const(self, name: str):
        """The constant value of a value (initializer or folded), else None."""
        return self.consts.get(name) if name else None

    def const_input(self, n: Node, i: int, what: str) -> np.ndarray:
        v = self.const(n.input(i))
        if v is None:
            self.fail(f"{what} (input {i}, {n.input(i) or 'omitted'}) must be a constant")
        return v

    def operand(self, name: str) -> int:
        """The NNAPI operand holding value ``name`` (a constant gets one on first use)."""
        if name in self.operands:
            return self.operands[name]
        if not name:
            self.fail("a required input is omitted")
        if name in self.views:
            self.fail(f"{name!r} has rank {len(self.views[name][1])}; NNAPI operations take "
                      "rank 4 at most (only Reshape and Transpose read it here)")
        v = self.const(name)
        if v is None:
            self.fail(f"input {name!r} is not produced by any node (or its node is not mapped)")
        if name in self.quant:
            scale, zp = self.quant[name]
            ot = OT.TENSOR_QUANT8_ASYMM if v.dtype == np.uint8 else OT.TENSOR_QUANT8_ASYMM_SIGNED
            idx = self.b.constant(v.reshape(v.shape or (1,)), ot, scale, zp)
        else:
            idx = self.tensor_const(v)
        self.operands[name] = idx
        return idx

    def tensor_const(self, v) -> int:
        """A constant operand of an array (float64 -> float32, int64 -> int32; a scalar
        becomes a [1] tensor)."""
        v = np.asarray(v)
        if v.dtype == np.float64:
            v = v.astype(np.float32)
        elif v.dtype.kind in "iu" and v.dtype != np.int32:
            v = v.astype(np.int32)
        if v.ndim == 0:
            v = v.reshape(1)
        return self.b.constant(v)

    def float_like(self, value, like: str) -> int:
        """A float tensor constant in the float type of ``like`` (float16 or float32)."""
        dt = np.float16 if self.operand_type(like) == OT.TENSOR_FLOAT16 else np.float32
        return self.tensor_const(np.asarray(value, dt))

    def scalar_like(self, value, like: str) -> int:
        """A FLOAT16 scalar for float16 operations, else FLOAT32."""
        if self.operand_type(like) == OT.TENSOR_FLOAT16:
            return self.b.scalar(OT.FLOAT16, np.float16(value))
        return self.b.float32(float(value))

    def int32(self, v) -> int:
        return self.b.int32(int(v))

    def bool(self, v) -> int:
        return self.b.bool(bool(v))

    def ints(self, values) -> int:
        """A TENSOR_INT32 constant (a scalar becomes [1]; nested lists keep their shape)."""
        v = np.asarray(values, np.int32)
        return self.b.constant(v.reshape(1) if v.ndim == 0 else v)

    def output(self, name: str, shape=None, type=None, scale=0.0, zp=0, like: str = "") -> int:
        """The operand a node writes for its output ``name``: the shape from shape inference
        unless given, the type of ``like`` (its quantization too) or from the element type."""
        if shape is None:
            shape = self.shape(name)
            if shape is None:
                self.fail(f"the shape of output {name!r} is unknown (shape inference could not "
                          "find it)")
        if len(shape) == 0:  # NNAPI has no rank-0 tensors: a scalar is [1]
            shape = (1,)
        if type is None and like:
            type = self.operand_type(like)
            if like in self.quant and not scale:
                scale, zp = self.quant[like]
        if type is None:
            type = self.operand_type(name)
        if scale:
            self.quant[name] = (scale, zp)
        idx = self.b.tensor(type, tuple(int(d) for d in shape), scale, zp)
        self.operands[name] = idx
        return idx

    def temp(self, like: str, shape) -> int:
        """An intermediate operand with the type and quantization of ``like``."""
        scale, zp = self.quant.get(like, (0.0, 0))
        return self.b.tensor(self.operand_type(like), tuple(int(d) for d in shape), scale, zp)

    def source(self, name: str) -> int:
        """The operand holding the elements of ``name``, a rank > 4 view's included."""
        return self.views[name][0] if name in self.views else self.operand(name)

    def alias(self, out: str, src: str):
        """Output ``out`` is value ``src`` (Identity, Dropout, a folded BatchNormalization)."""
        if src in self.views:
            self.views[out] = self.views[src]
        elif src in self.consts:
            self.consts[out] = self.consts[src]
        else:
            self.operands[out] = self.operand(src)
            if src in self.quant:
                self.quant[out] = self.quant[src]

    def emit(self, nn_type: str, inputs, outputs):
        self.b.add_operation(nn_type, list(inputs), list(outputs))

    def only_reader(self, name: str):
        """The one node reading ``name`` when it has exactly one and is no graph output."""
        r = self.readers.get(name, [])
        if len(r) == 1 and name not in self.outputs:
            return r[0]
        return None

    def fail(self, reason: str):
        n = self.node
        raise OnnxImportError(reason if n is None else f"{n.label}: {reason}")

    # ------------------------------------------------------------------ folding
    # ------------------------------------------------------------------ the graph
    def build(self) -> ImportedModel:
        from clnn.onnx.ops import CONVERTERS
        from clnn.onnx.ops_qfloat import CONVERTERS as QFLOAT

        self.converters = CONVERTERS  # (the quantized converters run float ones through it)
        for name in self.input_names:
            self.node = None
            shape = self.shape(name)
            if shape is None:
                raise OnnxImportError(f"input {name!r} has no shape (give it with shapes=)")
            q = self._input_quant(name)
            try:
                self.operands[name] = self.b.input(self.operand_type(name), shape, *q)
            except (HalError, BuilderError) as e:
                raise OnnxImportError(f"input {name!r}: {e.reason}") from None
            if q[0]:
                self.quant[name] = q
        propagate(self)  # pass 1: constants, and shapes where onnx's inference stopped
        for n in self.nodes:  # pass 2: operations
            if n.index in self.skipped:
                continue
            self.node = n
            if n.proto.domain not in ("", "ai.onnx") and not (
                    n.proto.domain == MS and n.op_type in MS_OPS):
                self.fail(f"domain {n.proto.domain!r} has no NNAPI mapping")
            for k, name in enumerate(n.inputs):
                if name in self.symbolic and not (n.op_type == "Reshape" and k == 1):
                    self.fail(f"input {name!r} depends on a dynamic dimension (through Shape); "
                              "fix the input shapes with shapes= / --shape")
            conv = CONVERTERS.get(n.op_type)
            if self.quantized == "onnxruntime":
                conv = QFLOAT.get(n.op_type, conv)
            if conv is None:
                self.fail("the operator has no NNAPI mapping")
            try:
                if any(x in self.views for x in n.inputs) and n.op_type not in VIEW_NATIVE:
                    views.convert(self, n, conv)  # rank > 4 inputs, on their rank-4 operands
                else:
                    conv(self, n)
            except OnnxImportError:
                raise
            except (HalError, BuilderError) as e:
                self.fail(getattr(e, "reason", str(e)))
            unread = sorted(set(n.attrs) - n.read)
            if unread:
                self.fail(f"attribute {unread[0]!r} has no mapping")
        self.node = None
        for name in self.outputs:
            if name in self.consts:
                raise OnnxImportError(f"output {name!r} is a constant; NNAPI outputs must be "
                                      "computed")
            if name in self.input_names:
                raise OnnxImportError(f"output {name!r} is a model input; NNAPI outputs must be "
                                      "computed")
            self.b.mark_output(self.operand(name))
        try:
            model = self.b.finish()
        except (HalError, BuilderError) as e:
            raise OnnxImportError(f"the imported model is invalid: {e.reason}") from None

        def io(k, name):
            o = model.main.operands[self.operands[name]]
            return IoTensor(name, k, tuple(o.dimensions), NUMPY_DTYPE[o.type])

        # ONNX values only: names with a NUL are the importer's own (a matmul's 2-D form)
        values = {k: v for k, v in self.operands.items() if "\0" not in k}
        return ImportedModel(model, [io(k, n) for k, n in enumerate(self.input_names)],
                             [io(k, n) for k, n in enumerate(self.outputs)],
                             [n.op_type for n in self.nodes], values)

    def _input_quant(self, name: str) -> tuple[float, int]:
        """(scale, zero point) of an 8-bit input, from a node reading it that states them
        (DequantizeLinear, QLinearConv, QLinearMatMul, QLinearAdd, QLinearMul, the pools)."""
        if self.elem(name) not in (2, 3):
            return 0.0, 0
        for r in self.readers.get(name, []):
            for k, (i_scale, i_zp) in QUANT_READERS.get(r.op_type, {}).items():
                if r.input(k) != name:
                    continue
                s, z = self.const(r.input(i_scale)), self.const(r.input(i_zp))
                if s is not None and s.size == 1:
                    return float(s.reshape(-1)[0]), int(z.reshape(-1)[0]) if z is not None else 0
        raise OnnxImportError(f"input {name!r} is 8-bit but no DequantizeLinear / QLinearConv / "
                              "QLinearMatMul / QLinearAdd / QLinearMul / QLinear pool with a "
                              "constant per-tensor scale reads it")


def load(path_or_bytes, shapes=None, quantized="nnapi") -> ImportedModel:
    """See :func:`clnn.onnx.load`."""
    model = read_model(path_or_bytes)
    importer = None
    try:
        if quantized == "onnxruntime":  # QDQ units as onnxruntime fuses them
            from clnn.onnx.qdq import fuse_qdq

            model = fuse_qdq(model)
        with np.errstate(all="ignore"):  # weights with NaN or inf are the model's business
            importer = Importer(model, shapes, quantized)
            return importer.build()
    except OnnxImportError:
        raise
    except Exception as e:  # last resort: a malformation no check anticipated
        node = importer.node if importer is not None else None
        where = node.label if node is not None else "the model"
        raise OnnxImportError(f"{where}: cannot import ({type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''})") from e
