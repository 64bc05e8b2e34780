"""ClDevice: the OpenCL device (platform/device choice, support with reasons, prepare)."""

from __future__ import annotations

import contextlib
import threading

from clnn.program_cache import POCL_SPECIALIZATION, is_pocl
from hal import __version__
from hal.errors import ErrorStatus, HalError, InvalidArgument
from hal.extensions import registered_extensions, supported_extensions
from hal.interfaces import Device
from hal.types import (
    Capabilities,
    DeviceType,
    Extension,
    Model,
    OperandPerformance,
    OperandType,
    PerformanceInfo,
    Priority,
)

# The prepared model, the kernels, the compilation cache and the capabilities are imported
# where they are used: `clnn devices` lists devices with this module and needs none of them.

#: held while a device makes its timing queue or its companion
_QUEUE_LOCK = threading.Lock()


class DeviceUnavailable(HalError):
    status = ErrorStatus.DEVICE_UNAVAILABLE


def list_cl_devices():
    """[(platform index, device index, platform, device)] of every OpenCL device found. The
    first platform query starts PoCL's workers with the settings it reads then: where no device
    was made yet, the default settings are applied first (:func:`apply_pocl_settings`; a
    command that checks its --device before making it, such as ``clnn bench``, left PoCL's
    workers unpinned: small chained models ran at one core's speed in some rounds), with the
    environment's ``companion`` option. The devices clnn added to a platform for companions
    (:data:`POCL_DEVICES`) are not listed: :func:`companion_devices`."""
    import pyopencl as cl

    if not _settings_applied:
        from clnn.options import DeviceOptions, from_environ

        try:
            apply_pocl_settings(from_environ())  # ($CLNN_COMPANION=0: no device added)
        except ValueError:
            apply_pocl_settings(DeviceOptions())
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    found = []
    for p_index, p in enumerate(platforms):
        try:
            devices = p.get_devices()
        except cl.Error:
            continue
        listed = [d for d in devices if not _is_added(p, d)] or list(devices)
        _COMPANIONS[p.int_ptr] = [d for d in devices if d not in listed]
        for d_index, d in enumerate(listed):
            found.append((p_index, d_index, p, d))
    if _added_drivers:  # (read by now: this process's children list PoCL's default devices)
        from clnn.options import defaulted_environ, drop_default_environ

        for name, value in defaulted_environ(POCL_DEVICES).items():
            drop_default_environ(name, value)
    return found


#: platform (int_ptr) -> the devices clnn added to it for companions (:data:`POCL_DEVICES`),
#: listed apart: never a device of a spec, ``clnn devices`` or the runtime
_COMPANIONS: dict = {}


def _is_added(platform, device) -> bool:
    """Whether ``device`` is one clnn added to PoCL's device list (:func:`apply_pocl_settings`;
    PoCL names a device after its driver: "basic-<processor>", from PoCL 5 on
    "cpu-minimal-<processor>"). (A platform of no other device lists it: no companion.)"""
    return bool(_added_drivers) and is_pocl(platform) and \
        device.name.strip().lower().startswith(COMPANION_NAMES)


def companion_devices(platform) -> list:
    """The devices clnn added to ``platform`` for companions (clnn/companion.py), none where
    the user set ``POCL_DEVICES`` or the platform is not PoCL."""
    key = getattr(platform, "int_ptr", None)  # (None: not an OpenCL platform, a stand-in)
    if key is not None and key not in _COMPANIONS:
        list_cl_devices()
    return list(_COMPANIONS.get(key, ()))


def is_simulator(platform, device) -> bool:
    """A device simulator such as Oclgrind (which reports itself as CPU, GPU, accelerator and
    default at once): a checking tool, never the device to pick when a real one is there."""
    both = _CPU | _GPU
    return "oclgrind" in platform.name.lower() or (int(device.type) & both) == both


