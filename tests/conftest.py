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

Test files run heaviest first (tests/weights.json, :func:`pytest_collection_modifyitems`).

Markers: ``slow`` (the long suites whole: ``make test-full``; ``make test`` leaves them out
through pyproject.toml's ``-m "not slow"``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

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


#: seconds per test file in a cold run (scripts/test_weights.py writes it); a file not listed
#: counts as :data:`UNKNOWN_WEIGHT`
WEIGHTS = Path(__file__).with_name("weights.json")
UNKNOWN_WEIGHT = 1.0


def pytest_collection_modifyitems(session, config, items):
    """The heaviest test files first (their tests in their own order): ``--dist loadfile``
    hands whole files to the workers in this order, so the longest ones start early and the
    short ones fill in at the end (longest processing time first)."""
    try:
        weights = json.loads(WEIGHTS.read_text())
    except (OSError, ValueError):  # no weights: collection order
        return
    root = Path(str(config.rootpath))

    def weight(item) -> float:
        try:
            rel = Path(str(item.path)).relative_to(root).as_posix()
        except ValueError:
            return UNKNOWN_WEIGHT
        return weights.get(rel, UNKNOWN_WEIGHT)

    items.sort(key=lambda it: -weight(it))  # (stable: a file's tests keep their order)
