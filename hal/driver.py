"""Driver plumbing every device shares: the pre-run checks of an execution, reading the
request's inputs, writing its outputs (OUTPUT_INSUFFICIENT_SIZE), turning an execution's outcome
into an ExecutionResult, and the asynchronous / fenced / burst executions that run on
``execute_synchronously`` (:class:`DriverPreparedModel`). Both devices import it; no device
imports another device."""

from __future__ import annotations

import time

import numpy as np

from hal.errors import ErrorStatus, GeneralFailure, HalError, InvalidArgument, MissedDeadline
from hal.execution import configure_burst, execute_async, execute_fenced
from hal.interfaces import (
    LOOP_TIMEOUT_DEFAULT_NS,
    LOOP_TIMEOUT_MAXIMUM_NS,
    ExecutionResult,
    PreparedModel,
)
from hal.memory_domain import DeviceBuffer, validate_execution_request
from hal.operations.context import shapes_compatible
from hal.types import (
    NO_TIMING,
    NUMPY_DTYPE,
    ExecutionPreference,
    HostMemory,
    MeasureTiming,
    Memory,
    Model,
    OutputShape,
    Priority,
    Request,
)
from hal.types_memory import is_writable
from hal.validation_request import check_omitted_inputs, request_dimensions
from hal.values import array_copy_from_bytes, array_to_bytes, array_view_of_bytes, pool_view


def check_prepare_args(priority, deadline, preference=None):
    try:
        Priority(priority)
    except ValueError:
        raise InvalidArgument(f"priority {priority} is not a valid Priority") from None
    if preference is not None:
        try:
            ExecutionPreference(preference)
        except ValueError:
            raise InvalidArgument(f"preference {preference} is not a valid "
                                  "ExecutionPreference") from None
    if deadline is not None and time.monotonic_ns() > deadline:
        raise MissedDeadline("the deadline passed before preparation",
                             ErrorStatus.MISSED_DEADLINE_PERSISTENT)


def read_inputs(model: Model, request: Request, copy=True) -> list[np.ndarray | None]:
    """Input arrays of a (validated) request; None for omitted inputs. ``copy=False``: views
    of the request's memory, read-only (a device that only uploads them before the execution
    returns; the client may not change the memory of a running execution); a list: per
    input, whether it is copied."""
    arrays = []
    sg = model.main
    pools = request.pools
    copies = copy if isinstance(copy, (list, tuple)) else None
    for k, (arg, i) in enumerate(zip(request.inputs, sg.input_indexes)):
        if copies is not None:
            copy = copies[k]
        if arg.has_no_value:
            arrays.append(None)
            continue
        op = sg.operands[i]
        dims = request_dimensions(f"request input {k}", op, arg.dimensions)
        loc = arg.location
        pool = pools[loc.pool_index]
        if not isinstance(pool, Memory) and isinstance(pool, DeviceBuffer):  # a device memory
            # (memory domains; a host Memory checked first: DeviceBuffer's check is abc's)
            arrays.append(pool.read(f"request input {k}", dims))
            continue
        view = pool_view(pools, loc.pool_index, f"request input {k}")
        arrays.append(_input_array(view, loc, op.type, dims, copy))
    return arrays


