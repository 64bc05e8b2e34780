"""Asynchronous, fenced and burst executions for any PreparedModel, on its synchronous path.

The HAL's ``execute_1_3`` (asynchronous), ``executeFenced`` and ``configureExecutionBurst`` are
built here once, for every device, on top of ``execute_synchronously``:

``execute_async``
    Checks what can be checked at launch (the request against the model, the timing flag, the
    loop timeout) and returns ``Launched(status, callback)`` at once; the execution runs on a
    new thread and ends with ``callback.notify(result)``. A launch error is returned *and*
    notified, as IPreparedModel::execute_1_3 does.
``execute_fenced``
    Returns ``FencedLaunch(status, sync_fence, callback)``: the execution waits for the fences
    of ``wait_for`` on a thread, runs, and signals ``sync_fence``;
    ``callback.get_execution_info()`` gives (status, timing_launched, timing_fenced). Fenced
    execution needs every output's dimensions before it starts (there is no way to return
    shapes), so a request with an output of unknown dimensions is INVALID_ARGUMENT at launch,
    and so is an output buffer smaller than its (known) size. A fence that signals an error
    fails the execution with GENERAL_FAILURE; ``timeout_after_fence`` bounds the run after the
    fences signaled (MISSED_DEADLINE_TRANSIENT past it).
``Burst``
    The server side of a burst (ExecutionBurstServer): memory pools are named by slot ids and
    kept between executions, so a client sends each memory once; ``free_memory(slot)`` drops
    one. :class:`BurstController` is the client side: it gives every memory object a slot.

Concurrency: each call runs the prepared model's ``execute_synchronously`` on its own thread,
so what is serialized is what that method serializes (the reference device runs executions of
one prepared model concurrently; the OpenCL device serializes executions of one prepared model,
which share its plan buffers, and runs different prepared models concurrently). Executions of
one burst are serialized, as a burst is one channel.
"""

from __future__ import annotations

import threading
import time

from hal.errors import ErrorStatus, HalError
from hal.execution_callbacks import (
    ExecutionCallback,
    FencedExecutionCallback,
    FencedLaunch,
    Launched,
    SyncFence,
)
from hal.interfaces import LOOP_TIMEOUT_MAXIMUM_NS, ExecutionResult
from hal.types import (
    NO_TIMING,
    NUMPY_DTYPE,
    MeasureTiming,
    Memory,
    OperandType,
    Request,
    Timing,
)

OT = OperandType


def _failure(status: ErrorStatus, message: str) -> ExecutionResult:
    return ExecutionResult(status, [], NO_TIMING, message)


# ------------------------------------------------------------------------------ launch checks

def check_launch(prepared, request: Request, measure,
                 loop_timeout_duration) -> tuple[ErrorStatus, str]:
    """What the HAL checks before an execution starts; (NONE, "") when it may start."""
    if measure not in tuple(MeasureTiming):
        return ErrorStatus.INVALID_ARGUMENT, f"measure {measure} is not a valid MeasureTiming"
    if loop_timeout_duration is not None and not (
            0 <= loop_timeout_duration <= LOOP_TIMEOUT_MAXIMUM_NS):
        return ErrorStatus.INVALID_ARGUMENT, (
            f"loop timeout {loop_timeout_duration} ns is outside [0, {LOOP_TIMEOUT_MAXIMUM_NS}]"
            " ns")
    model = getattr(prepared, "model", None)
    if model is not None:
        from hal.memory_domain import validate_execution_request

        try:
            validate_execution_request(prepared, request)
        except HalError as e:
            return e.status, e.reason
    return ErrorStatus.NONE, ""


def _run(prepared, request, measure, deadline, loop_timeout_duration) -> ExecutionResult:
    try:
        return prepared.execute_synchronously(request, measure, deadline,
                                              loop_timeout_duration)
    except HalError as e:  # execute_synchronously should not raise; never lose a callback
        return _failure(e.status, e.reason)
    except Exception as e:
        return _failure(ErrorStatus.GENERAL_FAILURE, f"{type(e).__name__}: {e}")


def _start(target, name):
    t = threading.Thread(target=target, name=name, daemon=True)
    t.start()
    return t


# ------------------------------------------------------------------------------ execute_async

