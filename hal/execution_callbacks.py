"""The objects an execution is waited on through: IExecutionCallback, a launch's (status,
callback), sync fences and IFencedExecutionCallback (used by hal.execution)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from hal.errors import ErrorStatus
from hal.interfaces import ExecutionResult
from hal.types import NO_TIMING, Timing


class ExecutionCallback:
    """IExecutionCallback and the object to wait on: notified once with an ExecutionResult.
    ``on_finish`` (optional) is called with the result on the notifying thread."""

    def __init__(self, on_finish=None):
        self._done = threading.Event()
        self._result: ExecutionResult | None = None
        self._on_finish = on_finish

    def notify(self, result: ExecutionResult):
        if self._done.is_set():
            return  # notified once, as the HAL callback
        self._result = result
        self._done.set()
        if self._on_finish is not None:
            self._on_finish(result)

    def is_done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> ExecutionResult | None:
        """The result, or None if ``timeout`` seconds passed first."""
        if not self._done.wait(timeout):
            return None
        return self._result

    @property
    def status(self) -> ErrorStatus:
        return self.wait().status

    @property
    def output_shapes(self):
        return self.wait().output_shapes

    @property
    def timing(self) -> Timing:
        return self.wait().timing


@dataclass
class Launched:
    """What an asynchronous execute returns: the launch status and the callback to wait on."""

    status: ErrorStatus
    callback: ExecutionCallback

    def __iter__(self):
        return iter((self.status, self.callback))

    def wait(self, timeout=None) -> ExecutionResult | None:
        return self.callback.wait(timeout)


class SyncFence:
    """A sync fence: ACTIVE until signaled once, then SIGNALED or ERROR."""

    ACTIVE, SIGNALED, ERROR = "active", "signaled", "error"

    def __init__(self):
        self._event = threading.Event()
        self._status = ErrorStatus.NONE
        self.signaled_ns: int | None = None

    @classmethod
    def signaled(cls) -> SyncFence:
        f = cls()
        f.signal()
        return f

    def signal(self, status: ErrorStatus = ErrorStatus.NONE):
        if self._event.is_set():
            return
        self._status = ErrorStatus(status)
        self.signaled_ns = time.monotonic_ns()
        self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    @property
    def state(self) -> str:
        if not self._event.is_set():
            return self.ACTIVE
        return self.SIGNALED if self._status == ErrorStatus.NONE else self.ERROR

    @property
    def status(self) -> ErrorStatus:
        return self._status


class FencedExecutionCallback:
    """IFencedExecutionCallback: get_execution_info() -> (status, timing_launched,
    timing_fenced), waiting for the execution to end."""

    def __init__(self):
        self._done = threading.Event()
        self._info = (ErrorStatus.GENERAL_FAILURE, NO_TIMING, NO_TIMING)
        self.message = ""

    def notify(self, status, launched, fenced, message=""):
        """The fenced execution ended (the device's side, as ExecutionCallback.notify)."""
        self._info = (ErrorStatus(status), launched, fenced)
        self.message = message
        self._done.set()

    def get_execution_info(self, timeout: float | None = None):
        if not self._done.wait(timeout):
            return None
        return self._info


@dataclass
class FencedLaunch:
    status: ErrorStatus
    sync_fence: SyncFence | None
    callback: FencedExecutionCallback | None
    message: str = ""

    def __iter__(self):
        return iter((self.status, self.sync_fence, self.callback))
