"""Device fixtures every test folder shares.

- ``cl_device``: the OpenCL device without fallback (an operation it cannot run is rejected,
  so a passing test shows the OpenCL kernels ran); skips where there is no OpenCL device.
- ``reference``: the NumPy reference device.
- ``device``: each of the two, for duties every device holds (execution paths, caches,
  memory domains, real models); the OpenCL one skips where it is absent.
"""

from __future__ import annotations

import pytest

from tests.kits.devices import open_or_skip


@pytest.fixture(scope="module")
def cl_device():
    return open_or_skip("opencl", fallback=False)


@pytest.fixture(scope="module")
def reference():
    return open_or_skip("reference")


@pytest.fixture(scope="module", params=["reference", "opencl"])
def device(request):
    return open_or_skip(request.param)
