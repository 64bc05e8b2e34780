"""OpenCL kernels, one module per op family (same stem as hal/operations/<family>.py).

Every module other than the infrastructure modules registers its kernels at import (see
registry.py); importing this package makes the registration complete, so :func:`kernel_for`
and :func:`kernel_registrations` live here (the registry never imports the families).
"""

import importlib
import pkgutil

from clnn.kernels.registry import _KERNELS, KernelRegistration
from hal.types import OperationType

_INFRASTRUCTURE = {"registry", "support"}

FAMILIES: list[str] = []
for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _m.name in _INFRASTRUCTURE or _m.name.startswith("_"):
        continue
    importlib.import_module(f"{__name__}.{_m.name}")
    FAMILIES.append(_m.name)


def kernel_for(op: OperationType) -> KernelRegistration | None:
    """The OpenCL kernels of an operation type (None: it has none)."""
    return _KERNELS.get(op)


def kernel_registrations() -> dict[OperationType, KernelRegistration]:
    return dict(_KERNELS)
