"""Device, PreparedModel, Burst and Buffer: the shape of IDevice / IPreparedModel of NN HAL 1.3."""

from __future__ import annotations

import abc
from dataclasses import dataclass

from hal.errors import ErrorStatus, GeneralFailure
from hal.types import (
    Capabilities,
    DeviceType,
    ExecutionPreference,
    Extension,
    MeasureTiming,
    Model,
    OutputShape,
    Priority,
    Request,
    Timing,
)

#: default and maximum loop timeouts of the HAL, in nanoseconds
LOOP_TIMEOUT_DEFAULT_NS = 2_000_000_000
LOOP_TIMEOUT_MAXIMUM_NS = 15_000_000_000


@dataclass
class ExecutionResult:
    status: ErrorStatus
    output_shapes: list[OutputShape]
    timing: Timing
    message: str = ""

    def __iter__(self):  # status, output_shapes, timing = prepared.execute_synchronously(...)
        return iter((self.status, self.output_shapes, self.timing))


class Buffer(abc.ABC):
    """A device memory (IBuffer): copy_to(memory) / copy_from(memory, dimensions)."""

    @abc.abstractmethod
    def copy_to(self, dst) -> ErrorStatus: ...

    @abc.abstractmethod
    def copy_from(self, src, dimensions=()) -> ErrorStatus: ...


class PreparedModel(abc.ABC):
    @abc.abstractmethod
    def execute_synchronously(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                              deadline: int | None = None,
                              loop_timeout_duration: int | None = None) -> ExecutionResult:
        """Run the request. ``deadline`` is a time.monotonic_ns() value; durations are ns."""

    @abc.abstractmethod
    def execute(self, request: Request, measure: MeasureTiming = MeasureTiming.NO,
                deadline: int | None = None, loop_timeout_duration: int | None = None,
                callback=None):
        """Asynchronous: returns ``Launched(status, callback)`` at once; ``callback.wait()``
        gives the ExecutionResult."""

    @abc.abstractmethod
    def execute_fenced(self, request: Request, wait_for=(), measure=MeasureTiming.NO,
                       deadline=None, loop_timeout_duration=None, timeout_after_fence=None):
        """Returns ``FencedLaunch(status, sync_fence, callback)``."""

    @abc.abstractmethod
    def configure_execution_burst(self):
        """A burst: executions with memory pools cached by slot."""


class Device(abc.ABC):
    name: str = "device"

    @abc.abstractmethod
    def get_capabilities(self) -> Capabilities: ...

    @abc.abstractmethod
    def get_supported_operations(self, model: Model) -> list[bool]: ...

    @abc.abstractmethod
    def prepare_model(self, model: Model,
                      preference: ExecutionPreference = ExecutionPreference.FAST_SINGLE_ANSWER,
                      priority: Priority = Priority.MEDIUM, deadline: int | None = None,
                      model_cache=(), data_cache=(), token: bytes | None = None
                      ) -> PreparedModel:
        """Validate and prepare; raises hal.errors.HalError with the status and a reason."""

    def prepare_model_from_cache(self, deadline=None, model_cache=(), data_cache=(),
                                 token=None) -> PreparedModel:
        raise GeneralFailure(f"{self.name}: compilation caching is not supported")

    def allocate(self, descriptor, prepared_models, input_roles, output_roles) -> Buffer:
        raise GeneralFailure(f"{self.name}: device memories are not implemented yet")

    @abc.abstractmethod
    def get_type(self) -> DeviceType: ...

    @abc.abstractmethod
    def get_version_string(self) -> str: ...

    def get_supported_extensions(self) -> list[Extension]:
        return []

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        return 0, 0
