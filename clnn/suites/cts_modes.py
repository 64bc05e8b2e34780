"""How the conformance runner executes a request: ``clnn cts --mode``.

``sync``           IPreparedModel.execute_synchronously.
``async``          execute() (returns at once) and waiting on its callback.
``fenced``         execute_fenced() after an already signaled fence, then waiting on the
                   returned fence and reading get_execution_info(). Fenced executions return no
                   output shapes; the runner checks the values against the expected shapes.
                   In the dynamic variant the model's outputs have unknown dimensions, which a
                   fenced execution must refuse: the runner first expects INVALID_ARGUMENT for
                   the request as built, then runs the request again with the output
                   dimensions given in the request (as a client of a fenced execution must),
                   and checks the values. The too-small-buffer check of the dynamic variant is
                   not made in this mode (a fenced execution has no OUTPUT_INSUFFICIENT_SIZE).
``burst``          one burst per test-variant (configure_execution_burst); every request goes
                   through a BurstController, so each memory is sent once and then named by its
                   slot.
``device-memory``  every tensor input is copied into a device memory allocated for that input
                   (Device.allocate + copy_from), every output goes to a device memory allocated
                   for it, and is copied back with copy_to after the execution. The
                   too-small-buffer check of the dynamic variant uses host memory (a device
                   memory is sized by the device, so it is never too small).

A test-variant passes or fails by the same rules in every mode.
"""

from __future__ import annotations

from hal.errors import ErrorStatus
from hal.execution import BurstController, SyncFence
from hal.interfaces import ExecutionResult
from hal.types import (
    NO_TIMING,
    BufferDesc,
    BufferRole,
    DataLocation,
    HostMemory,
    Memory,
    Request,
    RequestArgument,
    is_scalar_type,
)

MODES = ("sync", "async", "fenced", "burst", "device-memory")
#: seconds to wait for an asynchronous or fenced execution before calling it hung
WAIT_S = 300.0


def _hung(what: str) -> ExecutionResult:
    return ExecutionResult(ErrorStatus.GENERAL_FAILURE, [], NO_TIMING,
                           f"the {what} execution did not finish within {WAIT_S:.0f} s")


class ModeRunner:
    """Executes requests on one prepared model in one mode."""

    def __init__(self, device, prepared, mode: str = "sync"):
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        self.device = device
        self.prepared = prepared
        self.mode = mode
        self._burst = None

    def execute(self, request: Request, check_size: bool = False) -> ExecutionResult:
        """``check_size``: the request is the too-small one of the dynamic variant."""
        mode = self.mode
        if mode == "async":
            r = self.prepared.execute(request).wait(WAIT_S)
            return r if r is not None else _hung("asynchronous")
        if mode == "fenced":
            launch = self.prepared.execute_fenced(request, [SyncFence.signaled()])
            if launch.status != ErrorStatus.NONE:
                return ExecutionResult(launch.status, [], NO_TIMING, launch.message)
            if not launch.sync_fence.wait(WAIT_S):
                return _hung("fenced")
            status, _, _ = launch.callback.get_execution_info()
            return ExecutionResult(status, [], NO_TIMING, launch.callback.message)
        if mode == "burst":
            if self._burst is None:
                self._burst = BurstController(self.prepared.configure_execution_burst())
            return self._burst.execute(request)
        if mode == "device-memory" and not check_size:
            return self._execute_with_device_memories(request)
        return self.prepared.execute_synchronously(request)

    def _execute_with_device_memories(self, request: Request) -> ExecutionResult:
        sg = self.prepared.model.main
        pools = list(request.pools)
        inputs, outputs, copies = [], [], []
        for k, (arg, i) in enumerate(zip(request.inputs, sg.input_indexes)):
            op = sg.operands[i]
            if arg.has_no_value or is_scalar_type(op.type):
                inputs.append(arg)
                continue
            try:
                buf = self.device.allocate(BufferDesc(), [self.prepared], [BufferRole(0, k)], [])
            except Exception as e:
                return ExecutionResult(getattr(e, "status", ErrorStatus.GENERAL_FAILURE), [],
                                       NO_TIMING, f"allocate for input {k}: {e}")
            loc = arg.location
            src = HostMemory(bytes(request.pools[loc.pool_index].view()[
                loc.offset: loc.offset + loc.length]))
            dims = tuple(arg.dimensions) or tuple(op.dimensions)
            status = buf.copy_from(src, dims)
            if status != ErrorStatus.NONE:
                return ExecutionResult(status, [], NO_TIMING, f"copy_from for input {k}")
            pools.append(buf)
            inputs.append(RequestArgument(False, DataLocation(len(pools) - 1, 0, 0),
                                          arg.dimensions))
        for k, arg in enumerate(request.outputs):
            try:
                buf = self.device.allocate(BufferDesc(), [self.prepared], [], [BufferRole(0, k)])
            except Exception as e:
                return ExecutionResult(getattr(e, "status", ErrorStatus.GENERAL_FAILURE), [],
                                       NO_TIMING, f"allocate for output {k}: {e}")
            pools.append(buf)
            copies.append((buf, arg))
            outputs.append(RequestArgument(False, DataLocation(len(pools) - 1, 0, 0),
                                           arg.dimensions))
        r = self.prepared.execute_synchronously(Request(inputs, outputs, pools))
        if r.status != ErrorStatus.NONE:
            return r
        for k, (buf, arg) in enumerate(copies):
            n = buf.nbytes(buf.value_dimensions)
            host = HostMemory(n)
            status = buf.copy_to(host)
            if status != ErrorStatus.NONE:
                return ExecutionResult(status, r.output_shapes, NO_TIMING, f"copy_to, output {k}")
            dst = request.pools[arg.location.pool_index]
            if not isinstance(dst, Memory) or n > arg.location.length:
                return ExecutionResult(ErrorStatus.GENERAL_FAILURE, r.output_shapes, NO_TIMING,
                                       f"output {k} ({n} bytes) does not fit the request")
            off = arg.location.offset
            dst.view()[off: off + n] = host.view()
        return r
