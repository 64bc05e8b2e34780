"""The runtime seen as one HAL device: :class:`RuntimeDevice` prepares a model as a
Compilation over its devices and runs every request as an Execution. This is how the
conformance runner (``clnn cts --runtime``), ``clnn.load(..., devices=[...])``,
``clnn run --devices`` and the benchmarks drive the runtime with the HAL's requests."""

from __future__ import annotations

from clnn.nnapi.compilation import Compilation
from clnn.nnapi.devices import Device, devices_from_specs
from clnn.nnapi.errors import NnapiError, error_status
from clnn.nnapi.execution import Execution
from clnn.nnapi.model import Model
from hal.driver import DriverPreparedModel
from hal.errors import HalError
from hal.interfaces import Device as HalDevice
from hal.interfaces import ExecutionResult
from hal.types import NO_TIMING, DeviceType, ExecutionPreference, MeasureTiming, Priority


def _hal_error(e: NnapiError) -> HalError:
    return HalError(e.reason, error_status(e.code))


def runtime_devices(specs) -> list[Device]:
    """nnapi Devices for a list of names (see device_from_spec) or HAL devices; the OpenCL
    devices named share a context per platform (devices_from_specs)."""
    specs = list(specs)
    named = iter(devices_from_specs([s for s in specs if isinstance(s, str)]))
    out = []
    for s in specs:
        if isinstance(s, Device):
            out.append(s)
        elif isinstance(s, str):
            out.append(next(named))
        else:
            out.append(Device(getattr(s, "name", type(s).__name__), s))
    return out


class RuntimeDevice(HalDevice):
    """The runtime over ``devices`` (nnapi Devices, names, or HAL devices)."""

    fallback = False  # what it cannot place is BAD_DATA at prepare

    def __init__(self, devices, preference=ExecutionPreference.FAST_SINGLE_ANSWER):
        self.devices = runtime_devices(devices)
        self.preference = preference
        self.name = "nnapi runtime over " + ", ".join(d.name for d in self.devices)

    def get_capabilities(self):
        return self.devices[0].capabilities()

    def get_supported_operations(self, model) -> list[bool]:
        try:
            return Model.from_hal(model).get_supported_operations_for_devices(self.devices)
        except NnapiError as e:
            raise _hal_error(e) from None

    def compile(self, model, preference=None) -> Compilation:
        """A finished Compilation of a hal Model (NnapiError on failure)."""
        c = Compilation.create_for_devices(Model.from_hal(model), self.devices)
        c.set_preference(self.preference if preference is None else preference)
        c.finish()
        return c

    def prepare_model(self, model, preference=None, priority=Priority.MEDIUM, deadline=None,
                      model_cache=(), data_cache=(), token=None):
        try:
            return RuntimePreparedModel(self.compile(model, preference))
        except NnapiError as e:
            raise _hal_error(e) from None

    def get_type(self) -> DeviceType:
        return DeviceType.OTHER

    def get_version_string(self) -> str:
        return self.name


class RuntimePreparedModel(DriverPreparedModel):
    """A finished Compilation; each request is one Execution."""

    def __init__(self, compilation: Compilation):
        self.compilation = compilation
        self.model = compilation.model.hal_model

    def plan(self):
        return self.compilation.plan()

    def execute_synchronously(self, request, measure=MeasureTiming.NO, deadline=None,
                              loop_timeout_duration=None) -> ExecutionResult:
        e = Execution(self.compilation)
        try:
            for kind, args, set_from_memory, set_plain in (
                    ("input", request.inputs, e.set_input_from_memory, e.set_input),
                    ("output", request.outputs, e.set_output_from_memory, e.set_output)):
                for k, arg in enumerate(args):
                    if arg.has_no_value:
                        set_plain(k, None)
                        continue
                    loc = arg.location
                    if not 0 <= loc.pool_index < len(request.pools):
                        raise NnapiError(4, f"request {kind} {k} names pool {loc.pool_index} "
                                            f"of {len(request.pools)}")
                    set_from_memory(k, request.pools[loc.pool_index], loc.offset, loc.length,
                                    arg.dimensions or None)
            if loop_timeout_duration is not None:
                e.set_loop_timeout(int(loop_timeout_duration))
            if measure == MeasureTiming.YES and len(self.compilation.devices) == 1:
                e.set_measure_timing(True)
            e.compute()
        except NnapiError as err:
            r = e._result
            shapes = r.output_shapes if r is not None else []
            return ExecutionResult(error_status(err.code), shapes, NO_TIMING, err.reason)
        return e._result
