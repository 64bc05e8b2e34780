"""ANeuralNetworksCompilation: a finished model compiled for devices.

``Compilation(model)`` (ANeuralNetworksCompilation_create) compiles for every device found (the
reference device last); ``Compilation.create_for_devices(model, devices)`` for those given.
With one device the whole model is prepared on it; with several, :mod:`clnn.nnapi.partition`
places each operation by the devices' capabilities and each step of the plan is prepared on
its device (:mod:`clnn.nnapi.steps`). ``plan()`` says where every operation goes and why.
"""

from __future__ import annotations

import hashlib
import time

from clnn.nnapi import devices as _devices
from clnn.nnapi.errors import NnapiError, bad_data, bad_state, from_exception
from clnn.nnapi.partition import Plan, Step, place
from clnn.nnapi.steps import PartitionedPreparedModel, step_models
from hal.errors import HalError, ResultCode
from hal.types import BYTE_SIZE_OF_CACHE_TOKEN, ExecutionPreference, Priority

PREFER_LOW_POWER = 0
PREFER_FAST_SINGLE_ANSWER = 1
PREFER_SUSTAINED_SPEED = 2
#: ANEURALNETWORKS_PRIORITY_* (the NDK's values, not the HAL's)
PRIORITY_LOW, PRIORITY_MEDIUM, PRIORITY_HIGH = 90, 100, 110
PRIORITY_DEFAULT = PRIORITY_MEDIUM
_PRIORITY = {PRIORITY_LOW: Priority.LOW, PRIORITY_MEDIUM: Priority.MEDIUM,
             PRIORITY_HIGH: Priority.HIGH}