# cl_device_type bits (the OpenCL headers' values): decoded here because pyopencl's
# device_type.to_string reads the bitfield as one enumeration value (PoCL's CPU shows as
# "ALL | CPU")
_DEFAULT, _CPU, _GPU, _ACCELERATOR, _CUSTOM = 1, 2, 4, 8, 16
_TYPE_NAMES = ((_CPU, "CPU"), (_GPU, "GPU"), (_ACCELERATOR, "ACCELERATOR"), (_CUSTOM, "CUSTOM"))


def device_type_name(platform, device) -> str:
    """The device's type for people: "CPU", "GPU", ..., several joined by " | ", and
    " (simulator)" after a simulator's (Oclgrind sets every flag)."""
    bits = int(device.type)
    names = [name for bit, name in _TYPE_NAMES if bits & bit]
    text = " | ".join(names) or ("DEFAULT" if bits & _DEFAULT else f"unknown ({bits:#x})")
    return f"{text} (simulator)" if is_simulator(platform, device) else text


def _pick(found, plat: str, dev: str | None):
    """The first (platform, device) whose platform is ``plat`` (index, or name/vendor/version
    substring; "" any) and device ``dev`` (index, device name substring; None the first)."""
    for p_i, d_i, p, d in found:
        if plat.isdigit():  # an index, never a substring ("0" is in "OpenCL 3.0")
            if plat != str(p_i):
                continue
        elif plat and not (plat in p.name.lower() or plat in p.vendor.lower()
                           or plat in p.version.lower()):
            continue
        if dev is None or dev == str(d_i) or (not dev.isdigit() and dev in d.name.lower()):
            return p, d
    return None


def select_device(spec: str | None = None, source: str | None = None):
    """Pick (platform, device). ``spec``: "PLATFORM:DEVICE" (each an index or a name
    substring, as pyopencl's PYOPENCL_CTX), a platform index alone ("0": its first device), a
    device name substring (else a platform name substring: its first device), any of these
    after "opencl:", or None / "opencl": the default (first GPU, else first CPU, real devices
    before simulators such as Oclgrind), whatever the environment holds (the entry points pass
    the environment's spec: clnn.options.device_spec_from_environ). A spec that matches
    nothing is DeviceUnavailable naming the spec (and ``source``, where it came from: "--device",
    "$CLNN_DEVICE") and listing every device found: never another device instead."""
    import pyopencl as cl

    if spec is not None and spec.strip().lower() in ("", "opencl"):
        spec = None
    try:
        found = list_cl_devices()
    except Exception as e:  # no ICD loader / no platform
        raise DeviceUnavailable(f"no OpenCL platform is available: {e}") from None
    if not found:
        raise DeviceUnavailable("no OpenCL device was found (is an ICD such as PoCL installed?)")
    if spec is None:
        for simulated in (False, True):
            for want in (cl.device_type.GPU, cl.device_type.CPU):
                for _, _, p, d in found:
                    if d.type & want and is_simulator(p, d) == simulated:
                        return p, d
        return found[0][2], found[0][3]
    s = spec.strip().lower()
    s = s[len("opencl:"):] if s.startswith("opencl:") else s
    if not s:
        chosen = None  # "opencl:" names nothing: an error, not the first device
    elif ":" in s:
        plat, _, dev = s.rpartition(":")
        chosen = _pick(found, plat, dev) if plat and dev else None
    elif s.isdigit():  # pyopencl's PYOPENCL_CTX=0: platform 0, its first device
        chosen = _pick(found, s, None)
    else:
        chosen = _pick(found, "", s) or _pick(found, s, None)
    if chosen:
        return chosen
    names = "; ".join(f"{p_i}:{d_i} {d.name.strip()} ({p.name.strip()})"
                      for p_i, d_i, p, d in found)
    where = f" (from {source})" if source else ""
    raise DeviceUnavailable(f"no OpenCL device matches {spec!r}{where}; found {names}")


