"""ANeuralNetworksExecution, ANeuralNetworksEvent and ANeuralNetworksBurst.

An execution of a finished compilation: inputs and outputs are set (from client buffers, which
are used in place, or from Memory), then it runs once: ``compute()`` (synchronous),
``start_compute()`` (an Event to wait on), ``start_compute_with_dependencies`` or
``burst_compute(burst)``. Setting anything once it has started, or running it again, is
BAD_STATE (unless ``set_reusable``, NNAPI feature level 5). The request it makes is a HAL
Request on the compilation's prepared model (one device's, or the partitioned steps')."""

from __future__ import annotations

import threading
import time

import numpy as np

from clnn.nnapi.errors import NnapiError, bad_data, bad_state, result_code
from clnn.nnapi.memory import BufferMemory
from hal.errors import ErrorStatus, ResultCode
from hal.interfaces import LOOP_TIMEOUT_DEFAULT_NS, LOOP_TIMEOUT_MAXIMUM_NS
from hal.types import (
    NUMPY_DTYPE,
    UINT64_MAX,
    DataLocation,
    MeasureTiming,
    Request,
    RequestArgument,
    element_size,
    is_scalar_type,
)
from hal.types import Memory as HalMemory

#: ANeuralNetworksExecution_getDuration's duration codes
DURATION_ON_HARDWARE, DURATION_IN_DRIVER = 0, 1
DURATION_FENCED_ON_HARDWARE, DURATION_FENCED_IN_DRIVER = 2, 3


def get_default_loop_timeout() -> int:
    """ANeuralNetworks_getDefaultLoopTimeout (ns)."""
    return LOOP_TIMEOUT_DEFAULT_NS


def get_maximum_loop_timeout() -> int:
    """ANeuralNetworks_getMaximumLoopTimeout (ns)."""
    return LOOP_TIMEOUT_MAXIMUM_NS


