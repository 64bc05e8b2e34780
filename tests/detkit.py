"""Helpers for the detection-family tests: call an op's execute() directly on arrays.

Zero-sized tensors cannot be model inputs or constants (a request must give every input's
dimensions, a constant must be fully specified), so edge cases with zero rois run the
registered implementation on an OperationContext built here.
"""

from __future__ import annotations

import numpy as np

from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import NUMPY_DTYPE, OperandLifeTime, OperandType, OperationType


def info(type_, value=None, scale=0.0, zero_point=0, dims=None) -> OperandInfo:
    t = OperandType[type_]
    arr = None if value is None else np.asarray(value, dtype=NUMPY_DTYPE[t])
    shape = tuple(dims) if dims is not None else (arr.shape if arr is not None else ())
    return OperandInfo(t, shape, scale, zero_point, None, arr, OperandLifeTime.CONSTANT_COPY)


def call(op: str, inputs: list[OperandInfo], outputs: list[OperandInfo]):
    """prepare() and execute() of ``op`` on the given operands; returns its output arrays."""
    reg = lookup(OperationType[op])
    ctx = OperationContext(OperationType[op], inputs, outputs)
    with np.errstate(all="ignore"):
        return reg.run(ctx)
