"""OpenCL kernels, one module per op family (same stem as hal/operations/<family>.py).

Every module other than the infrastructure modules registers its kernels at import (see
registry.py). A family is imported when one of its operations is first asked for:
:func:`kernel_for` finds the family in the HAL's index (``hal.operations._families``: the
kernel family of an operation has its HAL family's stem) and imports it; its own
``register_kernel`` calls do the registering (the registry never imports the families). An
operation the index does not know imports every family; :func:`kernel_registrations` imports
every family first.
"""

import importlib
import pkgutil

from clnn.kernels.registry import _KERNELS, KernelRegistration
from hal.operations._families import FAMILY_OF
from hal.types import OperationType

_INFRASTRUCTURE = {"registry", "support"}

FAMILIES: list[str] = sorted(m.name for m in pkgutil.iter_modules(__path__)
                             if m.name not in _INFRASTRUCTURE and not m.name.startswith("_"))
_FAMILY_SET = frozenset(FAMILIES)
#: the functions of this package; a family of the same name would be imported here, before they
#: are defined, so that the name means the function (as hal.operations does for lookup.py)
_API = ("kernel_for", "kernel_registrations", "load_all")
for _family in sorted(set(_API) & _FAMILY_SET):
    importlib.import_module(f"{__name__}.{_family}")


def load_all() -> None:
    """Import every kernel family: registration is then complete."""
    for family in FAMILIES:
        importlib.import_module(f"{__name__}.{family}")


def kernel_for(op: OperationType) -> KernelRegistration | None:
    """The OpenCL kernels of an operation type (None: it has none)."""
    reg = _KERNELS.get(op)
    if reg is None:
        family = FAMILY_OF.get(getattr(op, "name", None))
        if family is None:
            load_all()
        elif family in _FAMILY_SET:
            importlib.import_module(f"{__name__}.{family}")
        reg = _KERNELS.get(op)
    return reg


def kernel_registrations() -> dict[OperationType, KernelRegistration]:
    load_all()
    return dict(_KERNELS)
