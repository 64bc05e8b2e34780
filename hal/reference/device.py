"""The CPU reference device: every operation in NumPy, the ground truth for other devices."""

from __future__ import annotations

import time

import numpy as np

from hal import __version__
from hal import compilation_cache as cache
from hal.errors import ErrorStatus, GeneralFailure, HalError, InvalidArgument, MissedDeadline
from hal.interfaces import (
    LOOP_TIMEOUT_DEFAULT_NS,
    LOOP_TIMEOUT_MAXIMUM_NS,
    Device,
    ExecutionResult,
    PreparedModel,
)
from hal.memory_domain import DeviceBuffer, allocate_host_buffer, validate_execution_request
from hal.reference.executor import Executor, shapes_compatible
from hal.types import (
    NO_TIMING,
    Capabilities,
    DeviceType,
    ExecutionPreference,
    MeasureTiming,
    Model,
    OperandLifeTime,
    OperandPerformance,
    OperandType,
    OutputShape,
    PerformanceInfo,
    Priority,
    Request,
    Timing,
)
from hal.validation import request_dimensions, validate_model
from hal.values import array_from_bytes, array_to_bytes, pool_view


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


def read_inputs(model: Model, request: Request) -> list[np.ndarray | None]:
    """Input arrays of a (validated) request; None for omitted inputs."""
    arrays = []
    sg = model.main
    for k, (arg, i) in enumerate(zip(request.inputs, sg.input_indexes)):
        if arg.has_no_value:
            arrays.append(None)
            continue
        op = sg.operands[i]
        dims = request_dimensions(f"request input {k}", op, arg.dimensions)
        pool = request.pools[arg.location.pool_index]
        if isinstance(pool, DeviceBuffer):  # a device memory (memory domains)
            arrays.append(pool.read(f"request input {k}", dims))
            continue
        view = pool_view(request.pools, arg.location.pool_index, f"request input {k}")
        loc = arg.location
        arrays.append(array_from_bytes(view[loc.offset: loc.offset + loc.length], op.type,
                                       dims).copy())
    return arrays


def write_outputs(model: Model, request: Request, outputs: list[np.ndarray]):
    """Check sizes, then write. Returns (status, output shapes)."""
    shapes = []
    sufficient = True
    sg = model.main
    for k, (arg, i, arr) in enumerate(zip(request.outputs, sg.output_indexes, outputs)):
        op = sg.operands[i]
        request_dimensions(f"request output {k}", op, arg.dimensions)
        if arg.dimensions and not shapes_compatible(arg.dimensions, arr.shape):
            raise GeneralFailure(f"output {k} has shape {list(arr.shape)}, the request "
                                 f"declared {list(arg.dimensions)}")
        pool = request.pools[arg.location.pool_index]
        if isinstance(pool, DeviceBuffer):  # sized by the device: always sufficient
            pool.check_fits(f"output {k}", arr.shape)
            shapes.append(OutputShape(tuple(int(d) for d in arr.shape), True))
            continue
        data = array_to_bytes(arr)
        ok = len(data) <= arg.location.length
        sufficient &= ok
        shapes.append(OutputShape(tuple(int(d) for d in arr.shape), ok))
    if not sufficient:
        return ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, shapes
    for arg, arr in zip(request.outputs, outputs):
        pool = request.pools[arg.location.pool_index]
        if isinstance(pool, DeviceBuffer):
            pool.write(arr)
            continue
        data = array_to_bytes(arr)
        view = pool_view(request.pools, arg.location.pool_index, "request output")
        view[arg.location.offset: arg.location.offset + len(data)] = data
    return ErrorStatus.NONE, shapes


def loop_timeout(duration_ns):
    if duration_ns is None:
        return LOOP_TIMEOUT_DEFAULT_NS
    if duration_ns < 0 or duration_ns > LOOP_TIMEOUT_MAXIMUM_NS:
        raise InvalidArgument(f"loop timeout {duration_ns} ns is outside [0, "
                              f"{LOOP_TIMEOUT_MAXIMUM_NS}] ns")
    return duration_ns


def begin_execution(prepared, request, measure, deadline, loop_timeout_duration) -> int:
    """The checks every execution makes before it runs, on every device: the request against
    the model (and device memories), the MeasureTiming value, the loop timeout (returned, in
    ns) and a deadline that has already passed."""
    validate_execution_request(prepared, request)
    if measure not in tuple(MeasureTiming):
        raise InvalidArgument(f"measure {measure} is not a valid MeasureTiming")
    timeout = loop_timeout(loop_timeout_duration)
    if deadline is not None and time.monotonic_ns() > deadline:
        raise MissedDeadline("the deadline passed before the execution started",
                             ErrorStatus.MISSED_DEADLINE_TRANSIENT)
    return timeout


