"""Reading and writing operand values: constants of a model, request arguments in pools."""

from __future__ import annotations

import numpy as np

from hal.errors import InvalidArgument
from hal.types import (
    NUMPY_DTYPE,
    DataLocation,
    HostMemory,
    Memory,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
)


def pool_view(pools, index: int, what: str) -> memoryview:
    if not 0 <= index < len(pools):
        raise InvalidArgument(f"{what}: pool index {index} is out of range ({len(pools)} pools)")
    pool = pools[index]
    if not isinstance(pool, Memory):
        raise InvalidArgument(f"{what}: pool {index} is not host-accessible memory")
    return pool.view()


def location_bytes(model: Model, loc: DataLocation, lifetime: OperandLifeTime,
                   what: str) -> memoryview:
    if lifetime == OperandLifeTime.CONSTANT_COPY:
        buf = memoryview(model.operand_values)
    else:
        buf = pool_view(model.pools, loc.pool_index, what)
    if loc.offset + loc.length > len(buf):
        raise InvalidArgument(f"{what}: location offset {loc.offset} + length {loc.length} "
                              f"exceeds the {len(buf)}-byte pool")
    return buf[loc.offset: loc.offset + loc.length]


def _shaped(arr: np.ndarray, shape) -> np.ndarray:
    return arr.reshape(shape) if len(shape) else arr.reshape(()) if arr.size == 1 else arr


def array_from_bytes(data, op_type: OperandType, shape) -> np.ndarray:
    if op_type in (OperandType.BOOL, OperandType.TENSOR_BOOL8):
        return _shaped(np.frombuffer(bytes(data), dtype=np.uint8).astype(np.bool_), shape)
    return _shaped(np.frombuffer(bytes(data), dtype=NUMPY_DTYPE[op_type]), shape)


def array_copy_from_bytes(data, op_type: OperandType, shape) -> np.ndarray:
    """:func:`array_from_bytes` as an array of its own (writable, not sharing ``data``'s
    memory), in one copy."""
    if op_type in (OperandType.BOOL, OperandType.TENSOR_BOOL8):
        return _shaped(np.frombuffer(data, dtype=np.uint8).astype(np.bool_), shape)
    return _shaped(np.frombuffer(data, dtype=NUMPY_DTYPE[op_type]).copy(), shape)


def array_view_of_bytes(data, op_type: OperandType, shape) -> np.ndarray:
    """:func:`array_from_bytes` without a copy: a read-only view of ``data``'s memory (boolean
    types, stored as bytes, are converted: a copy)."""
    if op_type in (OperandType.BOOL, OperandType.TENSOR_BOOL8):
        return array_copy_from_bytes(data, op_type, shape)
    arr = np.frombuffer(data, dtype=NUMPY_DTYPE[op_type])
    arr.flags.writeable = False
    return _shaped(arr, shape)


def constant_value(model: Model, operand: Operand, index: int = -1) -> np.ndarray:
    """The value of a CONSTANT_COPY / CONSTANT_REFERENCE operand as an array of its shape."""
    data = location_bytes(model, operand.location, operand.lifetime, f"operand {index}")
    return array_from_bytes(data, operand.type, tuple(operand.dimensions))


def constant_view(model: Model, operand: Operand, index: int = -1,
                  kept: bool = False) -> np.ndarray:
    """:func:`constant_value` without a copy where the bytes are the model's own: a read-only
    view of ``operand_values`` held as ``bytes`` or of a HostMemory pool (a copy of a weight
    tensor in a fresh process costs its pages: pose_landmark_full's 12.7 MB of constants were
    copied to validate the model and again for its prepared model). ``kept``: the value
    outlives the check that reads it (a prepared model's constants): a view only where the
    bytes never change (``bytes``, a private HostMemory: ``HostMemory.private``). Other pools
    (a file mapping, a client's memory) are copied, as :func:`constant_value` does."""
    if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
        own = isinstance(model.operand_values, bytes)
    else:
        i = operand.location.pool_index
        pool = model.pools[i] if 0 <= i < len(model.pools) else None
        own = type(pool) is HostMemory and (pool.private or not kept)
    if not own:
        return constant_value(model, operand, index)
    data = location_bytes(model, operand.location, operand.lifetime, f"operand {index}")
    return array_view_of_bytes(data, operand.type, tuple(operand.dimensions))


def static_view(model: Model, operand: Operand, index: int = -1,
                kept: bool = False) -> np.ndarray | None:
    """:func:`static_value` with constants as :func:`constant_view` reads them."""
    if operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
        return constant_view(model, operand, index, kept)
    return static_value(model, operand, index)


def static_value(model: Model, operand: Operand, index: int = -1) -> np.ndarray | None:
    """The value an operand has before execution: a constant's, or the index of the subgraph
    a SUBGRAPH operand refers to (IF, WHILE); None for the others."""
    if operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
        return constant_value(model, operand, index)
    if operand.lifetime == OperandLifeTime.SUBGRAPH:
        return np.array(operand.location.offset, dtype=np.int32)
    return None


def array_to_bytes(arr: np.ndarray) -> bytes:
    if arr.dtype == np.bool_:
        return arr.astype(np.uint8).tobytes()
    return np.ascontiguousarray(arr).tobytes()
