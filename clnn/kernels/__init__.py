"""OpenCL kernels, one module per op family (same stem as hal/operations/<family>.py).

Every module other than the infrastructure modules registers its kernels at import (see
registry.py); importing this package makes the registration complete.
"""

import importlib
import pkgutil

_INFRASTRUCTURE = {"registry", "support"}

FAMILIES: list[str] = []
for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _m.name in _INFRASTRUCTURE or _m.name.startswith("_"):
        continue
    importlib.import_module(f"{__name__}.{_m.name}")
    FAMILIES.append(_m.name)
