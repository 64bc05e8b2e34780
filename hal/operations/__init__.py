"""Operation families. Each module registers its operations at import (see registry.py).

Every module in this package other than the infrastructure modules is an op family and is
imported here, so that registration is complete once ``hal.operations`` is imported.
"""

import importlib
import pkgutil

_INFRASTRUCTURE = {"registry", "context", "common"}

FAMILIES: list[str] = []
for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _m.name in _INFRASTRUCTURE or _m.name.startswith("_"):
        continue
    importlib.import_module(f"{__name__}.{_m.name}")
    FAMILIES.append(_m.name)
