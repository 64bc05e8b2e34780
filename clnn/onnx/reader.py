"""Reading an ONNX model with the ``onnx`` package: the file, its opset, and each node as the
converters see it."""

from __future__ import annotations

from dataclasses import dataclass

from clnn.onnx.errors import OnnxImportError

MIN_OPSET = 7


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


def node_attrs(proto) -> dict:
    """A node's attributes by name, strings decoded."""
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
