"""ONNX model import:
``clnn.onnx.load(path_or_bytes, shapes=None, quantized="nnapi") -> ImportedModel``.

The contract:

- ``path_or_bytes``: a .onnx path (external data files beside it are read) or the model's
  bytes. The file is read with the ``onnx`` package; its default-domain opset must be 7 to
  ``onnx.defs.onnx_opset_version()``.
- Returns :class:`clnn.importing.ImportedModel` (the class the TFLite importer returns): a
  validated NNAPI ``hal.types.Model`` with ``inputs`` / ``outputs`` as
  :class:`clnn.importing.IoTensor`, named as the graph's inputs and outputs (initializers
  listed as inputs are constants, not inputs), in the graph's order; ``IoTensor.tensor`` is
  the position in that list. Types: float32 / float16 / bool as such, int64 and int32 as
  TENSOR_INT32 (feed int32), uint8 / int8 as quantized types (the scale and zero point of the
  DequantizeLinear reading the input).
- Tensors stay NCHW: convolutions, pooling, resizes and normalizations use NNAPI's NCHW layout
  flag, so inputs and outputs have the ONNX shapes.
- ``shapes``: ``{input name: dims}`` fixes input dimensions (a ``dim_param`` or a missing
  ``dim_value`` is otherwise an unspecified NNAPI dimension, 0, resolved at execution);
  shapes onnx's inference cannot find are propagated by the importer (clnn.onnx.shapes).
- ``quantized``: how quantized operators (QLinearConv, onnxruntime's QLinear*, ...) are
  computed: ``"nnapi"`` (default) on NNAPI's quantized operations (TFLite's rounding: NNAPI's
  semantics, several LSB from onnxruntime through a deep network), or ``"onnxruntime"`` with
  float operations that give onnxruntime's bits (clnn.onnx.ops_qfloat), QDQ units fused where
  onnxruntime's x86 optimizer fuses them (clnn.onnx.qdq): the mode meant to match onnxruntime.
- Anything that cannot be mapped raises :class:`OnnxImportError` (a
  :class:`clnn.importing.ModelImportError`, as ``TfliteImportError`` is) with a one-line
  message naming the node, its operator and what is missing; an unreadable file or an opset
  outside the range is one too.

Modules: :mod:`clnn.onnx.reader` (the file, its opset, nodes), :mod:`clnn.onnx.folding`
(constant folding), :mod:`clnn.onnx.importer` (values to operands, the graph),
:mod:`clnn.onnx.ops` (the operator table, from ``ops_conv``, ``ops_math``, ``ops_shape``,
``ops_norm``, ``ops_reduce``, ``ops_resize``, ``ops_quant``, ``ops_qlinear``, ``ops_qdynamic``,
``ops_misc``;
``ops_qfloat`` for quantized="onnxruntime"), :mod:`clnn.onnx.shapes` (shape propagation),
:mod:`clnn.onnx.views` (rank > 4 values).
"""

from clnn.importing import ImportedModel, IoTensor, ModelImportError
from clnn.onnx.errors import OnnxImportError
from clnn.onnx.importer import load
from clnn.onnx.reader import MIN_OPSET, read_model

__all__ = ["MIN_OPSET", "ImportedModel", "IoTensor", "ModelImportError", "OnnxImportError",
           "load", "read_model"]
