"""The convenience layer of :class:`hal.builder.ModelBuilder`: operand and operation types by
name, operands by role (input, output, intermediate tensor, constant, scalar, omitted) and
operations that return their outputs, on top of the NDK-shaped calls (add_operand,
set_operand_value, add_operation)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hal.builder_layout import bad_data as _bad_data
from hal.types import OperandType, OperationType, is_scalar_type

OT = OperandType

_DTYPE_TO_TENSOR = {
    np.dtype(np.float32): OT.TENSOR_FLOAT32,
    np.dtype(np.float64): OT.TENSOR_FLOAT32,
    np.dtype(np.float16): OT.TENSOR_FLOAT16,
    np.dtype(np.int32): OT.TENSOR_INT32,
    np.dtype(np.int64): OT.TENSOR_INT32,
    np.dtype(np.bool_): OT.TENSOR_BOOL8,
}


def operand_type(type_) -> OperandType:
    try:
        return OperandType[type_] if isinstance(type_, str) else OperandType(type_)
    except (KeyError, ValueError):
        _bad_data(f"{type_!r} is not a valid operand type")


def operation_type(type_) -> OperationType:
    try:
        return OperationType[type_] if isinstance(type_, str) else OperationType(type_)
    except (KeyError, ValueError):
        _bad_data(f"{type_!r} is not a valid operation type")


class ConvenienceLayer:
    """Mixed into ModelBuilder: every call here goes through its NDK-shaped calls."""

    def tensor(self, type, dims: Sequence[int], scale: float = 0.0, zero_point: int = 0,
               channel_quant=None, *, zp: int | None = None) -> int:
        """A tensor operand without a value (an intermediate, or an output of op())."""
        return self.add_operand(type, dims, scale, zero_point if zp is None else zp,
                                channel_quant)

    def input(self, type, dims: Sequence[int], scale: float = 0.0, zero_point: int = 0,
              *, zp: int | None = None) -> int:
        """A model input (in the order of these calls, unless identify_inputs_and_outputs is
        called explicitly)."""
        i = self.tensor(type, dims, scale, zero_point, zp=zp)
        self._pending_inputs.append(i)
        return i

    def output(self, type, dims: Sequence[int], scale: float = 0.0, zero_point: int = 0,
               *, zp: int | None = None) -> int:
        """A model output operand, to be written by an operation."""
        i = self.tensor(type, dims, scale, zero_point, zp=zp)
        self._pending_outputs.append(i)
        return i

    def mark_output(self, index: int) -> int:
        """Make an existing operand a model output."""
        self._check_state("mark_output")
        index = self._check_index(index, "mark_output")
        self._pending_outputs.append(index)
        return index

    def scalar(self, type, value) -> int:
        """A constant scalar operand (INT32, FLOAT32, FLOAT16, BOOL, UINT32)."""
        i = self.add_operand(type)
        self.set_operand_value(i, value)
        return i

    def int32(self, value: int) -> int:
        return self.scalar(OT.INT32, value)

    def float32(self, value: float) -> int:
        return self.scalar(OT.FLOAT32, value)

    def bool(self, value: bool) -> int:
        return self.scalar(OT.BOOL, value)

    def constant(self, value, type=None, scale: float = 0.0, zero_point: int = 0,
                 channel_quant=None, *, zp: int | None = None) -> int:
        """A constant tensor with the array's shape. ``type`` defaults from the dtype
        (float32 -> TENSOR_FLOAT32, float16 -> TENSOR_FLOAT16, int32 -> TENSOR_INT32,
        bool -> TENSOR_BOOL8)."""
        arr = np.asarray(value)
        if type is None:
            if arr.dtype not in _DTYPE_TO_TENSOR:
                _bad_data(f"constant: no default operand type for dtype {arr.dtype}; pass type=")
            type = _DTYPE_TO_TENSOR[arr.dtype]
        t = self._extension_type(type, operand=True) or operand_type(type)
        dims = () if is_scalar_type(t) else (arr.shape or (1,))
        i = self.add_operand(t, dims, scale, zero_point if zp is None else zp, channel_quant)
        self.set_operand_value(i, arr)
        return i

    def omitted(self, type="TENSOR_FLOAT32") -> int:
        """An omitted optional operand (NO_VALUE)."""
        i = self.add_operand(type)
        self.set_operand_value(i, None)
        return i

    def op(self, type, inputs: Sequence[int], outputs: int | Sequence[int]):
        """add_operation that returns the output index (or the list, for several)."""
        single = isinstance(outputs, (int, np.integer))
        outs = [outputs] if single else list(outputs)
        self.add_operation(type, inputs, outs)
        return outs[0] if single else outs