def execute_async(prepared, request: Request, measure=MeasureTiming.NO, deadline=None,
                  loop_timeout_duration=None, callback=None) -> Launched:
    """IPreparedModel::execute_1_3. ``callback`` may be an ExecutionCallback or a function of
    the ExecutionResult."""
    cb = callback if isinstance(callback, ExecutionCallback) else ExecutionCallback(callback)
    status, message = check_launch(prepared, request, measure, loop_timeout_duration)
    if status != ErrorStatus.NONE:
        cb.notify(_failure(status, message))
        return Launched(status, cb)
    _start(lambda: cb.notify(_run(prepared, request, measure, deadline, loop_timeout_duration)),
           "clnn-execute")
    return Launched(ErrorStatus.NONE, cb)


# ------------------------------------------------------------------------------ fenced

def _output_dims_known(prepared, request: Request) -> tuple[ErrorStatus, str]:
    from hal.memory_domain import DeviceBuffer
    from hal.validation_request import request_dimensions

    sg = prepared.model.main
    for k, (arg, i) in enumerate(zip(request.outputs, sg.output_indexes)):
        op = sg.operands[i]
        dims = request_dimensions(f"request output {k}", op, arg.dimensions)
        pool = request.pools[arg.location.pool_index]
        if isinstance(pool, DeviceBuffer):
            dims = pool.known_dimensions(dims)
        scalar = op.type in (OT.FLOAT32, OT.INT32, OT.UINT32, OT.BOOL, OT.FLOAT16)
        if not scalar and (not dims or any(d == 0 for d in dims)):
            return ErrorStatus.INVALID_ARGUMENT, (
                f"request output {k} has unknown dimensions {list(dims)}: a fenced execution "
                "needs every output's dimensions")
        if isinstance(pool, Memory):
            n = NUMPY_DTYPE[op.type].itemsize
            for d in dims:
                n *= d
            if arg.location.length < n:
                return ErrorStatus.INVALID_ARGUMENT, (
                    f"request output {k} needs {n} bytes for dimensions {list(dims)}, its "
                    f"location has length {arg.location.length}")
    return ErrorStatus.NONE, ""


def execute_fenced(prepared, request: Request, wait_for=(), measure=MeasureTiming.NO,
                   deadline=None, loop_timeout_duration=None,
                   timeout_after_fence=None) -> FencedLaunch:
    """IPreparedModel::executeFenced."""
    t_launch = time.perf_counter_ns()
    fences = list(wait_for or ())
    for n, f in enumerate(fences):
        if not isinstance(f, SyncFence):
            return FencedLaunch(ErrorStatus.INVALID_ARGUMENT, None, None,
                                f"wait_for entry {n} is not a sync fence ({type(f).__name__})")
    if timeout_after_fence is not None and timeout_after_fence < 0:
        return FencedLaunch(ErrorStatus.INVALID_ARGUMENT, None, None,
                            f"timeout after fence {timeout_after_fence} ns is negative")
    status, message = check_launch(prepared, request, measure, loop_timeout_duration)
    if status == ErrorStatus.NONE and getattr(prepared, "model", None) is not None:
        try:
            status, message = _output_dims_known(prepared, request)
        except HalError as e:
            status, message = e.status, e.reason
    if status != ErrorStatus.NONE:
        return FencedLaunch(status, None, None, message)
    done = SyncFence()
    cb = FencedExecutionCallback()

    def work():
        for f in fences:
            f.wait()
        t_fenced = time.perf_counter_ns()
        bad = [n for n, f in enumerate(fences) if f.state == SyncFence.ERROR]
        if bad:
            cb.notify(ErrorStatus.GENERAL_FAILURE, NO_TIMING, NO_TIMING,
                       f"wait_for fence {bad[0]} signaled an error")
            done.signal(ErrorStatus.GENERAL_FAILURE)
            return
        run_deadline = deadline
        if timeout_after_fence is not None:
            after = time.monotonic_ns() + timeout_after_fence
            run_deadline = after if deadline is None else min(deadline, after)
        r = _run(prepared, request, measure, run_deadline, loop_timeout_duration)
        launched = fenced = NO_TIMING
        if r.status == ErrorStatus.NONE and measure == MeasureTiming.YES:
            t_end = time.perf_counter_ns()
            in_launch, in_fence = (t_end - t_launch) // 1000, (t_end - t_fenced) // 1000
            dev = r.timing.time_on_device
            launched = Timing(min(dev, in_launch) if dev != NO_TIMING.time_on_device else dev,
                              in_launch)
            fenced = Timing(min(dev, in_fence) if dev != NO_TIMING.time_on_device else dev,
                            in_fence)
        status = r.status
        if status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:  # not a fenced status
            status = ErrorStatus.GENERAL_FAILURE
        cb.notify(status, launched, fenced, r.message)
        done.signal(status)

    _start(work, "clnn-execute-fenced")
    return FencedLaunch(ErrorStatus.NONE, done, cb)