def _input_array(view, loc, op_type, dims, copy: bool) -> np.ndarray:
    """The bytes at ``loc`` of a pool's ``view`` as an input array (array_copy_from_bytes /
    array_view_of_bytes of them, read without slicing the view first where they lie in it)."""
    dtype = NUMPY_DTYPE.get(op_type)
    n = loc.length
    if dtype is None or dtype == np.bool_ or not 0 <= loc.offset <= len(view) - n or \
            n % dtype.itemsize:  # (the general path: its own conversions and errors)
        read = array_copy_from_bytes if copy else array_view_of_bytes
        return read(view[loc.offset: loc.offset + n], op_type, dims)
    arr = np.frombuffer(view, dtype, n // dtype.itemsize, loc.offset)
    if copy:
        arr = arr.copy()
    else:
        arr.flags.writeable = False
    return arr.reshape(dims) if len(dims) else arr.reshape(()) if arr.size == 1 else arr


def write_outputs(model: Model, request: Request, outputs: list[np.ndarray]):
    """Check sizes, then write. Returns (status, output shapes)."""
    shapes = []
    sufficient = True
    sg = model.main
    host_bytes = {}  # output k -> its bytes (made once; None: already in place)
    for k, (arg, i, arr) in enumerate(zip(request.outputs, sg.output_indexes, outputs)):
        op = sg.operands[i]
        request_dimensions(f"request output {k}", op, arg.dimensions)
        if arg.dimensions and not shapes_compatible(arg.dimensions, arr.shape):
            raise GeneralFailure(f"output {k} has shape {list(arr.shape)}, the request "
                                 f"declared {list(arg.dimensions)}")
        pool = request.pools[arg.location.pool_index]
        if not isinstance(pool, Memory) and isinstance(pool, DeviceBuffer):  # sized by the
            # device: always sufficient
            pool.check_fits(f"output {k}", arr.shape)
            shapes.append(output_shape(arr.shape, True))
            continue
        if _in_place(arr, request, arg.location):
            host_bytes[k], size = None, arr.nbytes
        else:
            data = host_bytes[k] = array_to_bytes(arr)
            size = len(data)
        ok = size <= arg.location.length
        sufficient &= ok
        shapes.append(output_shape(arr.shape, ok))
    if not sufficient:
        return ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, shapes
    for k, (arg, arr) in enumerate(zip(request.outputs, outputs)):
        pool = request.pools[arg.location.pool_index]
        if not isinstance(pool, Memory) and isinstance(pool, DeviceBuffer):
            pool.write(arr)
            continue
        data = host_bytes[k]
        if data is None:
            continue  # a device read it straight into the request's memory
        view = pool_view(request.pools, arg.location.pool_index, "request output")
        view[arg.location.offset: arg.location.offset + len(data)] = data
    return ErrorStatus.NONE, shapes


#: (shape, sufficient) -> its OutputShape (an immutable value: one per shape, not one per
#: execution), at most OUTPUT_SHAPES of them
_OUTPUT_SHAPES: dict = {}
OUTPUT_SHAPES = 256


def output_shape(shape, sufficient: bool) -> OutputShape:
    """OutputShape(shape as ints, sufficient), made once per shape."""
    key = (tuple(shape), bool(sufficient))
    found = _OUTPUT_SHAPES.get(key)
    if found is None:
        if len(_OUTPUT_SHAPES) >= OUTPUT_SHAPES:
            _OUTPUT_SHAPES.clear()
        found = _OUTPUT_SHAPES[key] = OutputShape(tuple(int(d) for d in shape), key[1])
    return found


def _in_place(arr, request: Request, loc) -> bool:
    """Whether ``arr`` is already the bytes at ``loc`` of the request's host memory: a device
    that reads a result straight into the request's memory leaves nothing to copy (an array
    that owns its bytes never is)."""
    if not isinstance(arr, np.ndarray):
        return False
    flags = arr.flags
    pool = request.pools[loc.pool_index]
    if flags.owndata or arr.dtype == np.bool_ or not flags.c_contiguous or \
            (not isinstance(pool, Memory) and isinstance(pool, DeviceBuffer)):
        return False
    view = pool_view(request.pools, loc.pool_index, "request output")
    if not 0 <= loc.offset < len(view):
        return False
    start = np.frombuffer(view, np.uint8, 1, loc.offset)
    return arr.__array_interface__["data"][0] == start.__array_interface__["data"][0]


def loop_timeout(duration_ns):
    if duration_ns is None:
        return LOOP_TIMEOUT_DEFAULT_NS
    if duration_ns < 0 or duration_ns > LOOP_TIMEOUT_MAXIMUM_NS:
        raise InvalidArgument(f"loop timeout {duration_ns} ns is outside [0, "
                              f"{LOOP_TIMEOUT_MAXIMUM_NS}] ns")
    return duration_ns


_MEASURE_VALUES = frozenset(MeasureTiming)


def begin_execution(prepared, request, measure, deadline, loop_timeout_duration) -> int:
    """The checks every execution makes before it runs, on every device: the request against
    the model (and device memories), the MeasureTiming value, the loop timeout (returned, in
    ns) and a deadline that has already passed. A request whose layout (:func:`request_key`)
    passed them before on ``prepared`` is not checked again: the checks read nothing else of
    it."""
    key = request_key(request)
    seen = _validated(prepared) if key is not None else None
    if seen is None or key not in seen:
        validate_execution_request(prepared, request)
        check_omitted_inputs(request, prepared.model)
        if seen is not None:
            if len(seen) >= VALIDATED_LAYOUTS:
                seen.clear()
            seen.add(key)
    try:
        valid = measure in _MEASURE_VALUES
    except TypeError:  # unhashable: no MeasureTiming
        valid = False
    if not valid:
        raise InvalidArgument(f"measure {measure} is not a valid MeasureTiming")
    timeout = loop_timeout(loop_timeout_duration)
    if deadline is not None and time.monotonic_ns() > deadline:
        raise MissedDeadline("the deadline passed before the execution started",
                             ErrorStatus.MISSED_DEADLINE_TRANSIENT)
    return timeout


#: the request layouts a prepared model remembers as valid (begin_execution)
VALIDATED_LAYOUTS = 64


def request_key(request) -> tuple | None:
    """What the checks of a request read of it, where its pools are all host memories: each
    pool's size (with whether it is writable, for a memory other than a HostMemory), and each
    argument's value flag, location and dimensions, as one flat tuple (the counts of pools and
    inputs, and each argument's rank, make it unambiguous: a flat tuple is made and hashed
    faster than a tuple of tuples, at every execution); None where a pool is anything else (a
    device memory: its roles and dimensions are state of its own, checked every time), or
    where the request is not made of the HAL's types."""
    try:
        pools = request.pools
        key = [len(pools), len(request.inputs)]
        for p in pools:
            if not isinstance(p, Memory):
                return None
            key.append(p.size if type(p) is HostMemory else (p.size, is_writable(p)))
        _arguments_key(key, request.inputs)
        _arguments_key(key, request.outputs)
        return tuple(key)
    except Exception:  # noqa: BLE001 (a malformed request: the checks say what is wrong)
        return None


def _arguments_key(key: list, arguments) -> None:
    """What the checks read of a request's inputs or outputs, onto ``key`` (request_key)."""
    for a in arguments:
        loc = a.location
        key += (a.has_no_value, loc.pool_index, loc.offset, loc.length, len(a.dimensions),
                *a.dimensions)


def _validated(prepared) -> set | None:
    """The request layouts ``prepared`` has seen pass the checks (None where it keeps none)."""
    try:
        return prepared.__dict__.setdefault("_validated_layouts", set())
    except AttributeError:  # (no instance dictionary)
        return None


def failed_execution(e: Exception) -> ExecutionResult:
    """An execution that raised: its HAL status and reason; anything else is a
    GENERAL_FAILURE with a sentence saying what kind of failure it was. Never crashes the
    caller."""
    if isinstance(e, HalError):
        return ExecutionResult(e.status, getattr(e, "output_shapes", []), NO_TIMING, e.reason)
    return ExecutionResult(ErrorStatus.GENERAL_FAILURE, [], NO_TIMING, unexpected_failure(e))


def unexpected_failure(e: BaseException) -> str:
    """A sentence for an exception that is not a HAL error (the common ones by kind; the
    rest are driver bugs, reported with their Python type so they can be found)."""
    detail = f"{type(e).__name__}: {e}"
    if isinstance(e, MemoryError):
        return f"the execution ran out of host memory ({detail})"
    if isinstance(e, RecursionError):
        return ("the execution nested deeper than the interpreter's recursion limit allows "
                f"({detail})")
    if type(e).__module__.split(".")[0] == "pyopencl":
        return f"the OpenCL runtime refused an operation of the execution ({detail})"
    return f"the execution failed inside the driver (a bug: {detail})"


def finished_execution(status, shapes, timing) -> ExecutionResult:
    """An execution that ran: OUTPUT_INSUFFICIENT_SIZE carries the shapes and no timing."""
    if status != ErrorStatus.NONE:
        return ExecutionResult(status, shapes, NO_TIMING,
                               "an output buffer is too small for its output")
    return ExecutionResult(status, shapes, timing)



class DriverPreparedModel(PreparedModel):
    """A PreparedModel whose asynchronous, fenced and burst executions run on its
    ``execute_synchronously`` (hal/execution.py)."""

    def execute(self, request, measure=MeasureTiming.NO, deadline=None,
                loop_timeout_duration=None, callback=None):
        """Returns ``Launched(status, callback)`` at once; ``callback.wait()`` gives the
        ExecutionResult."""
        return execute_async(self, request, measure, deadline, loop_timeout_duration, callback)

    def execute_fenced(self, request, wait_for=(), measure=MeasureTiming.NO, deadline=None,
                       loop_timeout_duration=None, timeout_after_fence=None):
        """Returns ``FencedLaunch(status, sync_fence, callback)``."""
        return execute_fenced(self, request, wait_for, measure, deadline,
                              loop_timeout_duration, timeout_after_fence)

    def configure_execution_burst(self):
        """A :class:`hal.execution.Burst` (memory pools cached by slot)."""
        return configure_burst(self)
