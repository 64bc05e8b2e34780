"""ONNX element types and their NNAPI operand types."""

from hal.types import OperandType

OT = OperandType

#: ONNX TensorProto element types -> NNAPI operand types (int64 narrowed to int32, as
#: onnxruntime's NNAPI execution provider does); 8-bit types are quantized types whose
#: scale and zero point come from the QuantizeLinear / DequantizeLinear around them
ELEM_TYPES = {1: OT.TENSOR_FLOAT32, 10: OT.TENSOR_FLOAT16, 6: OT.TENSOR_INT32,
              7: OT.TENSOR_INT32, 9: OT.TENSOR_BOOL8, 11: OT.TENSOR_FLOAT32,
              2: OT.TENSOR_QUANT8_ASYMM, 3: OT.TENSOR_QUANT8_ASYMM_SIGNED}
