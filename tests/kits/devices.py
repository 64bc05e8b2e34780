"""Opening the devices the tests run on, skipping cleanly where one is not available."""

from __future__ import annotations

import pytest


def open_or_skip(name: str, **options):
    """``clnn.devices.open_device(name)``, or skip the test when this machine has no such
    device (no pyopencl, no OpenCL platform). The OpenCL device gets the default options (or
    ``options=``), whatever the caller's environment holds, but for the companion, off: a
    test's small model runs on the device the test opened, not on a companion
    (clnn/companion.py; ``device.with_options(companion=True)``: tests/cl/
    test_cl_companion.py)."""
    from clnn.device import apply_pocl_settings
    from clnn.devices import open_device
    from clnn.options import DeviceOptions

    apply_pocl_settings(DeviceOptions())  # (the platform as a user's process lists it)
    options["options"] = (options.get("options") or DeviceOptions()).replace(companion=False)

    try:
        return open_device(name, **options)
    except Exception as e:  # no pyopencl / no OpenCL platform on this machine
        pytest.skip(f"the {name} device is not available: {e}")