class Execution:
    """ANeuralNetworksExecution_create(compilation)."""

    def __init__(self, compilation):
        from clnn.nnapi.compilation import Compilation

        if not isinstance(compilation, Compilation):
            bad_data(f"an execution needs a Compilation, got {type(compilation).__name__}")
        compilation.require_finished("Execution")
        self.compilation = compilation
        sg = compilation.model.hal_model.main
        self._operands = sg.operands
        self._in_idx, self._out_idx = sg.input_indexes, sg.output_indexes
        self._inputs: list = [None] * len(self._in_idx)
        self._outputs: list = [None] * len(self._out_idx)
        self._measure = False
        self._timeout_ns: int | None = None
        self._loop_timeout_ns = LOOP_TIMEOUT_DEFAULT_NS
        self._reusable = False
        self._state = "preparation"   # -> computing -> completed
        self._result = None

    # ------------------------------------------------------------------ arguments
    def _settable(self, what: str):
        if self._state == "computing" or (self._state == "completed" and not self._reusable):
            bad_state(f"{what}: the execution has already started")

    def _argument(self, kind: str, index: int, pool, offset: int, length: int, dimensions):
        idxs = self._in_idx if kind == "input" else self._out_idx
        what = f"set_{kind} {index}"
        if isinstance(index, bool) or not isinstance(index, int) \
                or not 0 <= index < len(idxs):
            bad_data(f"{what}: the model has {len(idxs)} {kind}s")
        op = self._operands[idxs[index]]
        dims = self._dimensions(what, op, dimensions)
        if pool is None:
            return RequestArgument(True)
        full = list(dims) if dims else list(op.dimensions)
        # an output buffer too small is OUTPUT_INSUFFICIENT_SIZE when the execution runs
        if kind == "input" and (is_scalar_type(op.type) or (full and all(d > 0 for d in full))):
            needed = element_size(op.type) * int(np.prod(full, dtype=np.int64))
            if length != needed:
                bad_data(f"{what}: {length} bytes given, the {op.type.name} operand "
                         f"{full} needs {needed}")
        return (pool, RequestArgument(False, DataLocation(0, offset, length), tuple(dims)))

    @staticmethod
    def _dimensions(what, op, dimensions):
        if dimensions is None:
            return ()
        dims = tuple(int(d) for d in dimensions)
        if is_scalar_type(op.type):
            if dims:
                bad_data(f"{what}: a scalar operand has no dimensions, {list(dims)} given")
            return ()
        if op.dimensions and (len(dims) != len(op.dimensions) or any(
                a and b and a != b for a, b in zip(op.dimensions, dims))):
            bad_data(f"{what}: dimensions {list(dims)} contradict the operand's "
                     f"{list(op.dimensions)}")
        return dims

    def set_input(self, index: int, buffer, dimensions=None):
        """ANeuralNetworksExecution_setInput: ``buffer`` (a NumPy array, bytes, ...; None: an
        omitted optional input). A NumPy array gives the dimensions the operand leaves
        unspecified unless ``dimensions`` (the ANeuralNetworksOperandType) are given."""
        self._settable("set_input")
        pool, n = None, 0
        if buffer is not None:
            op = self._operand("input", index)
            if op is not None and not isinstance(buffer, (bytes, bytearray, memoryview,
                                                          np.ndarray)):
                try:  # a Python scalar or list: the operand's storage type
                    buffer = np.asarray(buffer, NUMPY_DTYPE[op.type])
                except (TypeError, ValueError) as e:
                    bad_data(f"set_input {index}: {e}")
            if isinstance(buffer, np.ndarray):
                op = self._operand("input", index)
                if op is not None and dimensions is None and not op.is_fully_specified() \
                        and not is_scalar_type(op.type):
                    dimensions = buffer.shape
                buffer = np.ascontiguousarray(buffer)
            pool = _buffer(f"set_input {index}", buffer)
            n = pool.size
        self._inputs[self._checked(index, self._inputs)] = self._argument(
            "input", index, pool, 0, n, dimensions)

    def set_input_from_memory(self, index: int, memory, offset: int, length: int,
                              dimensions=None):
        """ANeuralNetworksExecution_setInputFromMemory."""
        self._settable("set_input_from_memory")
        self._check_memory("set_input_from_memory", memory, offset, length)
        self._inputs[self._checked(index, self._inputs)] = self._argument(
            "input", index, memory, offset, length, dimensions)

    def set_output(self, index: int, buffer, dimensions=None):
        """ANeuralNetworksExecution_setOutput: ``buffer`` is written in place (a writable
        NumPy array or bytearray)."""
        self._settable("set_output")
        if buffer is None:
            bad_data(f"set_output {index}: an output cannot be omitted")
        pool = _buffer(f"set_output {index}", buffer)
        if pool.view().readonly:
            bad_data(f"set_output {index}: the buffer is read-only")
        self._outputs[self._checked(index, self._outputs)] = self._argument(
            "output", index, pool, 0, pool.size, dimensions)

    def set_output_from_memory(self, index: int, memory, offset: int, length: int,
                               dimensions=None):
        """ANeuralNetworksExecution_setOutputFromMemory."""
        self._settable("set_output_from_memory")
        self._check_memory("set_output_from_memory", memory, offset, length)
        self._outputs[self._checked(index, self._outputs)] = self._argument(
            "output", index, memory, offset, length, dimensions)

    def _operand(self, kind, index):
        idxs = self._in_idx if kind == "input" else self._out_idx
        if isinstance(index, int) and 0 <= index < len(idxs):
            return self._operands[idxs[index]]
        return None

    @staticmethod
    def _checked(index, args) -> int:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(args):
            bad_data(f"index {index!r} is out of range ({len(args)})")
        return index

    @staticmethod
    def _check_memory(what, memory, offset, length):
        if not isinstance(memory, HalMemory):
            bad_data(f"{what}: {type(memory).__name__} is not a Memory")
        if offset < 0 or length < 0 or offset + length > memory.size:
            bad_data(f"{what}: offset {offset} + length {length} exceeds the memory's "
                     f"{memory.size} bytes")

    # ------------------------------------------------------------------ settings
    def set_measure_timing(self, measure: bool):
        """ANeuralNetworksExecution_setMeasureTiming: only for a compilation created for one
        device (BAD_DATA otherwise)."""
        self._settable("set_measure_timing")
        self._one_device("set_measure_timing")
        self._measure = bool(measure)

    def set_timeout(self, duration_ns: int):
        """ANeuralNetworksExecution_setTimeout: only for a compilation created for one device;
        0 means none. A missed deadline is MISSED_DEADLINE_*."""
        self._settable("set_timeout")
        self._one_device("set_timeout")
        if not isinstance(duration_ns, int) or duration_ns < 0:
            bad_data(f"set_timeout: {duration_ns!r} is not a duration in nanoseconds")
        self._timeout_ns = duration_ns or None

    def set_loop_timeout(self, duration_ns: int):
        """ANeuralNetworksExecution_setLoopTimeout: clamped to get_maximum_loop_timeout()."""
        self._settable("set_loop_timeout")
        if not isinstance(duration_ns, int) or duration_ns < 0:
            bad_data(f"set_loop_timeout: {duration_ns!r} is not a duration in nanoseconds")
        self._loop_timeout_ns = min(duration_ns, LOOP_TIMEOUT_MAXIMUM_NS)

    def set_reusable(self, reusable: bool):
        """ANeuralNetworksExecution_setReusable (feature level 5): may compute again."""
        if self._state != "preparation":
            bad_state("set_reusable: the execution has already started")
        self._reusable = bool(reusable)

    def _one_device(self, what):
        c = self.compilation
        if not (c.explicit and len(c.devices) == 1):
            bad_data(f"{what}: the compilation must be created by create_for_devices with "
                     "exactly one device")

    # ------------------------------------------------------------------ running
    def _begin(self, what: str) -> Request:
        if self._state == "computing":
            bad_state(f"{what}: the execution is already running")
        if self._state == "completed" and not self._reusable:
            bad_state(f"{what}: the execution has already run (an execution runs once)")
        for kind, args in (("input", self._inputs), ("output", self._outputs)):
            missing = [k for k, a in enumerate(args) if a is None]
            if missing:
                bad_data(f"{what}: {kind}s {missing} are not set")
        pools, ins, outs = [], [], []
        for args, into in ((self._inputs, ins), (self._outputs, outs)):
            for a in args:
                if isinstance(a, RequestArgument):  # omitted
                    into.append(a)
                    continue
                pool, arg = a
                pools.append(pool)
                loc = DataLocation(len(pools) - 1, arg.location.offset, arg.location.length)
                into.append(RequestArgument(False, loc, arg.dimensions))
        self._state = "computing"
        self._result = None
        return Request(ins, outs, pools)

    def _run(self, request: Request, burst=None):
        measure = MeasureTiming.YES if self._measure else MeasureTiming.NO
        deadline = time.monotonic_ns() + self._timeout_ns if self._timeout_ns else None
        prepared = self.compilation.prepared
        try:
            if burst is not None:
                r = burst.controller.execute(request, measure, deadline, self._loop_timeout_ns)
                for pool in request.pools:  # a client buffer is this execution's only
                    if isinstance(pool, BufferMemory):
                        burst.controller.free(pool)
            else:
                r = prepared.execute_synchronously(request, measure, deadline,
                                                   self._loop_timeout_ns)
        finally:
            self._state = "completed"
        self._result = r
        if r.status != ErrorStatus.NONE:
            raise NnapiError(result_code(r.status), r.message or r.status.name)

    def compute(self):
        """ANeuralNetworksExecution_compute (synchronous)."""
        self._run(self._begin("compute"))

    def burst_compute(self, burst):
        """ANeuralNetworksExecution_burstCompute: ``burst`` of the same compilation."""
        if not isinstance(burst, Burst) or burst.compilation is not self.compilation:
            bad_data("burst_compute: the burst belongs to another compilation")
        if burst.controller is None:
            bad_state("burst_compute: the burst was freed")
        self._run(self._begin("burst_compute"), burst)

    def start_compute(self) -> Event:
        """ANeuralNetworksExecution_startCompute: runs in the background; wait on the Event."""
        return self.start_compute_with_dependencies([], 0)

    def start_compute_with_dependencies(self, dependencies, duration_ns: int = 0) -> Event:
        """ANeuralNetworksExecution_startComputeWithDependencies: starts once every Event in
        ``dependencies`` has signaled (a failed one fails this execution)."""
        for e in dependencies:
            if not isinstance(e, Event):
                bad_data(f"start_compute_with_dependencies: {e!r} is not an Event")
        request = self._begin("start_compute")
        event = Event()

        def work():
            try:
                for dep in dependencies:
                    dep.wait()
                self._run(request)
            except NnapiError as e:
                self._state = "completed"
                event._error = e
            except Exception as e:  # never lost: the wait raises it
                self._state = "completed"
                event._error = NnapiError(ResultCode.OP_FAILED, f"{type(e).__name__}: {e}")
            event._done.set()

        threading.Thread(target=work, name="nnapi-execution", daemon=True).start()
        return event

    # ------------------------------------------------------------------ results
    def _completed(self, what: str):
        if self._state != "completed" or self._result is None:
            bad_state(f"{what}: the execution has not completed")
        return self._result

    def get_output_operand_dimensions(self, index: int) -> tuple[int, ...]:
        """ANeuralNetworksExecution_getOutputOperandDimensions: the output's actual shape;
        OUTPUT_INSUFFICIENT_SIZE (the error carries ``dimensions``) when its buffer was too
        small."""
        r = self._completed("get_output_operand_dimensions")
        self._checked(index, self._outputs)
        if r.status not in (ErrorStatus.NONE, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE) \
                or index >= len(r.output_shapes):
            bad_state(f"get_output_operand_dimensions: the execution failed ({r.status.name})")
        shape = r.output_shapes[index]
        if not shape.is_sufficient:
            e = NnapiError(ResultCode.OUTPUT_INSUFFICIENT_SIZE,
                           f"output {index} needs dimensions {list(shape.dimensions)}: its "
                           "buffer was too small")
            e.dimensions = tuple(shape.dimensions)
            raise e
        return tuple(shape.dimensions)

    def get_output_operand_rank(self, index: int) -> int:
        """ANeuralNetworksExecution_getOutputOperandRank."""
        return len(self.get_output_operand_dimensions(index))

    def get_duration(self, duration_code: int) -> int:
        """ANeuralNetworksExecution_getDuration: nanoseconds, UINT64_MAX when not measured."""
        r = self._completed("get_duration")
        if duration_code not in (0, 1, 2, 3):
            bad_data(f"get_duration: {duration_code!r} is not a DURATION_* code")
        if not self._measure or r.status != ErrorStatus.NONE or duration_code > 1:
            return UINT64_MAX
        us = r.timing.time_on_device if duration_code == 0 else r.timing.time_in_driver
        return UINT64_MAX if us == UINT64_MAX else int(us) * 1000

    def output_array(self, index: int) -> np.ndarray:
        """A copy of output ``index`` read from its buffer, shaped by its actual dimensions
        (a Python convenience)."""
        dims = self.get_output_operand_dimensions(index)
        op = self._operands[self._out_idx[index]]
        pool, arg = self._outputs[index]
        dt = NUMPY_DTYPE[op.type]
        n = int(np.prod(dims, dtype=np.int64)) * dt.itemsize
        raw = pool.view()[arg.location.offset: arg.location.offset + n]
        a = np.frombuffer(raw, np.uint8 if dt == np.bool_ else dt).astype(dt)
        return a.reshape(dims)

    def free(self):
        """ANeuralNetworksExecution_free."""


