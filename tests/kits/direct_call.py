"""Calling an operation's registered prepare() and execute() directly on arrays, for operands a
model cannot carry: zero-sized tensors only arise between operations (a request must give every
input's dimensions, a constant must be fully specified), so the edge cases with zero-sized
inputs (no rois, empty batches, empty slices) run the implementation on an OperationContext
built here.

    (y,) = call("RESHAPE", [info(F32, x), info(TI, [-1, 2])], [info(F32, shape=(0, 0))])
"""

from __future__ import annotations

import numpy as np

from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import NUMPY_DTYPE, OperandLifeTime, OperandType, OperationType


def info(type_: str, value=None, shape=None, scale=0.0, zero_point=0) -> OperandInfo:
    """An operand with a value (a constant) or, without one, of ``shape`` (an output)."""
    t = OperandType[type_]
    if value is not None:
        value = np.asarray(value, dtype=NUMPY_DTYPE[t])
        shape = value.shape
    return OperandInfo(t, tuple(shape or ()), scale, zero_point, None, value,
                       OperandLifeTime.CONSTANT_COPY if value is not None
                       else OperandLifeTime.TEMPORARY_VARIABLE)


def call(op: str, inputs: list[OperandInfo], outputs: list[OperandInfo]) -> list[np.ndarray]:
    """prepare() then execute() of ``op`` on the given operands; returns its output arrays.
    Floating-point
    warnings are silenced: empty inputs make NumPy warn about reductions over nothing."""
    op_type = OperationType[op]
    with np.errstate(all="ignore"):
        return lookup(op_type).run(OperationContext(op_type, inputs, outputs))