def split_sub_device(spec: str | None) -> tuple[str | None, int | None]:
    """("P:D", N) for a sub-device spec "P:D/N" (N compute units of device P:D), else
    (spec, None)."""
    if spec is None or "/" not in spec:
        return spec, None
    base, _, units = spec.rpartition("/")
    if not units.strip().isdigit() or int(units) < 1:
        raise DeviceUnavailable(f"sub-device spec {spec!r}: after '/' comes the number of "
                                "compute units, a positive integer")
    return base, int(units)


def sub_device_counts(device) -> list[int]:
    """The compute-unit counts a sub-device of ``device`` can have (clCreateSubDevices by
    counts): 1 .. compute units - 1, or none when the device cannot be partitioned so."""
    import pyopencl as cl

    try:
        props = getattr(device, "partition_properties", None) or []
        n = int(device.max_compute_units)
    except (cl.Error, AttributeError, TypeError, ValueError):  # no partitioning reported
        return []
    if cl.device_partition_property.BY_COUNTS not in props or n < 2:
        return []
    return list(range(1, n))


def create_sub_device(device, units: int):
    """A sub-device of ``units`` compute units (clCreateSubDevices, partitioned by counts)."""
    import pyopencl as cl

    counts = sub_device_counts(device)
    if units not in counts:
        raise DeviceUnavailable(f"{device.name.strip()} cannot make a sub-device of {units} "
                                f"compute units (it can: {counts or 'none'})")
    try:
        return device.create_sub_devices([cl.device_partition_property.BY_COUNTS, units,
                                          cl.device_partition_property.BY_COUNTS_LIST_END])[0]
    except cl.Error as e:
        raise DeviceUnavailable(f"clCreateSubDevices of {units} compute units on "
                                f"{device.name.strip()} failed: {e}") from None


def resolve_cl_device(spec: str | None, source: str | None = None):
    """(platform, cl device, parent device or None, compute units or None) of an OpenCL spec
    (see :func:`select_device`, ``source`` too; "P:D/N" makes a sub-device of N compute
    units)."""
    base, units = split_sub_device(spec)
    platform, device = select_device(base, source)
    if units is None:
        return platform, device, None, None
    return platform, create_sub_device(device, units), device, units


def shares_context(a, b) -> bool:
    """Whether two OpenCL devices (ClDevices) have one cl.Context: a buffer one writes is then
    one the other's kernels read, with no copy through the host."""
    ca, cb = getattr(a, "context", None), getattr(b, "context", None)
    return ca is not None and cb is not None and ca.int_ptr == cb.int_ptr


def open_cl_devices(specs, sources=None, **options) -> list:
    """ClDevices for OpenCL ``specs`` (each as ClDevice takes it: None is the default device,
    whatever the environment holds), those of one platform sharing one cl.Context
    (sub-devices and their parent included), so that a tensor one of them writes stays in
    device memory for the others. Where the platform refuses such a context, each device gets
    its own. ``sources``: where each spec came from (for the error of one that matches
    nothing)."""
    import pyopencl as cl

    from clnn.options import DeviceOptions

    apply_pocl_settings(options.get("options") or DeviceOptions())
    sources = list(sources) if sources is not None else [None] * len(specs)
    resolved = [resolve_cl_device(s, src) for s, src in zip(specs, sources)]
    groups: dict = {}
    for platform, device, _, _ in resolved:
        groups.setdefault(platform.int_ptr, {})[device.int_ptr] = device
    contexts = {}
    for key, devices in groups.items():
        try:
            contexts[key] = cl.Context(list(devices.values())) if len(devices) > 1 else None
        except cl.Error:
            contexts[key] = None
    return [ClDevice(s, resolved=r, context=contexts[r[0].int_ptr], **options)
            for s, r in zip(specs, resolved)]