def _buffer(what: str, buffer) -> BufferMemory:
    try:
        return BufferMemory(buffer)
    except (TypeError, ValueError) as e:
        bad_data(f"{what}: {type(buffer).__name__} is not a contiguous buffer ({e})")


class Event:
    """ANeuralNetworksEvent: signaled when its execution finishes."""

    def __init__(self):
        self._done = threading.Event()
        self._error: NnapiError | None = None

    def wait(self, timeout: float | None = None):
        """ANeuralNetworksEvent_wait: returns when the execution finished; raises its
        NnapiError when it failed."""
        if not self._done.wait(timeout):
            raise NnapiError(ResultCode.MISSED_DEADLINE_TRANSIENT,
                             f"the execution did not finish within {timeout} s")
        if self._error is not None:
            raise self._error

    def free(self):
        """ANeuralNetworksEvent_free (the execution runs on until it finishes)."""


class Burst:
    """ANeuralNetworksBurst_create(compilation): executions that reuse the driver's burst
    (memories sent once, then named by slot)."""

    def __init__(self, compilation):
        from hal.execution import BurstController

        compilation.require_finished("Burst")
        self.compilation = compilation
        self.controller = BurstController(compilation.prepared.configure_execution_burst())

    def free(self):
        """ANeuralNetworksBurst_free."""
        if self.controller is not None:
            self.controller.burst.close()
            self.controller = None
