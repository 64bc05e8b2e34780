"""The CPU reference device: every operation in NumPy, the ground truth for other devices."""

from __future__ import annotations

import time

import numpy as np

from hal import __version__
from hal import compilation_cache as cache
from hal.driver import (
    DriverPreparedModel,
    begin_execution,
    check_prepare_args,
    failed_execution,
    finished_execution,
    read_inputs,
    write_outputs,
)
from hal.errors import GeneralFailure, HalError
from hal.extensions import supported_extensions
from hal.interfaces import Device, ExecutionResult, PreparedModel
from hal.memory_domain import allocate_host_buffer
from hal.reference.executor import Executor
from hal.types import (
    NO_TIMING,
    Capabilities,
    DeviceType,
    Extension,
    MeasureTiming,
    Model,
    OperandLifeTime,
    OperandPerformance,
    OperandType,
    PerformanceInfo,
    Priority,
    Timing,
)
from hal.validation import validate_model


class ReferencePreparedModel(DriverPreparedModel):
    def __init__(self, model: Model):
        self.model = model
        self.executor = Executor(model)

    def _execution_executor(self) -> Executor:
        """An Executor per execution (deadline and loop state belong to one execution) that
        shares the constants read once: executions of one prepared model run concurrently."""
        ex = Executor(self.model, constants=self.executor.shared_constants)
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

    def get_supported_extensions(self) -> list[Extension]:
        """Every registered extension: each operation has a reference implementation."""
        return supported_extensions()

    def get_supported_operations(self, model: Model) -> list[bool]:
        unknown = validate_model(model, unknown_extensions=True)
        return [k not in unknown for k in range(len(model.main.operations))]

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
                           [cache.dumps(("reference", model))], [])
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
