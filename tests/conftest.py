"""Device fixtures every test folder shares.

- ``cl_device``: the OpenCL device without fallback (an operation it cannot run is rejected,
  so a passing test shows the OpenCL kernels ran); skips where there is no OpenCL device.
- ``reference``: the NumPy reference device.
- ``device``: each of the two, for duties every device holds (execution paths, caches,
  memory domains, real models); the OpenCL one skips where it is absent.

The session runs without the caller's device settings: every ``CLNN_*`` variable (except the
two that say where things are: :data:`KEPT`), ``PYOPENCL_CTX`` and the ``OPENBLAS_*``
variables are removed from the environment before any test module is imported, and the
processes the tests start inherit that. Tests steer the device with ``DeviceOptions``.

Markers: ``slow`` (the long suites whole: ``make test-full``; ``make test`` leaves them out
through pyproject.toml's ``-m "not slow"``).
"""

from __future__ import annotations

import os

import pytest

#: CLNN_* variables that locate data (the conformance corpus, the cache root), not behaviour
KEPT = ("CLNN_CTS_CORPUS", "CLNN_CACHE_DIR")


def _caller_settings(environ) -> list[str]:
    """The variables of ``environ`` that would steer clnn, its device choice or OpenBLAS."""
    return sorted(n for n in environ
                  if (n.startswith("CLNN_") and n not in KEPT) or n == "PYOPENCL_CTX"
                  or n.startswith("OPENBLAS_"))


REMOVED = {name: os.environ.pop(name) for name in _caller_settings(os.environ)}

from tests.kits.devices import open_or_skip  # noqa: E402  (after the environment is cleaned)


@pytest.fixture(scope="module")
def cl_device():
    return open_or_skip("opencl", fallback=False)


@pytest.fixture(scope="module")
def reference():
    return open_or_skip("reference")


@pytest.fixture(scope="module", params=["reference", "opencl"])
def device(request):
    return open_or_skip(request.param)


def pytest_report_header(config):
    if REMOVED:
        return f"removed from the environment for this session: {', '.join(sorted(REMOVED))}"
    return None
