"""ANeuralNetworksDevice: the devices the runtime finds (``get_device_count`` /
``get_device``), each a HAL device behind the NDK's device queries.

The devices found are every OpenCL device of every platform (``opencl:P:D``, simulators such
as Oclgrind left out: name one to use it) and the reference device last. Any device
:func:`open_device` can name, an OpenCL sub-device (``opencl:P:D/N``: N compute units) included,
can be given to ``Compilation.create_for_devices`` through :func:`device_from_spec`.
"""

from __future__ import annotations

import threading

from clnn.nnapi.errors import NnapiError, bad_data
from hal.errors import HalError, ResultCode
from hal.types import DeviceType

#: NNAPI feature levels (ANEURALNETWORKS_FEATURE_LEVEL_*)
FEATURE_LEVEL_1, FEATURE_LEVEL_2, FEATURE_LEVEL_3, FEATURE_LEVEL_4 = 27, 28, 29, 30
FEATURE_LEVEL_5, FEATURE_LEVEL_6 = 31, 1000006
#: ANEURALNETWORKS_DEVICE_UNKNOWN (the other device types are hal.types.DeviceType's values)
DEVICE_UNKNOWN = 0

_LOCK = threading.Lock()
_FOUND: list[Device] | None = None


class Device:
    """One device: ``name`` (a spec :func:`device_from_spec` opens again) and its HAL device.
    ``capabilities``: given, they replace the device's own (its measured ones) in placement."""

    def __init__(self, name: str, hal_device, capabilities=None):
        self.name = name
        self.hal = hal_device
        self._capabilities = capabilities

    def __repr__(self) -> str:
        return f"nnapi.Device({self.name!r})"

    def get_name(self) -> str:
        """ANeuralNetworksDevice_getName."""
        return self.name

    def get_type(self) -> int:
        """ANeuralNetworksDevice_getType: ANEURALNETWORKS_DEVICE_{OTHER, CPU, GPU,
        ACCELERATOR} (hal.types.DeviceType values)."""
        return int(DeviceType(self.hal.get_type()))

    def get_version(self) -> str:
        """ANeuralNetworksDevice_getVersion."""
        return self.hal.get_version_string()

    def get_feature_level(self) -> int:
        """ANeuralNetworksDevice_getFeatureLevel: the HAL 1.3 drivers' level,
        ANEURALNETWORKS_FEATURE_LEVEL_4 (30)."""
        return FEATURE_LEVEL_4

    def wait(self):
        """ANeuralNetworksDevice_wait: the device is live once it answers a query."""
        try:
            self.hal.get_type()
        except HalError as e:
            raise NnapiError(ResultCode.UNAVAILABLE_DEVICE, f"{self.name}: {e.reason}") from None

    def capabilities(self):
        """The Capabilities placement compares (measured once and cached for OpenCL)."""
        if self._capabilities is None:
            self._capabilities = self.hal.get_capabilities()
        return self._capabilities

    def supported_operations(self, model) -> list[bool]:
        try:
            return list(self.hal.get_supported_operations(model))
        except HalError as e:
            raise NnapiError(ResultCode.BAD_DATA, f"{self.name}: {e.reason}") from None


def capabilities_of(devices) -> list:
    """The Capabilities of each device; the OpenCL devices whose figures are not cached yet
    are measured together in one interleaved run (clnn.capabilities.load_or_measure_all: the
    same reference samples, so their figures compare)."""
    todo = [d for d in devices if d._capabilities is None and
            getattr(d.hal, "cl_device", None) is not None and hasattr(d.hal, "fallback")]
    if len(todo) > 1:
        try:
            from clnn.capabilities import load_or_measure_all, to_capabilities

            for d, record in zip(todo, load_or_measure_all([d.hal for d in todo],
                                                           progress=False)):
                d._capabilities = to_capabilities(record)
        except Exception:  # each device then answers on its own (its static estimate)
            pass
    return [d.capabilities() for d in devices]