def failed_execution(e: Exception) -> ExecutionResult:
    """An execution that raised: its HAL status and reason; anything else (a bug) is a
    GENERAL_FAILURE. Never crashes the caller."""
    if isinstance(e, HalError):
        return ExecutionResult(e.status, getattr(e, "output_shapes", []), NO_TIMING, e.reason)
    return ExecutionResult(ErrorStatus.GENERAL_FAILURE, [], NO_TIMING,
                           f"{type(e).__name__}: {e}")


def finished_execution(status, shapes, timing) -> ExecutionResult:
    """An execution that ran: OUTPUT_INSUFFICIENT_SIZE carries the shapes and no timing."""
    if status != ErrorStatus.NONE:
        return ExecutionResult(status, shapes, NO_TIMING,
                               "an output buffer is too small for its output")
    return ExecutionResult(status, shapes, timing)


class ReferencePreparedModel(PreparedModel):
    def __init__(self, model: Model):
        self.model = model
        self.executor = Executor(model)

    def _execution_executor(self) -> Executor:
        """An Executor per execution (deadline and loop state belong to one execution) that
        shares the constants read once: executions of one prepared model run concurrently."""
        ex = Executor(self.model)
        ex._constants = self.executor._constants
        ex.rng = self.executor.rng
        return ex

    def execute_synchronously(self, request, measure=MeasureTiming.NO, deadline=None,
                              loop_timeout_duration=None) -> ExecutionResult:
        t0 = time.perf_counter_ns()
        try:
            timeout = begin_execution(self, request, measure, deadline, loop_timeout_duration)
            inputs = read_inputs(self.model, request)
            ex = self._execution_executor()
            ex.deadline_ns = deadline
            ex.loop_timeout_ns = timeout
            t1 = time.perf_counter_ns()
            with np.errstate(all="ignore"):
                outputs = ex.run_subgraph(None, inputs)
            t2 = time.perf_counter_ns()
            status, shapes = write_outputs(self.model, request, outputs)
        except Exception as e:  # never crash the caller
            return failed_execution(e)
        timing = NO_TIMING
        if measure == MeasureTiming.YES:
            timing = Timing((t2 - t1) // 1000, (time.perf_counter_ns() - t0) // 1000)
        return finished_execution(status, shapes, timing)


_ALL_TYPES = [t for t in OperandType if t != OperandType.SUBGRAPH]


class ReferenceDevice(Device):
    """NumPy reference device. Its performance numbers are 1.0 by definition: other devices'
    capabilities are ratios of their time to this device's time on the same workload."""

    name = "reference"

    def get_capabilities(self) -> Capabilities:
        one = PerformanceInfo(1.0, 1.0)
        return Capabilities(one, one, [OperandPerformance(t, one) for t in _ALL_TYPES], one, one)

    def get_supported_operations(self, model: Model) -> list[bool]:
        validate_model(model)
        return [True] * len(model.main.operations)

    def prepare_model(self, model, preference=None, priority=Priority.MEDIUM, deadline=None,
                      model_cache=(), data_cache=(), token=None) -> PreparedModel:
        check_prepare_args(priority, deadline, preference)
        save = cache.cache_requested(self.get_number_of_cache_files_needed(), model_cache,
                                     data_cache, token)
        validate_model(model)
        prepared = ReferencePreparedModel(model)
        if save:  # the cache holds the validated model: a restore skips nothing else
            try:
                cache.save(model_cache, data_cache, token,
                           [cache.dumps(("reference", cache.portable_model(model)))], [])
            except OSError:  # the HAL lets a driver fail to save silently
                pass
        return prepared

    def prepare_model_from_cache(self, deadline=None, model_cache=(), data_cache=(),
                                 token=None) -> PreparedModel:
        check_prepare_args(Priority.MEDIUM, deadline)
        (payload,), _ = cache.load(model_cache, data_cache, token,
                                   self.get_number_of_cache_files_needed())
        entry = cache.loads(payload)
        if not (isinstance(entry, tuple) and len(entry) == 2 and entry[0] == "reference"
                and isinstance(entry[1], Model)):
            raise GeneralFailure("the model cache does not hold a reference-device model")
        try:
            validate_model(entry[1])
        except HalError as e:
            raise GeneralFailure(f"the cached model is not valid: {e.reason}") from None
        return ReferencePreparedModel(entry[1])

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        return 1, 0

    def allocate(self, descriptor, prepared_models, input_roles, output_roles):
        """A device memory in host memory (see hal.memory_domain)."""
        return allocate_host_buffer(self, descriptor, prepared_models, input_roles,
                                    output_roles,
                                    owns=lambda pm: isinstance(pm, ReferencePreparedModel))

    def get_type(self) -> DeviceType:
        return DeviceType.CPU

    def get_version_string(self) -> str:
        return f"clnn-reference {__version__} (NumPy {np.__version__})"


__all__ = ["ReferenceDevice", "ReferencePreparedModel", "OperandLifeTime"]
