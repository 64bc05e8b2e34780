"""The org.clnn.onnx driver extension: operations an ONNX runtime's arithmetic needs that NNAPI
has no operation for (clnn.onnx.load(..., quantized="onnxruntime"); docs/extensions.md).

| type id | operation | what |
|---|---|---|
| 0 | ``FMA`` | x * y + z of float32 tensors, one rounding (hal/operations/onnx_fma.py) |
| 1 | ``CONV_CHUNKED`` | NCHW float32 convolution, fma sums in a set order (onnx_conv_chunked.py) |

No operand types of its own: the operations take standard TENSOR_FLOAT32 (and INT32) operands."""

from __future__ import annotations

from hal.extensions import register_extension, registered_extension
from hal.types import Extension

NAME = "org.clnn.onnx"
OPERATIONS = {0: "FMA", 1: "CONV_CHUNKED"}
OPERATION_IDS = {name: i for i, name in OPERATIONS.items()}

EXTENSION = registered_extension(NAME) or register_extension(
    Extension(NAME, []), operations=OPERATIONS)


def op(name: str):
    """The (unbound) extension operation type ``name``."""
    return EXTENSION.operation(name)
