"""Writing the HAL model of a graph: hal.builder.ModelBuilder plus the ``org.clnn.openvx``
extension's operand and operation types (docs/openvx-extension.md)."""

from __future__ import annotations

import struct

import numpy as np

from clnn.openvx.constants import VX_TYPE_INT8, VX_TYPE_INT16, VX_TYPE_UINT8

EXTENSION = "org.clnn.openvx"
#: the extension's operand type ids of the fixed-point data types
FIXED_POINT_TYPE_IDS = {VX_TYPE_INT8: 0, VX_TYPE_INT16: 1, VX_TYPE_UINT8: 2}
#: the extension's operation type ids
OPERATION_IDS = {"CONVOLUTION": 0, "FULLY_CONNECTED": 1, "POOLING": 2, "SOFTMAX": 3, "LRN": 4,
                 "ACTIVATION": 5, "ROI_POOLING": 6, "DECONVOLUTION": 7}


class Emitter:
    """A ModelBuilder that knows OpenVX tensors: a fixed-point tensor becomes an extension
    operand whose extension parameters are its fixed point position (one signed byte)."""

    def __init__(self):
        from hal.builder import ModelBuilder

        self.b = ModelBuilder()

    def _type(self, t):
        if not t.is_fixed_point:
            return "TENSOR_FLOAT32"
        return self.b.get_extension_operand_type(EXTENSION,
                                                 FIXED_POINT_TYPE_IDS[t.data_type])

    def _fixed_point(self, index, t):
        if t.is_fixed_point:
            self.b.set_operand_extension_data(index, struct.pack("<b", t.fixed_point_position))
        return index

    def tensor(self, t, dims) -> int:
        return self._fixed_point(self.b.tensor(self._type(t), dims), t)

    def input(self, t, dims) -> int:
        return self._fixed_point(self.b.input(self._type(t), dims), t)

    def constant(self, t, dims, array: np.ndarray) -> int:
        i = self.tensor(t, dims)
        self.b.set_operand_value(i, np.ascontiguousarray(array, dtype=t.dtype))
        return i

    def float_constant(self, array) -> int:
        return self.b.constant(np.asarray(array, dtype=np.float32), "TENSOR_FLOAT32")

    def omitted(self, t) -> int:
        return self.b.omitted(self._type(t))

    def ints(self, *values) -> list[int]:
        return [self.b.int32(int(v)) for v in values]

    def float32(self, value) -> int:
        return self.b.float32(float(value))

    def boolean(self, value) -> int:
        return self.b.bool(bool(value))

    def op(self, name: str, inputs, out: int) -> None:
        self.b.add_operation(name, inputs, [out])

    def ext_op(self, name: str, inputs, out: int) -> list[str]:
        t = self.b.get_extension_operation_type(EXTENSION, OPERATION_IDS[name])
        self.b.add_operation(t, inputs, [out])
        return [f"{EXTENSION}:{name}"]

    def mark_output(self, index: int) -> None:
        self.b.mark_output(index)

    def finish(self):
        return self.b.finish()
