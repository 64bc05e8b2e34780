"""The one exception the ONNX importer raises for a model it cannot import."""

from clnn.importing import ModelImportError


class OnnxImportError(ModelImportError):
    """The ONNX model cannot be read or mapped to NNAPI operations; the message is one line
    naming the node, its operator and what is missing (an attribute value, an opset, a
    constant input)."""