class Compilation:
    """ANeuralNetworksCompilation_create(model): every device found."""

    def __init__(self, model, devices=None, explicit: bool = False):
        from clnn.nnapi.model import Model

        if not isinstance(model, Model):
            bad_data(f"a compilation needs an nnapi Model, got {type(model).__name__}")
        if not model.finished:
            bad_state("the model is not finished (Model.finish before a compilation)")
        self.model = model
        self.devices = list(devices) if devices is not None else _devices.all_devices()
        self.explicit = explicit  # createForDevices: timing and deadlines allowed for one
        self.preference = ExecutionPreference.FAST_SINGLE_ANSWER
        self.priority = Priority.MEDIUM
        self.timeout_ns: int | None = None
        self.cache: tuple[str, bytes] | None = None
        self.prepared = None
        self._plan: Plan | None = None
        self.finished = False

    @classmethod
    def create_for_devices(cls, model, devices) -> Compilation:
        """ANeuralNetworksCompilation_createForDevices."""
        devices = list(devices or ())
        if not devices:
            bad_data("create_for_devices: no devices given")
        for d in devices:
            if not isinstance(d, _devices.Device):
                bad_data(f"create_for_devices: {d!r} is not an nnapi Device")
        if len({id(d) for d in devices}) != len(devices):
            bad_data("create_for_devices: a device is listed twice")
        return cls(model, devices, explicit=True)

    def _unfinished(self, what: str):
        if self.finished:
            bad_state(f"{what}: the compilation is already finished")

    def set_preference(self, preference: int):
        """ANeuralNetworksCompilation_setPreference (PREFER_*)."""
        self._unfinished("set_preference")
        try:
            self.preference = ExecutionPreference(preference)
        except ValueError:
            bad_data(f"set_preference: {preference!r} is not a PREFER_* value")
        self._plan = None  # a plan asked for before is placed again

    def set_priority(self, priority: int):
        """ANeuralNetworksCompilation_setPriority (PRIORITY_LOW / MEDIUM / HIGH: 90/100/110)."""
        self._unfinished("set_priority")
        if priority not in _PRIORITY:
            bad_data(f"set_priority: {priority!r} is not a PRIORITY_* value (90, 100, 110)")
        self.priority = _PRIORITY[priority]

    def set_timeout(self, duration_ns: int):
        """ANeuralNetworksCompilation_setTimeout: only for a compilation created for one
        device (BAD_DATA otherwise, as in the NDK); 0 means no timeout."""
        self._unfinished("set_timeout")
        if not (self.explicit and len(self.devices) == 1):
            bad_data("set_timeout: the compilation must be created by create_for_devices with "
                     "exactly one device")
        if not isinstance(duration_ns, int) or duration_ns < 0:
            bad_data(f"set_timeout: {duration_ns!r} is not a duration in nanoseconds")
        self.timeout_ns = duration_ns or None

    def set_caching(self, cache_dir: str, token: bytes):
        """ANeuralNetworksCompilation_setCaching: the drivers' cache files go in ``cache_dir``,
        named by the 32-byte ``token``."""
        self._unfinished("set_caching")
        if not isinstance(token, (bytes, bytearray)) or len(token) != BYTE_SIZE_OF_CACHE_TOKEN:
            bad_data(f"set_caching: the token must be {BYTE_SIZE_OF_CACHE_TOKEN} bytes")
        self.cache = (str(cache_dir), bytes(token))

    # ------------------------------------------------------------------ placement
    def plan(self) -> Plan:
        """Where each operation runs and why: the device chosen and the capability figures
        compared (:class:`clnn.nnapi.partition.Plan`; ``print(plan)`` for a table)."""
        if self._plan is None:
            self._plan = self._place()
        return self._plan

    def _place(self) -> Plan:
        model = self.model.hal_model
        names = [d.name for d in self.devices]
        if len(self.devices) == 1:
            supported = [self.devices[0].supported_operations(model)]
            if not all(supported[0]) and not getattr(self.devices[0].hal, "fallback", False):
                k = supported[0].index(False)
                bad_data(f"{model.main.operations[k].type.name} (operation {k}) is not "
                         f"supported by {names[0]}")
            # one device runs the whole model (its own fallback included)
            one = [[True] * len(model.main.operations)]
            caps = [_devices.Device("-", None, _neutral()).capabilities()]
            return place(model, names, one, caps, self.preference)
        supported = [d.supported_operations(model) for d in self.devices]
        self._supported = supported
        caps = _devices.capabilities_of(self.devices)
        plan = place(model, names, supported, caps, self.preference)
        plan.contexts = [_context_id(d.hal) for d in self.devices]
        return plan

    # ------------------------------------------------------------------ finish
    def finish(self):
        """ANeuralNetworksCompilation_finish: place, then prepare every step on its device.
        BAD_STATE when called twice; BAD_DATA when an operation has no device."""
        self._unfinished("finish")
        deadline = time.monotonic_ns() + self.timeout_ns if self.timeout_ns else None
        plan = self.plan()
        model = self.model.hal_model
        try:
            if len(plan.steps) == 1:
                self.prepared = self._prepare(plan.steps[0], model, 0, deadline)
            else:
                steps = step_models(model, plan.steps)
                for s, step in enumerate(steps):
                    step.prepared = self._prepare(plan.steps[s], step.model, s, deadline)
                self.prepared = PartitionedPreparedModel(model, steps, self._whole(model))
        except HalError as e:
            raise from_exception(e, "finish") from None
        self.finished = True

    def _whole(self, model):
        """A callable preparing the whole model on the last device that supports every
        operation (the reference device, where it is in the compilation), or None."""
        whole = [d for d, sup in zip(self.devices, self._supported) if all(sup)]
        if not whole:
            return None
        device = whole[-1].hal
        return lambda: device.prepare_model(model, self.preference, self.priority)

    def _prepare(self, step: Step, model, s: int, deadline):
        device = self.devices[step.device].hal
        if self.cache is None:
            return device.prepare_model(model, self.preference, self.priority, deadline)
        from clnn.prepare_cached import prepare_cached

        directory, token = self.cache
        key = token if len(self.plan().steps) == 1 else hashlib.sha256(
            token + f"{s}:{self.devices[step.device].name}".encode()).digest()
        return prepare_cached(device, model, key, directory)[0]

    def require_finished(self, what: str):
        if not self.finished:
            bad_state(f"{what}: the compilation is not finished (Compilation.finish)")

    def free(self):
        """ANeuralNetworksCompilation_free."""
        self.prepared = None


def _context_id(hal_device):
    """The OpenCL context of a clnn OpenCL device (an id), else None."""
    ctx = getattr(hal_device, "context", None)
    return getattr(ctx, "int_ptr", None) if getattr(hal_device, "cl_device", None) else None


def _neutral():
    from hal.types import Capabilities, OperandPerformance, OperandType, PerformanceInfo

    one = PerformanceInfo(1.0, 1.0)
    return Capabilities(one, one, [OperandPerformance(t, one) for t in OperandType], one, one)


__all__ = ["Compilation", "NnapiError", "ResultCode"]