# ------------------------------------------------------------------------------ bursts

class Burst:
    """The server side of an execution burst: slot id -> memory pool, kept between executions.

    ``execute_synchronously(request, slots, ...)``: ``slots[k]`` names pool k of the request;
    ``request.pools[k]`` is the memory to cache in that slot (replacing what it held), or None
    to use the memory cached there (an empty slot is INVALID_ARGUMENT)."""

    def __init__(self, prepared):
        self.prepared = prepared
        self._memories: dict[int, object] = {}
        self._lock = threading.Lock()
        self._closed = False

    def cached_slots(self) -> list[int]:
        with self._lock:
            return sorted(self._memories)

    def free_memory(self, slot: int) -> ErrorStatus:
        with self._lock:
            if self._memories.pop(slot, None) is None:
                return ErrorStatus.INVALID_ARGUMENT
            return ErrorStatus.NONE

    def close(self):
        with self._lock:
            self._closed = True
            self._memories.clear()

    def execute_synchronously(self, request: Request, slots, measure=MeasureTiming.NO,
                              deadline=None, loop_timeout_duration=None) -> ExecutionResult:
        with self._lock:
            if self._closed:
                return _failure(ErrorStatus.GENERAL_FAILURE, "the burst is closed")
            slots = list(slots)
            if len(slots) != len(request.pools):
                return _failure(ErrorStatus.INVALID_ARGUMENT,
                                f"{len(slots)} slots for {len(request.pools)} pools")
            pools = []
            for k, (slot, pool) in enumerate(zip(slots, request.pools)):
                if not isinstance(slot, int) or slot < 0:
                    return _failure(ErrorStatus.INVALID_ARGUMENT,
                                    f"pool {k}: slot {slot!r} is not a slot id")
                if pool is not None:
                    self._memories[slot] = pool
                elif slot not in self._memories:
                    return _failure(ErrorStatus.INVALID_ARGUMENT,
                                    f"pool {k}: slot {slot} holds no memory")
                pools.append(self._memories[slot])
            resolved = Request(request.inputs, request.outputs, pools)
            return _run(self.prepared, resolved, measure, deadline, loop_timeout_duration)


class BurstController:
    """The client side of a burst: gives every memory object a slot, sends it once."""

    def __init__(self, burst: Burst):
        self.burst = burst
        self._slots: dict[int, tuple[int, object]] = {}  # id(memory) -> (slot, memory)
        self._next = 0
        self._lock = threading.Lock()

    def slot_of(self, memory) -> int | None:
        entry = self._slots.get(id(memory))
        return entry[0] if entry and entry[1] is memory else None

    def execute(self, request: Request, measure=MeasureTiming.NO, deadline=None,
                loop_timeout_duration=None) -> ExecutionResult:
        with self._lock:
            slots, pools = [], []
            for pool in request.pools:
                slot = self.slot_of(pool)
                if slot is None:
                    slot, self._next = self._next, self._next + 1
                    self._slots[id(pool)] = (slot, pool)
                    pools.append(pool)
                else:
                    pools.append(None)
                slots.append(slot)
        return self.burst.execute_synchronously(Request(request.inputs, request.outputs, pools),
                                                slots, measure, deadline, loop_timeout_duration)

    def free(self, memory) -> ErrorStatus:
        with self._lock:
            slot = self.slot_of(memory)
            if slot is None:
                return ErrorStatus.INVALID_ARGUMENT
            del self._slots[id(memory)]
        return self.burst.free_memory(slot)


def configure_burst(prepared) -> Burst:
    return Burst(prepared)


__all__ = ["Burst", "BurstController", "ExecutionCallback", "FencedExecutionCallback",
           "FencedLaunch", "Launched", "SyncFence", "configure_burst", "execute_async",
           "execute_fenced"]
