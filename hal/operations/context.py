"""What an operation sees: its operands (type, shape, quantization, value) and helpers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hal.errors import InvalidArgument
from hal.types import (
    NUMPY_DTYPE,
    OperandLifeTime,
    OperandType,
    OperationType,
    SymmPerChannelQuantParams,
)


def shapes_compatible(declared, actual) -> bool:
    """An actual shape fits a declared one (rank 0 or 0 dimensions: unknown)."""
    if len(declared) == 0:
        return True
    if len(declared) != len(actual):
        return False
    return all(d == 0 or d == a for d, a in zip(declared, actual))


@dataclass
class OperandInfo:
    type: OperandType
    shape: tuple[int, ...]
    scale: float = 0.0
    zero_point: int = 0
    channel_quant: SymmPerChannelQuantParams | None = None
    #: the value: known constants at validation/prepare, every input at execution.
    value: np.ndarray | None = None
    lifetime: OperandLifeTime = OperandLifeTime.TEMPORARY_VARIABLE
    index: int = -1
    #: an extension operand's parameters (the HAL's extraParams.extension), else None
    extension_params: bytes | None = None

    @property
    def omitted(self) -> bool:
        return self.lifetime == OperandLifeTime.NO_VALUE

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> np.dtype:
        return NUMPY_DTYPE[self.type]

    @property
    def is_constant(self) -> bool:
        return self.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


def operand_info(subgraph, index: int, value=None, shape=None) -> OperandInfo:
    """Operand ``index`` of ``subgraph`` as an operation sees it: its declared type and
    quantization, ``value`` (None: not known) and ``shape`` (None: the declared one)."""
    op = subgraph.operands[index]
    extra = op.extra_params
    ext = bytes(extra) if isinstance(extra, (bytes, bytearray)) else None
    return OperandInfo(op.type, tuple(shape if shape is not None else op.dimensions), op.scale,
                       op.zero_point, None if ext is not None else extra, value, op.lifetime,
                       index, ext)


def operation_context(model, subgraph, op_index: int, values, shapes=None, *,
                      executor=None) -> OperationContext:
    """The context of operation ``op_index`` of ``subgraph``: its operands with the values
    ``values`` has for them (a mapping; validation passes the constants, execution every
    value computed so far) and the shapes ``shapes`` has (else the declared ones)."""
    operation = subgraph.operations[op_index]
    shapes = shapes or {}

    def info(i):
        return operand_info(subgraph, i, values.get(i), shapes.get(i))

    return OperationContext(operation.type, [info(i) for i in operation.inputs],
                            [info(i) for i in operation.outputs],
                            relaxed=model.relax_computation_float32_to_float16,
                            executor=executor, op_index=op_index, model=model)


class OperationContext:
    """Context of one operation, shared by validate, prepare and execute.

    At validation, ``value`` is set for constant inputs only and shapes may hold 0 (unknown).
    At execution every present input has a value and a concrete shape.
    """

    def __init__(self, op_type: OperationType, inputs: list[OperandInfo],
                 outputs: list[OperandInfo], *, relaxed: bool = False, executor=None,
                 op_index: int = -1, model=None):
        self.op_type = op_type
        self.inputs = inputs
        self.outputs = outputs
        self.relaxed = relaxed
        #: the subgraph executor (IF/WHILE call back into it; RANDOM_MULTINOMIAL takes its rng)
        self.executor = executor
        self.op_index = op_index
        #: the whole model (IF/WHILE validation checks the referenced subgraphs' operands)
        self.model = model if model is not None else getattr(executor, "model", None)

    # ------------------------------------------------------------------ access
    @property
    def name(self) -> str:
        return self.op_type.name

    def num_inputs(self) -> int:
        return len(self.inputs)

    def has_input(self, i: int) -> bool:
        return i < len(self.inputs) and not self.inputs[i].omitted

    def input_type(self, i: int) -> OperandType:
        return self.inputs[i].type

    def input_shape(self, i: int) -> tuple[int, ...]:
        return self.inputs[i].shape

    def input(self, i: int) -> np.ndarray:
        info = self.inputs[i]
        if info.omitted:
            self.fail(f"input {i} has no value")
        if info.value is None:
            raise LookupError(f"{self.name}: input {i} is not known before execution")
        return info.value

    def value_known(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i].value is not None

    def scalar(self, i: int, default=None):
        """A scalar input as a Python value (None when not known yet / omitted)."""
        if i >= len(self.inputs) or self.inputs[i].omitted or self.inputs[i].value is None:
            return default
        v = self.inputs[i].value.reshape(-1)[0]
        return v.item()

    # ------------------------------------------------------------------ errors
    def fail(self, reason: str):
        raise InvalidArgument(f"{self.name} (operation {self.op_index}): {reason}")

    def require(self, cond: bool, reason: str):
        if not cond:
            self.fail(reason)