#: PoCL's worker threads pinned one per core, unless the user set it. PoCL reads it when it
#: starts them, at the first platform query, so it is applied before a device is looked for
#: (:func:`apply_pocl_settings`). Unpinned, Linux may wake a worker on the core of the one that
#: woke it, and a chain's work-group then spins on a task whose worker waits for that core
#: (clnn/chain.py; benchmarks/chain_tasks.py: the tail of a chained model's executions)
POCL_AFFINITY = "POCL_AFFINITY"


#: PoCL's device list, read at the first platform query. Unless the user set it, clnn names
#: the default CPU device ("pthread") and the "basic" one, which runs kernels in the calling
#: thread (one compute unit, a launch and finish in ~1 us against the pthread device's ~19):
#: the companion that small models run on (clnn/companion.py). PoCL lists "basic" first; clnn
#: lists it apart (:func:`companion_devices`), so the devices found, their specs and the
#: default device are those of PoCL's default list
POCL_DEVICES = "POCL_DEVICES"
#: the drivers clnn adds to :data:`POCL_DEVICES` (after PoCL's default one, "pthread"), and
#: how their devices' names begin (PoCL 5 renamed basic "cpu-minimal", keeping the old name)
COMPANION_DRIVERS = ("basic",)
COMPANION_NAMES = ("basic-", "cpu-minimal-")


#: whether :func:`apply_pocl_settings` ran in this process (PoCL reads its settings once)
_settings_applied = False
#: the drivers clnn added to PoCL's device list in this process (none: the user set it)
_added_drivers: tuple = ()


def apply_pocl_settings(options) -> None:
    """Set PoCL's affinity variable (:data:`POCL_AFFINITY`) when ``options.pocl_settings``
    holds and the user did not set it, and its device list (:data:`POCL_DEVICES`) where
    ``options.companion`` holds too. Called when a device is made or the devices are first
    listed, never at import; only the first call sets the device list (PoCL reads it at the
    first platform query)."""
    global _settings_applied, _added_drivers
    first = not _settings_applied
    _settings_applied = True
    if options.pocl_settings:
        from clnn.options import environ_value, set_default_environ

        set_default_environ(POCL_AFFINITY, "1")
        if first and options.companion and environ_value(POCL_DEVICES) is None:
            _added_drivers = COMPANION_DRIVERS
            set_default_environ(POCL_DEVICES, " ".join(("pthread",) + COMPANION_DRIVERS))


def warm_early() -> None:
    """Start warming up the compiler of the device the entry points open by default (the
    environment's: clnn.options.device_spec_from_environ) on a thread, where it is PoCL's and
    the environment leaves chains on (clnn.options.from_environ): called as a model is
    imported afresh (clnn.tflite.load: a model this cache never imported compiles its kernels
    at its prepare), so that PoCL's kernel library (0.4-0.5 s: clnn.program_cache.ProgramCache
    .warm_compiler) loads during the import, the device's opening and the planning instead of
    after them. Once per process; PoCL's settings applied first (:func:`apply_pocl_settings`:
    PoCL reads them once). The prepare's warm-up waits for it (ProgramCache._warm)."""
    from clnn.options import from_environ
    from clnn.program_cache import compiler

    if compiler.EARLY:
        return
    options = from_environ()
    if options.chains is False:
        return
    apply_pocl_settings(options)
    compiler.EARLY["thread"] = thread = threading.Thread(
        target=_warm_early, daemon=True, name="clnn-compiler-early")
    thread.start()
    import atexit

    atexit.register(thread.join)  # (not left inside PoCL's compiler as the process ends)


def _warm_early() -> None:
    """:func:`warm_early`'s thread: the device found, a context of its own warmed up."""
    from clnn.program_cache import compiler

    with contextlib.suppress(Exception):  # (the device's opening reports what is wrong)
        import pyopencl as cl

        from clnn.options import device_spec_from_environ

        spec, source = device_spec_from_environ()
        platform, device = select_device(split_sub_device(spec)[0], source)
        if not compiler.is_pocl(platform):
            return
        compiler.warm_up(cl.Context([device]))
        compiler.EARLY["device"] = compiler.identity(device)


