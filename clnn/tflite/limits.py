"""The memory bounds of a .tflite import (clnn.tflite.reader.read_model)."""

#: the most bytes one tensor may claim, and all non-constant tensors together: a corrupted
#: shape must be rejected at import, not allocated when the model runs
MAX_TENSOR_BYTES = 256 << 20
MAX_MODEL_BYTES = 1 << 30
