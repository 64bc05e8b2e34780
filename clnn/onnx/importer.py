"""The ONNX -> NNAPI graph importer: values to operands, nodes through the table in
:mod:`clnn.onnx.ops` (``CONVERTERS``), the result a validated :class:`hal.types.Model`.

Two passes over the (topologically sorted) nodes: the first folds every node whose inputs are
all constants (initializers, Constant, Shape of a tensor whose shape is known, and what follows
from them) with onnx's reference evaluator; the second maps the other nodes. Folding first
means a converter sees every constant the graph can compute, e.g. a BatchNormalization's
statistics when its preceding Conv is mapped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clnn.importing import ImportedModel, IoTensor
from clnn.onnx.dtypes import ELEM_TYPES
from clnn.onnx.errors import OnnxImportError
from hal.builder import ModelBuilder
from hal.errors import BuilderError, HalError
from hal.types import NUMPY_DTYPE, OperandType

OT = OperandType
MIN_OPSET = 7
#: the nodes that fold a shape holding a dynamic dimension (a 0 there, see Importer.symbolic):
#: they move values without computing with them
SYMBOLIC_SAFE = {"Shape", "Slice", "Gather", "Concat", "Unsqueeze", "Squeeze", "Identity",
                 "Cast"}
#: nodes never folded even when their inputs are constant (randomness)
NOT_FOLDED = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
              "Multinomial", "Bernoulli"}


@dataclass
class Node:
    """One ONNX node as the converters see it: attributes decoded, the ones read recorded
    (an attribute no converter read has no mapping)."""

    proto: object
    index: int
    attrs: dict
    read: set

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    @property
    def inputs(self) -> list[str]:
        return list(self.proto.input)

    @property
    def outputs(self) -> list[str]:
        return list(self.proto.output)

    @property
    def label(self) -> str:
        name = self.proto.name or f"#{self.index}"
        return f"node {name} ({self.op_type})"

    def input(self, i: int) -> str:
        """The name of input ``i``; "" when it is omitted."""
        return self.proto.input[i] if i < len(self.proto.input) else ""

    def attr(self, name: str, default=None):
        self.read.add(name)
        return self.attrs.get(name, default)


def _attrs(proto) -> dict:
    from onnx import helper

    out = {}
    for a in proto.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [s.decode("utf-8", "replace") for s in v]
        out[a.name] = v
    return out


def require_onnx():
    """The ``onnx`` module, or an OnnxImportError saying how to install it."""
    try:
        import onnx
    except ImportError:
        raise OnnxImportError("reading ONNX models needs the 'onnx' package (pip install "
                              "'clnn[onnx]')") from None
    return onnx


def read_model(path_or_bytes):
    """The onnx.ModelProto of a path or bytes (external data beside a path is loaded)."""
    onnx = require_onnx()

    try:
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            return onnx.load_model_from_string(bytes(path_or_bytes))
        return onnx.load(str(path_or_bytes))
    except OSError:
        raise
    except Exception as e:
        raise OnnxImportError(f"cannot read the ONNX model: {type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''}") from None


def model_opset(model) -> int:
    """The default-domain opset of the model, checked against what this importer maps."""
    import onnx.defs

    newest = onnx.defs.onnx_opset_version()
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        raise OnnxImportError("the model imports no default-domain (ai.onnx) opset")
    v = int(versions[0])
    if not MIN_OPSET <= v <= newest:
        raise OnnxImportError(f"opset {v} is not supported (the importer maps opsets "
                              f"{MIN_OPSET} to {newest})")
    return v


class Importer:
    """Builds one NNAPI model from an ONNX graph; converters call its helpers."""

    def __init__(self, model, shapes=None):
        from onnx import numpy_helper

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
        self.nodes = [Node(p, k, _attrs(p), set()) for k, p in enumerate(graph.node)]
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

        try:
            inferred = onnx.shape_inference.infer_shapes(self.model, data_prop=True)
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
    def _foldable(self, n: Node) -> bool:
        if n.op_type in NOT_FOLDED or n.proto.domain not in ("", "ai.onnx"):
            return False
        if n.op_type == "Shape":
            return n.input(0) in self.consts or self.shape(n.input(0)) is not None
        if n.op_type == "Size":
            s = self.shape(n.input(0))
            return s is not None and 0 not in s
        if any(name in self.symbolic for name in n.inputs) and n.op_type not in SYMBOLIC_SAFE:
            return False
        return all(not name or name in self.consts for name in n.inputs)

    def _fold(self, n: Node):
        from onnx.reference import ReferenceEvaluator

        if n.op_type in ("Shape", "Size") and n.input(0) not in self.consts:
            shape = np.asarray(self.shape(n.input(0)), np.int64)
            if n.op_type == "Size":
                out = np.asarray(np.prod(shape), np.int64)
            else:
                start, end = n.attr("start", 0), n.attr("end", None)
                out = shape[start:end]
            self.consts[n.outputs[0]] = out
            if 0 in shape:
                self.symbolic.add(n.outputs[0])
            return
        feeds = {name: self.consts[name] for name in n.inputs if name}
        try:
            # a one-node model, so that the evaluator applies the node's own opset version
            results = ReferenceEvaluator(self._one_node_model(n)).run(None, feeds)
        except Exception as e:
            self.fail(f"folding the constant node failed ({type(e).__name__}: "
                      f"{str(e).splitlines()[0] if str(e) else ''})")
        symbolic = any(name in self.symbolic for name in n.inputs)
        for name, r in zip(n.outputs, results):
            if name:
                self.consts[name] = np.asarray(r)
                if symbolic:
                    self.symbolic.add(name)

    def _one_node_model(self, n: Node):
        from onnx import helper

        ins = [helper.make_tensor_value_info(x, 0, None) for x in dict.fromkeys(n.inputs) if x]
        outs = [helper.make_tensor_value_info(y, 0, None) for y in n.outputs if y]
        g = helper.make_graph([n.proto], "fold", ins, outs)
        return helper.make_model(g, opset_imports=list(self.model.opset_import))

    # ------------------------------------------------------------------ the graph
    def build(self) -> ImportedModel:
        from clnn.onnx.ops import CONVERTERS

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
        for n in self.nodes:  # pass 1: constants
            self.node = n
            if self._foldable(n):
                self._fold(n)
                self.skipped.add(n.index)
        for n in self.nodes:  # pass 2: operations
            if n.index in self.skipped:
                continue
            self.node = n
            if n.proto.domain not in ("", "ai.onnx"):
                self.fail(f"domain {n.proto.domain!r} has no NNAPI mapping")
            for k, name in enumerate(n.inputs):
                if name in self.symbolic and not (n.op_type == "Reshape" and k == 1):
                    self.fail(f"input {name!r} depends on a dynamic dimension (through Shape); "
                              "fix the input shapes with shapes= / --shape")
            conv = CONVERTERS.get(n.op_type)
            if conv is None:
                self.fail("the operator has no NNAPI mapping")
            try:
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

        return ImportedModel(model, [io(k, n) for k, n in enumerate(self.input_names)],
                             [io(k, n) for k, n in enumerate(self.outputs)],
                             [n.op_type for n in self.nodes], dict(self.operands))

    def _input_quant(self, name: str) -> tuple[float, int]:
        """(scale, zero point) of an 8-bit input, from the DequantizeLinear reading it."""
        if self.elem(name) not in (2, 3):
            return 0.0, 0
        for r in self.readers.get(name, []):
            if r.op_type == "DequantizeLinear":
                s, z = self.const(r.input(1)), self.const(r.input(2))
                if s is not None and s.size == 1:
                    return float(s.reshape(-1)[0]), int(z.reshape(-1)[0]) if z is not None else 0
        raise OnnxImportError(f"input {name!r} is 8-bit but no DequantizeLinear with a constant "
                              "per-tensor scale reads it")


def load(path_or_bytes, shapes=None) -> ImportedModel:
    """See :func:`clnn.onnx.load`."""
    model = read_model(path_or_bytes)
    importer = Importer(model, shapes)
    try:
        return importer.build()
    except OnnxImportError:
        raise
    except Exception as e:  # last resort: a malformation no check anticipated
        where = importer.node.label if importer.node is not None else "the model"
        raise OnnxImportError(f"{where}: cannot import ({type(e).__name__}: {e})") from e
