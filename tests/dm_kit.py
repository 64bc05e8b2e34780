"""Helpers for the data-movement op tests: call an operation's execute() directly, for
inputs a request cannot carry (zero-sized tensors, which only occur between operations)."""

from __future__ import annotations

import numpy as np

from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import NUMPY_DTYPE, OperandLifeTime, OperandType, OperationType


def info(type_: str, value=None, shape=None, scale=0.0, zero_point=0) -> OperandInfo:
    t = OperandType[type_]
    if value is not None:
        value = np.asarray(value, dtype=NUMPY_DTYPE[t])
        shape = value.shape
    return OperandInfo(t, tuple(shape or ()), scale, zero_point, None, value,
                       OperandLifeTime.CONSTANT_COPY if value is not None
                       else OperandLifeTime.TEMPORARY_VARIABLE)


def call(op: str, inputs: list[OperandInfo], outputs: list[OperandInfo]) -> list[np.ndarray]:
    """prepare() and execute() of ``op`` on operands with values; returns its output arrays."""
    op_type = OperationType[op]
    return lookup(op_type).run(OperationContext(op_type, inputs, outputs))
