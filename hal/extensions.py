"""Vendor extensions (NN HAL 1.2+): the one registry of extensions, and resolving the numeric
extension types of a model through its ``extension_name_to_prefix`` (see docs/extensions.md).

An extension is registered once, with its operand types (the HAL's
``Extension.OperandTypeInformation`` plus a name and a NumPy storage dtype) and the names of
its operations::

    ext = register_extension(
        Extension("org.clnn.test", [ExtensionOperandTypeInformation(0, True, 4)]),
        operand_names={0: "TENSOR_INT32"}, dtypes={0: np.int32},
        operations={0: "NEGATE"})
    register(ext.operation("NEGATE"), execute, signatures=[sig("V1_3", [t], [t])], ...)

Its operations are then registered like any other (hal.operations.registry.register,
clnn.kernels.registry.register_kernel), by the unbound :class:`ExtensionOperationType` that
``ext.operation`` returns or by its full name ``"org.clnn.test:NEGATE"``. A model refers to
them by numeric values ``prefix << 16 | type id``; :func:`resolve_model` (run by
``validate_model``) replaces those values in the model by bound types, which are still the same
ints but compare equal to the registered ones, so every registry lookup works unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from hal.errors import InvalidArgument
from hal.types import (
    BASE_MAX,
    Extension,
    ExtensionOperandType,
    ExtensionOperandTypeInformation,
    ExtensionOperationType,
    Model,
    OperandType,
    OperationType,
    decode_extension_type,
)

#: Extension::name: lowercase latin letters, digits, periods and underscores, at least one
#: period; it starts with the vendor's reverse domain name, so no part may be empty.
NAME_PATTERN = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)+")
_TYPE_ID_MAX = 0xFFFF
_DEFAULT_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def name_problem(name) -> str | None:
    """Why ``name`` is not a valid extension name (None: it is)."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        return (f"extension name {name!r} is malformed: it must be lowercase latin letters, "
                "digits, periods and underscores, with at least one period and no empty part "
                "(a reverse domain name such as com.example.my_extension)")
    return None


@dataclass
class RegisteredExtension:
    """An extension known to this HAL: its HAL description and its types by id and name."""
    extension: Extension
    operand_types: dict[int, ExtensionOperandType] = field(default_factory=dict)
    operations: dict[int, ExtensionOperationType] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.extension.name

    def operand(self, which: int | str) -> ExtensionOperandType:
        """The (unbound) operand type with this type id or name."""
        return _find(self.operand_types, which, f"{self.name} has no operand type")

    def operation(self, which: int | str) -> ExtensionOperationType:
        """The (unbound) operation type with this type id or name."""
        return _find(self.operations, which, f"{self.name} has no operation type")


def _find(table: dict, which, what: str):
    if isinstance(which, str):
        for t in table.values():
            if t.type_name == which:
                return t
    elif which in table:
        return table[which]
    raise KeyError(f"{what} {which!r}")


_EXTENSIONS: dict[str, RegisteredExtension] = {}


