"""``vxdev``: the reference device and the OpenCL device without fallback (an operation without
a kernel is refused, so a passing OpenCL test ran the OpenCL kernels)."""

from __future__ import annotations

import pytest

from tests.kits.devices import open_or_skip


@pytest.fixture(scope="module", params=["reference", "opencl"])
def vxdev(request):
    if request.param == "opencl":
        return open_or_skip("opencl", fallback=False)
    return open_or_skip("reference")
