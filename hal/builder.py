"""A model builder shaped like the NDK's ANeuralNetworksModel_* functions.

    b = ModelBuilder()
    x = b.add_operand("TENSOR_FLOAT32", [1, 2])          # ANeuralNetworksModel_addOperand
    y = b.add_operand("TENSOR_FLOAT32", [1, 2])
    b.add_operation("RELU", [x], [y])                      # ANeuralNetworksModel_addOperation
    b.identify_inputs_and_outputs([x], [y])
    model = b.finish()                                     # a validated hal.types.Model

Misuse raises :class:`hal.errors.BuilderError` with the NDK result code: ``BAD_DATA`` for bad
arguments (an index out of range, a value of the wrong length, an invalid type) and
``BAD_STATE`` for calls in the wrong state (any change after :meth:`ModelBuilder.finish`).

Values up to 128 bytes are copied into ``Model.operand_values`` (CONSTANT_COPY); larger values
are placed in a memory pool that the builder creates at finish (CONSTANT_REFERENCE), as the
NDK does. As in the NDK, operations may be added in any order: finish() sorts them into run
order.

The convenience layer reads well in code that builds graphs:

    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [1, 8, 8, 3])
    w = b.constant(weights)                      # type and dims from the array
    y = b.op("CONV_2D", [x, w, bias, b.int32(1), ...], b.tensor("TENSOR_FLOAT32", [1, 8, 8, 4]))
    b.mark_output(y)
    model = b.finish()

:func:`make_request` and :func:`read_outputs` turn NumPy arrays into a request and an
execution's output pool back into arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hal.builder_convenience import ConvenienceLayer
from hal.builder_convenience import operand_type as _operand_type
from hal.builder_convenience import operation_type as _operation_type
from hal.builder_extensions import ExtensionCalls
from hal.builder_layout import MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES, build_model
from hal.builder_layout import Value as _Value
from hal.builder_layout import bad_data as _bad_data
from hal.builder_requests import make_request, read_outputs
from hal.errors import BuilderError, HalError, ResultCode
from hal.types import (
    NUMPY_DTYPE,
    ExtensionOperandType,
    Memory,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    SymmPerChannelQuantParams,
    is_scalar_type,
)
from hal.values import array_to_bytes

LT = OperandLifeTime
OT = OperandType


class ModelBuilder(ConvenienceLayer, ExtensionCalls):
    """ANeuralNetworksModel: add operands and operations, then finish() into a hal Model."""

    def __init__(self):
        self._operands: list[Operand] = []
        self._operations: list[Operation] = []
        self._values: dict[int, _Value] = {}
        self._no_value: set[int] = set()
        self._inputs: list[int] | None = None
        self._outputs: list[int] | None = None
        self._pending_inputs: list[int] = []
        self._pending_outputs: list[int] = []
        self._relaxed = False
        self._model: Model | None = None
        self._extension_prefixes: dict[str, int] = {}

    # ----------------------------------------------------------------- NDK-shaped calls
    @property
    def finished(self) -> bool:
        return self._model is not None

    @property
    def operand_count(self) -> int:
        return len(self._operands)

    @property
    def operation_count(self) -> int:
        return len(self._operations)

    def _check_state(self, what: str):
        if self._model is not None:
            raise BuilderError(ResultCode.BAD_STATE,
                               f"{what}: the model is already finished and cannot be modified")

    def _check_index(self, index, what: str) -> int:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) \
                or not 0 <= index < len(self._operands):
            _bad_data(f"{what}: operand index {index!r} is out of range "
                      f"({len(self._operands)} operands)")
        return int(index)

    def add_operand(self, type, dimensions: Sequence[int] = (), scale: float = 0.0,
                    zero_point: int = 0, channel_quant=None) -> int:
        """ANeuralNetworksModel_addOperand; returns the new operand's index.

        ``channel_quant`` is ``(scales, channel_dim)`` or a SymmPerChannelQuantParams.
        """
        self._check_state("add_operand")
        t = self._extension_type(type, operand=True) or _operand_type(type)
        try:
            dims = tuple(int(d) for d in dimensions)
        except (TypeError, ValueError):
            _bad_data(f"add_operand: dimensions {dimensions!r} are not a list of integers")
        if any(d < 0 for d in dims):
            _bad_data(f"add_operand: {t.name} has negative dimensions {list(dims)}")
        if (is_scalar_type(t) or t == OT.SUBGRAPH) and dims:
            _bad_data(f"add_operand: {t.name} is a scalar type and cannot have dimensions "
                      f"{list(dims)}")
        operand = Operand(t, dims, float(scale), int(zero_point))
        self._check_quant(operand)
        self._operands.append(operand)
        index = len(self._operands) - 1
        if channel_quant is not None:
            if isinstance(channel_quant, SymmPerChannelQuantParams):
                channel_quant = (channel_quant.scales, channel_quant.channel_dim)
            self.set_operand_symm_per_channel_quant_params(index, *channel_quant)
        return index

    def _check_quant(self, operand: Operand):
        from hal.validation import validate_tensor_quant

        t = operand.type
        what = f"add_operand: operand {len(self._operands)}"
        if isinstance(t, ExtensionOperandType):  # its scale and zero point are the extension's
            return
        if is_scalar_type(t) or t == OT.SUBGRAPH:
            if operand.scale != 0.0 or operand.zero_point != 0:
                _bad_data(f"{what} ({t.name}) must have scale 0 and zero point 0, got scale "
                          f"{operand.scale} and zero point {operand.zero_point}")
            return
        if t == OT.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            if operand.scale != 0.0 or operand.zero_point != 0:
                _bad_data(f"{what}: TENSOR_QUANT8_SYMM_PER_CHANNEL must have scale 0 and zero "
                          "point 0 (its scales are set per channel)")
            return
        try:
            validate_tensor_quant(what, t, operand)
        except HalError as e:
            _bad_data(e.reason)

    def set_operand_symm_per_channel_quant_params(self, index: int, scales: Sequence[float],
                                                  channel_dim: int):
        """ANeuralNetworksModel_setOperandSymmPerChannelQuantParams."""
        self._check_state("set_operand_symm_per_channel_quant_params")
        index = self._check_index(index, "set_operand_symm_per_channel_quant_params")
        op = self._operands[index]
        what = f"set_operand_symm_per_channel_quant_params: operand {index}"
        if op.type != OT.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            _bad_data(f"{what} is {op.type.name}, not TENSOR_QUANT8_SYMM_PER_CHANNEL")
        scales = tuple(float(s) for s in scales)
        if not 0 <= channel_dim < op.rank:
            _bad_data(f"{what}: channel dimension {channel_dim} is out of range for rank "
                      f"{op.rank}")
        if op.dimensions[channel_dim] not in (0, len(scales)):
            _bad_data(f"{what}: {len(scales)} scales for a channel dimension of size "
                      f"{op.dimensions[channel_dim]}")
        if not all(0 < s < float("inf") for s in scales):
            _bad_data(f"{what}: every per-channel scale must be positive and finite, got "
                      f"{list(scales)}")
        op.extra_params = SymmPerChannelQuantParams(scales, int(channel_dim))

    def set_operand_value(self, index: int, value):
        """ANeuralNetworksModel_setOperandValue. ``value`` is bytes (exactly the operand's
        size), anything NumPy converts to the operand's storage dtype, or None (NO_VALUE: an
        omitted optional operand)."""
        self._check_state("set_operand_value")
        index = self._check_index(index, "set_operand_value")
        op = self._operands[index]
        what = f"set_operand_value: operand {index} ({op.type.name})"
        self._check_not_io(index, what)
        if value is None:
            self._values.pop(index, None)
            self._no_value.add(index)
            return
        if op.type == OT.SUBGRAPH:
            _bad_data(f"{what}: a SUBGRAPH operand takes its value from "
                      "set_operand_value_from_model")
        needed = self._needed_length(op, what)
        if isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
        else:
            try:
                arr = np.asarray(value)
                if arr.dtype != NUMPY_DTYPE[op.type]:
                    arr = arr.astype(NUMPY_DTYPE[op.type])
            except (TypeError, ValueError) as e:
                _bad_data(f"{what}: cannot convert the value: {e}")
            n = needed // NUMPY_DTYPE[op.type].itemsize
            if arr.size != n:
                _bad_data(f"{what}: the value has {arr.size} elements, the operand "
                          f"{list(op.dimensions)} needs {n}")
            data = array_to_bytes(arr)
        if len(data) != needed:
            _bad_data(f"{what}: the value has {len(data)} bytes, the operand needs {needed}")
        self._no_value.discard(index)
        self._values[index] = _Value(data=data, length=len(data))

    def set_operand_value_from_memory(self, index: int, memory: Memory, offset: int,
                                      length: int):
        """ANeuralNetworksModel_setOperandValueFromMemory (a CONSTANT_REFERENCE)."""
        self._check_state("set_operand_value_from_memory")
        index = self._check_index(index, "set_operand_value_from_memory")
        op = self._operands[index]
        what = f"set_operand_value_from_memory: operand {index} ({op.type.name})"
        self._check_not_io(index, what)
        if not isinstance(memory, Memory):
            _bad_data(f"{what}: {type(memory).__name__} is not a hal Memory")
        if op.type == OT.SUBGRAPH:
            _bad_data(f"{what}: a SUBGRAPH operand takes its value from "
                      "set_operand_value_from_model")
        needed = self._needed_length(op, what)
        if length != needed:
            _bad_data(f"{what}: length {length} does not match the {needed} bytes the operand "
                      "needs")
        if offset < 0 or offset + length > memory.size:
            _bad_data(f"{what}: offset {offset} + length {length} exceeds the memory's "
                      f"{memory.size} bytes")
        self._no_value.discard(index)
        self._values[index] = _Value(memory=memory, offset=int(offset), length=int(length))

    def set_operand_value_from_model(self, index: int, model: Model):
        """ANeuralNetworksModel_setOperandValueFromModel: a SUBGRAPH operand (IF/WHILE
        branch or body) referencing another finished model."""
        self._check_state("set_operand_value_from_model")
        index = self._check_index(index, "set_operand_value_from_model")
        op = self._operands[index]
        what = f"set_operand_value_from_model: operand {index} ({op.type.name})"
        if op.type != OT.SUBGRAPH:
            _bad_data(f"{what} is not a SUBGRAPH operand")
        self._check_not_io(index, what)
        if not isinstance(model, Model):
            _bad_data(f"{what}: {type(model).__name__} is not a finished hal Model")
        self._no_value.discard(index)
        self._values[index] = _Value(model=model)

    def _check_not_io(self, index: int, what: str):
        ios = (self._inputs or []) + (self._outputs or []) + self._pending_inputs \
            + self._pending_outputs
        if index in ios:
            _bad_data(f"{what} is a model input or output and cannot have a value")

    @staticmethod
    def _needed_length(op: Operand, what: str) -> int:
        if not is_scalar_type(op.type) and (not op.dimensions or 0 in op.dimensions):
            _bad_data(f"{what}: a constant tensor needs fully specified dimensions, has "
                      f"{list(op.dimensions)}")
        return op.byte_size()

    def add_operation(self, type, inputs: Sequence[int], outputs: Sequence[int]) -> int:
        """ANeuralNetworksModel_addOperation; returns the operation's index (in the order of
        addition; finish() may reorder operations into run order)."""
        self._check_state("add_operation")
        t = self._extension_type(type, operand=False) or _operation_type(type)
        ins = [self._check_index(i, f"add_operation {t.name} input {k}")
               for k, i in enumerate(inputs)]
        outs = [self._check_index(i, f"add_operation {t.name} output {k}")
                for k, i in enumerate(outputs)]
        if not outs:
            _bad_data(f"add_operation {t.name}: an operation needs at least one output")
        for k, i in enumerate(outs):
            if i in self._values or i in self._no_value:
                _bad_data(f"add_operation {t.name}: output {k} (operand {i}) is a constant")
            if i in (self._inputs or []) or i in self._pending_inputs:
                _bad_data(f"add_operation {t.name}: output {k} (operand {i}) is a model input")
        self._operations.append(Operation(t, ins, outs))
        return len(self._operations) - 1

    def identify_inputs_and_outputs(self, inputs: Sequence[int], outputs: Sequence[int]):
        """ANeuralNetworksModel_identifyInputsAndOutputs."""
        self._check_state("identify_inputs_and_outputs")
        seen: set[int] = set()
        for kind, idxs in (("input", inputs), ("output", outputs)):
            for k, i in enumerate(idxs):
                i = self._check_index(i, f"identify_inputs_and_outputs {kind} {k}")
                if i in self._values or i in self._no_value:
                    _bad_data(f"identify_inputs_and_outputs: {kind} {k} (operand {i}) has a "
                              "value and cannot be a model input or output")
                if i in seen:
                    _bad_data(f"identify_inputs_and_outputs: operand {i} is listed twice")
                seen.add(i)
        self._inputs = [int(i) for i in inputs]
        self._outputs = [int(i) for i in outputs]

    def relax_computation_float32_to_float16(self, allow: bool = True):
        """ANeuralNetworksModel_relaxComputationFloat32toFloat16."""
        self._check_state("relax_computation_float32_to_float16")
        self._relaxed = bool(allow)

    def finish(self) -> Model:
        """ANeuralNetworksModel_finish: lay out values, sort operations into run order and
        validate (hal.validation.validate_model). Returns the Model."""
        from hal.validation import validate_model

        self._check_state("finish")
        if self._inputs is None:
            if not self._pending_inputs and not self._pending_outputs:
                raise BuilderError(ResultCode.BAD_STATE, "finish: the model inputs and outputs "
                                   "were not identified (identify_inputs_and_outputs)")
            self.identify_inputs_and_outputs(self._pending_inputs, self._pending_outputs)
        model = build_model(self._operands, self._operations, self._values, self._no_value,
                            self._inputs, self._outputs, self._relaxed)
        model.extension_name_to_prefix = self._extension_table(model)
        try:
            validate_model(model)
        except HalError as e:
            _bad_data(f"finish: the model is invalid: {e.reason}")
        self._model = model
        return model

    @property
    def model(self) -> Model:
        if self._model is None:
            raise BuilderError(ResultCode.BAD_STATE, "the model is not finished")
        return self._model


__all__ = ["MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES", "ModelBuilder", "make_request",
           "read_outputs"]