def register_extension(extension: Extension, *, operand_names: dict[int, str] | None = None,
                       dtypes: dict | None = None, operations: dict[int, str] | None = None
                       ) -> RegisteredExtension:
    """Register ``extension`` (its name and operand types) and the names of its operations
    (type id -> name). ``operand_names`` (default "TYPE_<id>") and ``dtypes`` (the NumPy dtype
    a value is stored in; default the unsigned integer of the type's byte size) are per
    operand type id. Raises ValueError for a malformed name, a name registered twice, a type
    id outside [0, 0xFFFF] or twice, or a dtype whose size is not the type's byte size."""
    problem = name_problem(extension.name)
    if problem:
        raise ValueError(problem)
    if extension.name in _EXTENSIONS:
        raise ValueError(f"extension {extension.name} is registered twice")
    operand_names, dtypes, operations = operand_names or {}, dtypes or {}, operations or {}
    reg = RegisteredExtension(extension)
    for info in extension.operand_types:
        tid = int(info.type)
        if not 0 <= tid <= _TYPE_ID_MAX or tid in reg.operand_types:
            raise ValueError(f"{extension.name}: operand type id {tid} is out of range or "
                             "given twice")
        dtype = np.dtype(dtypes.get(tid, _DEFAULT_DTYPES.get(info.byte_size,
                                                             f"V{info.byte_size}")))
        if dtype.itemsize != info.byte_size:
            raise ValueError(f"{extension.name}: operand type {tid} has byte size "
                             f"{info.byte_size} but dtype {dtype} ({dtype.itemsize} bytes)")
        reg.operand_types[tid] = ExtensionOperandType(
            extension.name, tid, operand_names.get(tid, f"TYPE_{tid}"),
            is_tensor=bool(info.is_tensor), byte_size=int(info.byte_size), dtype=dtype.str)
    for tid, op_name in operations.items():
        if not 0 <= tid <= _TYPE_ID_MAX:
            raise ValueError(f"{extension.name}: operation type id {tid} is out of range")
        reg.operations[tid] = ExtensionOperationType(extension.name, tid, op_name)
    _EXTENSIONS[extension.name] = reg
    return reg


def unregister_extension(name: str):
    """Forget an extension (test fixtures: a test-only extension must not outlive its tests).
    Its operation and kernel registrations are the caller's to remove."""
    _EXTENSIONS.pop(name, None)


def registered_extension(name: str) -> RegisteredExtension | None:
    return _EXTENSIONS.get(name)


def registered_extensions() -> dict[str, RegisteredExtension]:
    return dict(_EXTENSIONS)


def supported_extensions(names=None) -> list[Extension]:
    """The HAL descriptions (get_supported_extensions) of the registered extensions (those
    named in ``names`` only, when given), sorted by name."""
    return [r.extension for n, r in sorted(_EXTENSIONS.items()) if names is None or n in names]


def by_full_name(full: str, operand: bool):
    """The unbound type named "extension:TYPE" (None when not registered)."""
    ext, _, type_name = full.rpartition(":")
    reg = _EXTENSIONS.get(ext)
    if reg is None:
        return None
    try:
        return reg.operand(type_name) if operand else reg.operation(type_name)
    except KeyError:
        return None


# ------------------------------------------------------------------------------ models

def _fail(msg: str):
    raise InvalidArgument(msg)


def check_prefix_table(model: Model) -> dict[int, str]:
    """prefix -> name of ``model.extension_name_to_prefix``; InvalidArgument for a malformed
    name, a name or a prefix given twice, or a prefix outside [1, 0xFFFF]."""
    table: dict[int, str] = {}
    names = set()
    entries = model.extension_name_to_prefix
    if not isinstance(entries, (list, tuple)):
        _fail(f"extension_name_to_prefix must be a list, got a {type(entries).__name__}")
    for k, entry in enumerate(entries):
        name, prefix = getattr(entry, "name", None), getattr(entry, "prefix", None)
        what = f"extension_name_to_prefix entry {k}"
        problem = name_problem(name)
        if problem:
            _fail(f"{what}: {problem}")
        if isinstance(prefix, bool) or not isinstance(prefix, (int, np.integer)) \
                or not 0 < prefix <= 0xFFFF:
            _fail(f"{what} ({name}) has prefix {prefix!r}; an extension prefix must be in "
                  "[1, 0xFFFF] (prefix 0 is the standard types')")
        if name in names:
            _fail(f"{what}: extension {name} is mapped to two prefixes; the mapping must be "
                  "one-to-one")
        if prefix in table:
            _fail(f"{what}: prefix {prefix:#x} is mapped to both {table[prefix]} and {name}; "
                  "the mapping must be one-to-one")
        names.add(name)
        table[int(prefix)] = name
    return table