def pocl_generic_work_groups(platform, options=None):
    """On PoCL, compile one work-group function per kernel, for every local size, unless the
    user set $POCL_WORK_GROUP_SPECIALIZATION or ``options.pocl_settings`` is off. PoCL
    otherwise compiles a kernel again for each work-group size it is launched with; a model
    launches its kernels with many sizes, so that specialisation would be most of a cold
    prepare, for a steady-state cost within the noise (the rule: cold prepare with and without
    it, clnn bench prepare; the steady state, benchmarks/models_ab.py; docs/performance.md,
    "The first result (cold start)"). PoCL reads the variable when it compiles a kernel; other
    platforms ignore it."""
    if options is not None and not options.pocl_settings:
        return
    if is_pocl(platform):
        from clnn.options import set_default_environ

        set_default_environ(POCL_SPECIALIZATION, "0")


class ClDevice(Device):
    """The OpenCL device. ``device``: see :func:`select_device` (None: the default device,
    whatever the environment holds; the entry points pass the environment's spec,
    clnn.devices.open_cl_device); ``device_source``: where ``device`` came from, for the error
    when it matches nothing; ``options``: how it prepares and runs models
    (clnn.options.DeviceOptions; None: the defaults, whatever the environment holds);
    ``fallback``: run operations the kernels do not support on the reference device inside
    the prepared model (else prepare fails naming the first one); ``profiling``: a queue
    with profiling events (``clnn demo``); ``profile``: run under the limits of a smaller
    device (a name of clnn.workgroups.PROFILES, e.g. "small-gpu"; None: ``options.profile``,
    else the device's own limits); ``nhwc``: prepare runs the operations that use the NCHW
    layout flag NHWC, on the tuned kernels (clnn/layout.py)."""

    def __init__(self, device: str | None = None, fallback: bool = True,
                 profiling: bool = False, profile: str | None = None, nhwc: bool = True, *,
                 options=None, resolved: tuple | None = None, context=None,
                 device_source: str | None = None):
        """``resolved`` (:func:`resolve_cl_device`'s answer) and ``context`` (a cl.Context
        holding that device): how :func:`open_cl_devices` gives devices of one platform one
        context; by default the device gets a context of its own."""
        import pyopencl as cl

        from clnn.options import DeviceOptions
        from clnn.workgroups import DeviceLimits, profile_named

        #: how this device prepares and runs models (clnn.options; never the environment)
        self.options = options if options is not None else DeviceOptions()
        #: the kernel tuner of this device (clnn.tuning.tuner_for makes it at the first use)
        self.tuner = None
        if resolved is None:  # (open_cl_devices applied them before resolving)
            apply_pocl_settings(self.options)
        self.platform, self.cl_device, self.parent_device, units = \
            resolved or resolve_cl_device(device, device_source)
        self.sub_device_units = units
        if profile is None:
            profile = self.options.profile
        try:
            self.limits = DeviceLimits.of(self.cl_device, profile_named(profile))
        except ValueError as e:
            raise DeviceUnavailable(str(e)) from None
        pocl_generic_work_groups(self.platform, self.options)
        self.context = context if context is not None else cl.Context([self.cl_device])
        props = cl.command_queue_properties.PROFILING_ENABLE if profiling else 0
        self.queue = cl.CommandQueue(self.context, self.cl_device, properties=props)
        from clnn.program_cache import ProgramCache

        self.programs = ProgramCache(self.context, self.cl_device, self.options)
        self.fallback = fallback
        self.nhwc = nhwc
        self.name = f"opencl ({self.cl_device.name.strip()})"
        if units is not None:
            self.name = (f"opencl ({self.cl_device.name.strip()}, sub-device of {units} of "
                         f"{self.parent_device.max_compute_units} compute units)")

    # ------------------------------------------------------------------ companion
    def has_companion(self) -> bool:
        """Whether this device may run small models on a companion (clnn/companion.py): a
        whole device (no sub-device, no profiling queue, under its own limits: no profile) of
        a platform where clnn added one (:func:`companion_devices`), not a companion
        itself."""
        import pyopencl as cl

        if self.sub_device_units is not None or self.limits.profile != "device" or \
                self.queue.properties & cl.command_queue_properties.PROFILING_ENABLE:
            return False
        found = companion_devices(self.platform)
        return bool(found) and all(d.int_ptr != self.cl_device.int_ptr for d in found)

    def companion(self) -> ClDevice | None:
        """The companion device (made at the first call; None where there is none): a
        ClDevice of its own context with this device's options (no compile helper: a helper
        process lists PoCL's default devices) and fallback."""
        with _QUEUE_LOCK:
            if getattr(self, "_companion", False) is False:
                found = companion_devices(self.platform) if self.has_companion() else []
                self._companion = ClDevice(
                    options=self.options.replace(compile_helper=False), fallback=self.fallback,
                    nhwc=self.nhwc, resolved=(self.platform, found[0], None, None)) \
                    if found else None
        return self._companion

    def with_options(self, **changes) -> ClDevice:
        """This device (the same OpenCL device, context, queue, limits and, unless the tuning
        options change, tuner) with ``changes`` to its options (tests, A/B tools:
        ``device.with_options(dwpw="off")``); its own program cache where an option the
        programs read changes."""
        import copy

        from clnn.program_cache import ProgramCache

        other = copy.copy(self)
        other.options = self.options.replace(**changes)
        other._companion = False  # (made again with these options where wanted)
        if {"tune", "tune_budget_s", "cache_dir"} & set(changes):  # a tuner of its own
            other.tuner = None
        if {"combine", "compile_helper", "dump_cl", "debug", "cache_dir"} & set(changes):
            other.programs = ProgramCache(self.context, self.cl_device, other.options)
        return other

    # ------------------------------------------------------------------ identity
    def get_type(self) -> DeviceType:
        import pyopencl as cl

        t = self.cl_device.type
        if is_simulator(self.platform, self.cl_device):
            return DeviceType.OTHER
        if t & cl.device_type.GPU:
            return DeviceType.GPU
        if t & cl.device_type.CPU:
            return DeviceType.CPU
        if t & cl.device_type.ACCELERATOR:
            return DeviceType.ACCELERATOR
        return DeviceType.OTHER

    def get_version_string(self) -> str:
        p, d = self.platform, self.cl_device
        units = getattr(self, "sub_device_units", None)
        sub = "" if units is None else \
            f"; sub-device of {units} compute units"
        return (f"clnn {__version__}; platform {p.name.strip()} ({p.version.strip()}); "
                f"device {d.name.strip()} ({d.version.strip()}); driver {d.driver_version}"
                f"{sub}")

    def get_capabilities(self) -> Capabilities:
        """Measured against the reference device once per (platform, device, driver, clnn
        version) and cached (clnn/capabilities.py); the first call measures (under a minute)."""
        try:
            from clnn.capabilities import load_or_measure, to_capabilities

            return to_capabilities(load_or_measure(self, progress=False))
        except Exception:  # never fail a capabilities query: the static estimate below
            pass
        one, never = PerformanceInfo(1.0, 1.0), PerformanceInfo()
        runs = {OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16,
                OperandType.TENSOR_QUANT8_ASYMM, OperandType.TENSOR_QUANT8_ASYMM_SIGNED,
                OperandType.TENSOR_INT32, OperandType.FLOAT32, OperandType.INT32,
                OperandType.FLOAT16, OperandType.BOOL}
        perf = [OperandPerformance(t, one if t in runs else never) for t in OperandType
                if t != OperandType.SUBGRAPH]
        return Capabilities(one, one, perf, never, never)

    # ------------------------------------------------------------------ support
    def support_report(self, model: Model, strict: bool = False
                       ) -> list[tuple[int, str, bool, str]]:
        """(operation index, name, supported, reason) for every main-subgraph operation of a
        valid model (raises InvalidArgument for an invalid one). An operation that uses an
        extension this driver does not know is unsupported; ``strict`` (prepare): the model
        is then invalid."""
        from clnn.plan import CONTROL_FLOW
        from hal.validation import kept_contexts, validate_model

        rows = []
        with kept_contexts():  # (the support checks read the contexts validation made)
            unknown = validate_model(model, unknown_extensions=not strict)
            for k, operation in enumerate(model.main.operations):
                reason = ("it uses an extension this driver does not support" if k in unknown
                          else self._unsupported_reason(model, k, operation))
                where = "its subgraphs on OpenCL" if operation.type.name in CONTROL_FLOW \
                    else "OpenCL kernels"
                rows.append((k, operation.type.name, reason is None, reason or where))
        return rows

    def _unsupported_reason(self, model, k, operation) -> str | None:
        return self.unsupported_reason_in(model, model.main, k, operation)

    def unsupported_reason_in(self, model, sg, k, operation) -> str | None:
        """Why operation ``k`` of subgraph ``sg`` has no OpenCL path (None: it has one)."""
        from clnn import control_flow
        from clnn.kernels import kernel_for
        from clnn.plan import CONTROL_FLOW
        from hal.operations import lookup
        from hal.validation import validation_context

        if operation.type.name in CONTROL_FLOW:  # its subgraphs run as OpenCL partitions
            return control_flow.support_reason(self, model, sg, operation)
        kreg = kernel_for(operation.type)
        if kreg is None:
            return f"no OpenCL kernel for {operation.type.name}"
        if lookup(operation.type).prepare is None and kreg.max_shapes is None:
            return f"{operation.type.name} has no shape inference (prepare) in the HAL"
        from clnn.kernels.registry import device_reason

        ctx = validation_context(model, sg, k)
        try:
            return kreg.support(ctx) or device_reason(kreg, ctx, self.limits)
        except Exception as e:  # a support check must never crash the driver
            return f"support check failed: {type(e).__name__}: {e}"

    def get_supported_extensions(self) -> list[Extension]:
        """The registered extensions this device runs: with fallback every one (operations
        without OpenCL kernels run on the reference executor inside the prepared model, as
        standard ones do); without, those whose every operation has OpenCL kernels."""
        from clnn.kernels import kernel_for

        names = [name for name, reg in registered_extensions().items()
                 if self.fallback or all(kernel_for(op) is not None
                                         for op in reg.operations.values())]
        return supported_extensions(names)

    def get_supported_operations(self, model: Model) -> list[bool]:
        return [ok for _, _, ok, _ in self.support_report(model)]

    # ------------------------------------------------------------------ execution surface
    def timing_queue(self):
        """A queue with profiling events (the device's own when it has them), for executions
        that measure their time on the device."""
        import pyopencl as cl

        flag = cl.command_queue_properties.PROFILING_ENABLE
        if self.queue.properties & flag:
            return self.queue
        with _QUEUE_LOCK:
            if getattr(self, "_timing_queue", None) is None:
                self._timing_queue = cl.CommandQueue(self.context, self.cl_device,
                                                     properties=flag)
        return self._timing_queue

    def get_number_of_cache_files_needed(self) -> tuple[int, int]:
        from clnn import compilation_cache

        return compilation_cache.FILES_NEEDED

    def prepare_model_from_cache(self, deadline=None, model_cache=(), data_cache=(),
                                 token=None):
        """See clnn/compilation_cache.py: GENERAL_FAILURE for a cache that fails its checks."""
        from clnn import compilation_cache as cache
        from hal.driver import check_prepare_args

        check_prepare_args(Priority.MEDIUM, deadline)
        try:
            return cache.restore(self, model_cache, data_cache, token)
        except HalError as e:  # a model prepared on the companion: its cache names that device
            other = self.companion()
            if other is None:
                raise
            try:
                return cache.restore(other, model_cache, data_cache, token)
            except HalError:
                raise e from None

    def allocate(self, descriptor, prepared_models, input_roles, output_roles):
        """A device memory in an OpenCL buffer (clnn/memory.py)."""
        from clnn.memory import ClBuffer
        from clnn.prepared_model import ClPreparedModel
        from hal.memory_domain import allocate_host_buffer

        other = getattr(self, "_companion", None)
        on_other = other not in (None, False) and bool(prepared_models) and all(
            getattr(pm, "device", None) is other for pm in prepared_models)
        owner = other if on_other else self  # (a companion's models: memory of its context)
        return allocate_host_buffer(
            owner, descriptor, prepared_models, input_roles, output_roles,
            owns=lambda pm: isinstance(pm, ClPreparedModel) and pm.device is owner,
            factory=ClBuffer)

    # ------------------------------------------------------------------ prepare
    def _layout_pass(self, model, supported):
        """(model, support list, the clnn.layout.Rewrite or None): the model with its NCHW
        operations run NHWC (clnn/layout.py), where that leaves no more operations to the
        fallback than the model had."""
        if not self.nhwc:
            return model, supported, None
        from clnn.layout import rewrite

        done = rewrite(model)
        if done is None:
            return model, supported, None
        ok = [row[2] for row in self.support_report(done.model, strict=True)]
        if ok.count(False) > supported.count(False):
            return model, supported, None
        return done.model, ok, done

    def prepare_model(self, model, preference=None, priority=Priority.MEDIUM, deadline=None,
                      model_cache=(), data_cache=(), token=None):
        from hal.driver import check_prepare_args

        check_prepare_args(priority, deadline, preference)
        from clnn import companion

        target = companion.choose(self, model)
        if target is not self:  # (a small model: on the low-latency companion)
            return target.prepare_model(model, preference, priority, deadline, model_cache,
                                        data_cache, token)
        marker = self._compile_ahead(model)  # (first: before the modules a prepare imports)
        from clnn import compilation_cache as cache
        from clnn.prepared_model import ClPreparedModel

        save = cache.requested(self, model_cache, data_cache, token)
        rows = self.support_report(model, strict=True)
        from clnn.kernels.registry import TooLargeReason
        from clnn.plan import TooLarge

        for k, name, _, reason in rows:
            if isinstance(reason, TooLargeReason):
                raise TooLarge(f"{name} (operation {k}): {reason}")
        if not self.fallback:
            for k, name, ok, reason in rows:
                if not ok:
                    raise InvalidArgument(f"{name} (operation {k}) is not supported on "
                                          f"{self.name} and fallback is off: {reason}")
        supported = [ok for _, _, ok, _ in rows]
        model, supported, layout = self._layout_pass(model, supported)
        if save:
            prepared = cache.prepare_and_save(self, model, supported, model_cache, data_cache,
                                              token, marker)
        else:
            prepared = ClPreparedModel(self, model, supported, marker=marker)
        prepared.layout = layout
        return prepared

    def _compile_ahead(self, model):
        """Where this device's prepares build chains (clnn.chain.enabled), the marker of the
        model as given (clnn.program_cache.model_marker), and the compile work started on it
        before the checks, the layout pass and the planning: a model prepared here before has
        its programs built from their binaries (ProgramCache.prefetch), another the compiler
        warmed up (ProgramCache.warm_compiler: PoCL's kernel library loads on a thread,
        0.3-0.4 s, which the prepare would otherwise wait for before its first program).
        None elsewhere (clnn.prepared_model decides after partitioning)."""
        from clnn import chain, program_cache

        if not chain.enabled(self.cl_device, self.options):
            return None
        marker = program_cache.model_marker(self, model)
        if marker.exists():
            self.programs.prefetch(program_cache.kept_binary_list(marker))
        else:
            self.programs.warm_compiler()
        return marker
