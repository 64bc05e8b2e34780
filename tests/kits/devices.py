"""Opening the devices the tests run on, skipping cleanly where one is not available."""

from __future__ import annotations

import pytest


def open_or_skip(name: str, **options):
    """``clnn.devices.open_device(name)``, or skip the test when this machine has no such
    device (no pyopencl, no OpenCL platform). The OpenCL device gets the default options (or
    ``options=``), whatever the caller's environment holds."""
    from clnn.devices import open_device
    from clnn.options import DeviceOptions

    options.setdefault("options", DeviceOptions())

    try:
        return open_device(name, **options)
    except Exception as e:  # no pyopencl / no OpenCL platform on this machine
        pytest.skip(f"the {name} device is not available: {e}")