class UnsupportedExtensionType(int):
    """A type of an extension this HAL does not know, left in a model validated for
    get_supported_operations (its operations are then unsupported, not invalid)."""

    def __new__(cls, value: int, extension: str, type_id: int):
        self = super().__new__(cls, value)
        self.extension, self.type_id = extension, type_id
        return self

    @property
    def name(self) -> str:
        return f"{self.extension}:{self.type_id}"

    def __reduce__(self):
        return (UnsupportedExtensionType, (int(self), self.extension, self.type_id))


def resolve_type(value, table: dict[int, str], operand: bool, what: str,
                 unknown_ok: bool = False):
    """The type a model's numeric ``value`` stands for: a standard OperandType /
    OperationType, or an extension's type bound to its prefix. InvalidArgument for a value
    that is neither (an unknown prefix, an unregistered extension, a type id the extension
    does not define, a value outside the standard range). ``unknown_ok``: a type of an
    extension not registered here is an :class:`UnsupportedExtensionType` instead."""
    enum = OperandType if operand else OperationType
    if type(value) is enum:  # the common case: nothing to resolve
        return value
    kind = "operand" if operand else "operation"
    ext_class = ExtensionOperandType if operand else ExtensionOperationType
    if isinstance(value, ext_class) and value.prefix == 0:
        _fail(f"{what} has the unbound extension {kind} type {value.name}; a model uses the "
              f"value of get_extension_{kind}_type, which maps its extension to a prefix")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        _fail(f"{what} has an invalid {kind} type {value!r}")
    if not 0 <= int(value) <= 0xFFFF_FFFF:
        _fail(f"{what} has an invalid {kind} type {value}")
    if int(value) <= BASE_MAX:
        try:
            return enum(int(value))
        except ValueError:
            _fail(f"{what} has an invalid {kind} type {value}")
    prefix, tid = decode_extension_type(value)
    name = table.get(prefix)
    if name is None:
        _fail(f"{what} has {kind} type {int(value):#010x}, whose prefix {prefix:#x} is not in "
              "the model's extension_name_to_prefix")
    reg = _EXTENSIONS.get(name)
    if reg is None:
        if unknown_ok:
            return UnsupportedExtensionType(value, name, tid)
        _fail(f"{what} has a type of extension {name}, which this driver does not support")
    types = reg.operand_types if operand else reg.operations
    if tid not in types:
        _fail(f"{what} has {kind} type {tid} of extension {name}, which defines no such "
              f"{kind} type (it has {sorted(types) or 'none'})")
    return types[tid].bind(prefix)


def resolve_model(model: Model, unknown_ok: bool = False):
    """Replace every operand and operation type of the model by what it stands for (see
    :func:`resolve_type`), in place: the values stay the same numbers, extension ones become
    bound extension types. InvalidArgument names the first operand or operation at fault.
    ``unknown_ok``: see :func:`resolve_type`."""
    table = check_prefix_table(model)
    for sg_name, sg in [("main subgraph", model.main)] + [
            (f"referenced subgraph {r}", s) for r, s in enumerate(model.referenced)]:
        for i, operand in enumerate(sg.operands):
            operand.type = resolve_type(operand.type, table, True, f"{sg_name} operand {i}",
                                        unknown_ok)
        for k, operation in enumerate(sg.operations):
            operation.type = resolve_type(operation.type, table, False,
                                          f"{sg_name} operation {k}", unknown_ok)


def extensions_used(model: Model) -> set[str]:
    """The names of the extensions whose types a resolved model uses."""
    used = set()
    for sg in [model.main, *model.referenced]:
        for t in [o.type for o in sg.operands] + [op.type for op in sg.operations]:
            if isinstance(t, (ExtensionOperandType, ExtensionOperationType)):
                used.add(t.extension)
    return used


__all__ = ["ExtensionOperandTypeInformation", "register_extension", "resolve_model"]
