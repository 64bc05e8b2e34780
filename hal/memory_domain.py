"""Device memories (memory domains, HAL 1.3): IDevice::allocate and IBuffer.

``allocate(descriptor, prepared_models, input_roles, output_roles)`` checks the roles the way
the HAL does and returns a :class:`DeviceBuffer`: a tensor that lives on the device. Requests
name it as a pool (``Request.pools[k] = buffer``, with a zero offset and length in the
argument's location) for the inputs and outputs whose roles it was allocated for, so
consecutive executions hand tensors over without copies through the client.

Statuses: a role naming a missing model / input / output, a frequency outside (0, 1], a role
given twice, roles whose operands differ in type or quantization, or dimensions that do not
agree are INVALID_ARGUMENT at allocate; copy_to / copy_from with a memory of the wrong size or
incompatible dimensions are INVALID_ARGUMENT; reading a buffer that holds no value yet
(copy_to, or an execution input) is GENERAL_FAILURE. A buffer's dimensions may be partly
unknown at allocate; copy_from with dimensions, or an execution writing it, sets them.
"""

from __future__ import annotations

import threading

import numpy as np

from hal.errors import ErrorStatus, GeneralFailure, InvalidArgument
from hal.interfaces import Buffer
from hal.types import (
    NUMPY_DTYPE,
    BufferDesc,
    BufferRole,
    Memory,
    Operand,
    OperandType,
    Request,
    is_scalar_type,
)
from hal.validation_request import validate_request
from hal.values import array_from_bytes, array_to_bytes

OT = OperandType


def combine_dimensions(a, b) -> tuple[int, ...] | None:
    """The dimensions that satisfy both (0 = unknown, () = unknown rank), or None."""
    a, b = tuple(a or ()), tuple(b or ())
    if not a:
        return b
    if not b:
        return a
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b):
        if x and y and x != y:
            return None
        out.append(x or y)
    return tuple(out)


def _fully_specified(op_type, dims) -> bool:
    return is_scalar_type(op_type) or (bool(dims) and all(d > 0 for d in dims))


class DeviceBuffer(Buffer):
    """A device memory of one operand type. Subclasses keep the bytes where the device wants
    them (``_store`` / ``_load``); this class keeps the roles, dimensions and state."""

    def __init__(self, device, operand: Operand, dimensions, roles: set):
        self.device = device
        self.type = operand.type  # resolved at prepare (OperandType or an extension type)
        self.scale = operand.scale
        self.zero_point = operand.zero_point
        self.extra_params = operand.extra_params
        #: dimensions given at allocate (0 = unknown)
        self.dimensions = tuple(dimensions)
        #: (id of a prepared model, "input" | "output", io index)
        self.roles = roles
        self.initialized = False
        #: dimensions of the value held (set by copy_from or an execution)
        self.value_dimensions: tuple[int, ...] | None = None
        self.lock = threading.RLock()

    # ------------------------------------------------------------------ storage
    def _store(self, arr: np.ndarray):
        raise NotImplementedError

    def _load(self) -> np.ndarray:
        raise NotImplementedError

    # ------------------------------------------------------------------ roles
    def has_role(self, prepared, kind: str, index: int) -> bool:
        return (id(prepared), kind, index) in self.roles

    def known_dimensions(self, dims=()) -> tuple[int, ...]:
        combined = combine_dimensions(self.dimensions, dims)
        return combined if combined is not None else tuple(dims)

    def nbytes(self, dims) -> int:
        n = NUMPY_DTYPE[self.type].itemsize
        for d in dims:
            n *= int(d)
        return n

    # ------------------------------------------------------------------ IBuffer
    def copy_to(self, dst) -> ErrorStatus:
        with self.lock:
            if not isinstance(dst, Memory):
                return ErrorStatus.INVALID_ARGUMENT
            if not self.initialized:
                return ErrorStatus.GENERAL_FAILURE
            if dst.size != self.nbytes(self.value_dimensions):
                return ErrorStatus.INVALID_ARGUMENT
            data = array_to_bytes(self._load())
            dst.view()[: len(data)] = data
            return ErrorStatus.NONE

    def copy_from(self, src, dimensions=()) -> ErrorStatus:
        with self.lock:
            if not isinstance(src, Memory):
                return ErrorStatus.INVALID_ARGUMENT
            dims = combine_dimensions(self.dimensions, dimensions)
            if dims is None or not _fully_specified(self.type, dims):
                return ErrorStatus.INVALID_ARGUMENT
            if src.size != self.nbytes(dims):
                return ErrorStatus.INVALID_ARGUMENT
            arr = array_from_bytes(bytes(src.view()), self.type, dims)
            self.write(arr)
            return ErrorStatus.NONE

    # ------------------------------------------------------------------ executions
    def check_readable(self, what: str, dims=()):
        """GENERAL_FAILURE when the memory holds no value; INVALID_ARGUMENT when the value's
        dimensions contradict ``dims``."""
        if not self.initialized:
            raise GeneralFailure(f"{what} reads a device memory that holds no value")
        if combine_dimensions(self.value_dimensions, dims) is None:
            raise InvalidArgument(f"{what}: the device memory holds dimensions "
                                  f"{list(self.value_dimensions)}, the request gives "
                                  f"{list(dims)}")

    def read(self, what: str, dims=()):
        """The value as an execution input (see check_readable)."""
        with self.lock:
            self.check_readable(what, dims)
            return self._load()

    def check_fits(self, what: str, shape) -> None:
        if combine_dimensions(self.dimensions, shape) is None:
            raise GeneralFailure(f"{what} has shape {list(shape)}, the device memory was "
                                 f"allocated with dimensions {list(self.dimensions)}")

    def write(self, arr: np.ndarray):
        with self.lock:
            self._store(np.ascontiguousarray(arr, dtype=NUMPY_DTYPE[self.type]))
            self.value_dimensions = tuple(int(d) for d in arr.shape)
            self.initialized = True

    def invalidate(self):
        with self.lock:
            self.initialized = False


