"""Opening devices by name: ``reference`` (the NumPy reference device) or ``opencl``."""

from __future__ import annotations

DEVICE_NAMES = ("reference", "opencl")


def open_device(name: str = "reference", **options):
    if name == "reference":
        from hal.reference import ReferenceDevice

        return ReferenceDevice()
    if name == "opencl":
        from clnn.device import ClDevice

        return ClDevice(**options)
    raise ValueError(f"unknown device {name!r}; choose one of {', '.join(DEVICE_NAMES)}")