def _spec_name(spec: str) -> str:
    from clnn.devices import parse_device_spec

    kind, cl_spec = parse_device_spec(spec)
    if kind == "opencl" and cl_spec is None:
        return "opencl"
    return spec if kind == "reference" or spec.startswith("opencl:") else f"opencl:{spec}"


def devices_from_specs(specs, **cl_options) -> list[Device]:
    """Devices for several names (as :func:`device_from_spec`); the OpenCL devices of one
    platform get one cl.Context (clnn.device.open_cl_devices), so that a tensor passed between
    two of their steps stays in device memory. ``cl_options``: ClDevice's (fallback, ...)."""
    from clnn.devices import environ_spec, open_device, parse_device_spec

    specs = list(specs)
    try:
        kinds = [parse_device_spec(s) for s in specs]
    except ValueError as e:
        bad_data(str(e))
    # an entry point: the environment's device where a spec names none, and its options
    named = [environ_spec(c) for k, c in kinds if k == "opencl"]
    cl_specs, sources = [s for s, _ in named], [src for _, src in named]
    if cl_specs and cl_options.get("options") is None:
        from clnn.options import from_environ

        cl_options["options"] = from_environ()
    try:
        from clnn.device import open_cl_devices

        opened = iter(open_cl_devices(cl_specs, sources, **cl_options) if cl_specs else [])
        hal = [next(opened) if k == "opencl" else open_device(s)
               for s, (k, _) in zip(specs, kinds)]
    except HalError as e:
        raise NnapiError(ResultCode.UNAVAILABLE_DEVICE, e.reason) from None
    except ImportError as e:
        raise NnapiError(ResultCode.UNAVAILABLE_DEVICE,
                         f"OpenCL devices need pyopencl, which does not import ({e})") from None
    return [Device(_spec_name(s), h) for s, h in zip(specs, hal)]


def device_from_spec(spec: str, capabilities=None) -> Device:
    """A Device for a device name clnn.devices.open_device knows ("reference",
    "opencl", "opencl:0:1", "opencl:0:0/1" ...); UNAVAILABLE_DEVICE when it is not there."""
    from clnn.devices import open_device, parse_device_spec

    try:
        kind, cl_spec = parse_device_spec(spec)
        hal_device = open_device(spec)
    except ValueError as e:
        bad_data(str(e))
    except HalError as e:
        raise NnapiError(ResultCode.UNAVAILABLE_DEVICE, e.reason) from None
    if kind == "opencl" and cl_spec is None:
        name = "opencl"
    else:
        name = spec if kind == "reference" or spec.startswith("opencl:") else f"opencl:{spec}"
    return Device(name, hal_device, capabilities)


def _found() -> list[Device]:
    global _FOUND
    with _LOCK:
        if _FOUND is None:
            _FOUND = devices_from_specs(found_specs())
        return _FOUND


def found_specs() -> list[str]:
    """Specs of the devices found: every real OpenCL device of every platform, then the
    reference device."""
    specs = []
    try:
        from clnn.device import is_simulator, list_cl_devices

        specs = [f"opencl:{p_i}:{d_i}" for p_i, d_i, p, d in list_cl_devices()
                 if not is_simulator(p, d)]
    except Exception:  # no pyopencl / ICD: the reference device only
        specs = []
    return [*specs, "reference"]


def get_runtime_feature_level() -> int:
    """ANeuralNetworks_getRuntimeFeatureLevel: the level of the HAL 1.3 runtime,
    ANEURALNETWORKS_FEATURE_LEVEL_4 (30)."""
    return FEATURE_LEVEL_4


def get_device_count() -> int:
    """ANeuralNetworks_getDeviceCount."""
    return len(_found())


def get_device(index: int) -> Device:
    """ANeuralNetworks_getDevice."""
    devices = _found()
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(devices):
        bad_data(f"get_device: index {index!r} is out of range ({len(devices)} devices)")
    return devices[index]


def all_devices() -> list[Device]:
    return list(_found())