class HostBuffer(DeviceBuffer):
    """A device memory of a host device (the reference device): a NumPy array."""

    def __init__(self, *args):
        super().__init__(*args)
        self._array: np.ndarray | None = None

    def _store(self, arr):
        self._array = arr.copy()

    def _load(self):
        return self._array


# ------------------------------------------------------------------------------ allocate

def validate_allocation(descriptor: BufferDesc | None, prepared_models, input_roles,
                        output_roles, owns=None) -> tuple[Operand, tuple[int, ...], set]:
    """The HAL's checks of IDevice::allocate; returns (operand, dimensions, roles) or raises
    InvalidArgument. ``owns(prepared)`` tells whether a prepared model is this device's."""
    prepared_models = list(prepared_models or ())
    input_roles, output_roles = list(input_roles or ()), list(output_roles or ())
    if not prepared_models:
        raise InvalidArgument("allocate needs at least one prepared model")
    if not input_roles and not output_roles:
        raise InvalidArgument("allocate needs at least one input or output role")
    for n, pm in enumerate(prepared_models):
        if getattr(pm, "model", None) is None or (owns is not None and not owns(pm)):
            raise InvalidArgument(f"prepared model {n} was not prepared by this device")
    desc_dims = tuple(descriptor.dimensions) if descriptor is not None else ()
    if any(d < 0 for d in desc_dims):
        raise InvalidArgument(f"the descriptor has negative dimensions {list(desc_dims)}")
    first: Operand | None = None
    dims = desc_dims
    roles = set()
    for kind, role_list in (("input", input_roles), ("output", output_roles)):
        for n, role in enumerate(role_list):
            what = f"{kind} role {n}"
            if not isinstance(role, BufferRole):
                raise InvalidArgument(f"{what} is not a BufferRole")
            if not 0 <= role.model_index < len(prepared_models):
                raise InvalidArgument(f"{what} names prepared model {role.model_index}, "
                                      f"{len(prepared_models)} were given")
            pm = prepared_models[role.model_index]
            sg = pm.model.main
            idxs = sg.input_indexes if kind == "input" else sg.output_indexes
            if not 0 <= role.io_index < len(idxs):
                raise InvalidArgument(f"{what} names {kind} {role.io_index}, the model has "
                                      f"{len(idxs)} {kind}s")
            if not 0.0 < role.frequency <= 1.0:
                raise InvalidArgument(f"{what} has frequency {role.frequency}, outside (0, 1]")
            key = (id(pm), kind, role.io_index)
            if key in roles:
                raise InvalidArgument(f"{what} repeats {kind} {role.io_index} of prepared "
                                      f"model {role.model_index}")
            roles.add(key)
            op = sg.operands[idxs[role.io_index]]
            if first is None:
                first = op
            elif (op.type, op.scale, op.zero_point, op.extra_params) != (
                    first.type, first.scale, first.zero_point, first.extra_params):
                raise InvalidArgument(f"{what}: operand {op.type.name} scale {op.scale} "
                                      f"zero point {op.zero_point} differs from the first "
                                      f"role's {first.type.name} scale {first.scale} "
                                      f"zero point {first.zero_point}")
            combined = combine_dimensions(dims, op.dimensions)
            if combined is None:
                raise InvalidArgument(f"{what}: dimensions {list(op.dimensions)} do not agree "
                                      f"with {list(dims)}")
            dims = combined
    if is_scalar_type(first.type) and dims:
        raise InvalidArgument(f"a {first.type.name} memory cannot have dimensions "
                              f"{list(dims)}")
    return first, dims, roles


def allocate_host_buffer(device, descriptor, prepared_models, input_roles, output_roles,
                         owns=None, factory=HostBuffer) -> DeviceBuffer:
    op, dims, roles = validate_allocation(descriptor, prepared_models, input_roles,
                                          output_roles, owns)
    return factory(device, op, dims, roles)


# ------------------------------------------------------------------------------ requests

def validate_execution_request(prepared, request: Request):
    """validate_request, with device memories allowed where their roles say so."""
    model = prepared.model
    validate_request(request, model, allow_device_memory=lambda p: isinstance(p, DeviceBuffer))
    if not any(isinstance(p, DeviceBuffer) for p in request.pools):
        return  # host memories only: no roles to check
    sg = model.main
    for kind, args, idxs in (("input", request.inputs, sg.input_indexes),
                             ("output", request.outputs, sg.output_indexes)):
        for k, arg in enumerate(args[: len(idxs)]):
            if arg.has_no_value:
                continue
            pool = request.pools[arg.location.pool_index]
            if not isinstance(pool, DeviceBuffer):
                continue
            what = f"request {kind} {k}"
            if not pool.has_role(prepared, kind, k):
                raise InvalidArgument(f"{what} names a device memory that was not allocated "
                                      f"for {kind} {k} of this prepared model")
            if arg.location.offset or arg.location.length:
                raise InvalidArgument(f"{what} names a device memory with offset "
                                      f"{arg.location.offset} and length "
                                      f"{arg.location.length}; both must be 0")
            if combine_dimensions(pool.dimensions, arg.dimensions) is None:
                raise InvalidArgument(f"{what} gives dimensions {list(arg.dimensions)}, the "
                                      f"device memory has {list(pool.dimensions)}")
