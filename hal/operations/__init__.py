"""Operation families. Each module registers its operations at import (see registry.py).

Every module in this package other than the infrastructure modules is an op family and is
imported here, so that registration is complete once ``hal.operations`` is imported:
:func:`lookup` and :func:`registrations` live here, not in the registry, so that the registry
never imports the families that import it.
"""

import importlib
import pkgutil

from hal.operations.registry import _REGISTRY, OperationRegistration
from hal.types import OperationType

_INFRASTRUCTURE = {"registry", "context", "common"}

FAMILIES: list[str] = []
for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _m.name in _INFRASTRUCTURE or _m.name.startswith("_"):
        continue
    importlib.import_module(f"{__name__}.{_m.name}")
    FAMILIES.append(_m.name)


def lookup(op: OperationType) -> OperationRegistration | None:
    """The registration of an operation type (None: not registered)."""
    return _REGISTRY.get(op)


def registrations() -> dict[OperationType, OperationRegistration]:
    return dict(_REGISTRY)
