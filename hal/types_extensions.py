"""Extension types (NN HAL 1.2+): the type encoding (Model::ExtensionTypeEncoding) and the
Python types of an extension's operand and operation types. Re-exported by hal.types."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np


class ExtensionTypeEncoding(enum.IntEnum):
    """Model::ExtensionTypeEncoding: an extension type's value is prefix << 16 | type id."""
    HIGH_BITS_PREFIX = 16
    LOW_BITS_TYPE = 16


#: OperandTypeRange::BASE_MAX and OperationTypeRange::BASE_MAX: a value above is an extension's
BASE_MAX = 0xFFFF
_TYPE_MASK = (1 << ExtensionTypeEncoding.LOW_BITS_TYPE) - 1
_PREFIX_MAX = (1 << ExtensionTypeEncoding.HIGH_BITS_PREFIX) - 1


def encode_extension_type(prefix: int, type_id: int) -> int:
    """The numeric type value of type ``type_id`` of the extension with ``prefix``."""
    if not 0 < prefix <= _PREFIX_MAX:
        raise ValueError(f"an extension prefix must be in [1, {_PREFIX_MAX}], got {prefix}")
    if not 0 <= type_id <= _TYPE_MASK:
        raise ValueError(f"an extension type id must be in [0, {_TYPE_MASK}], got {type_id}")
    return (prefix << ExtensionTypeEncoding.LOW_BITS_TYPE) | type_id


def decode_extension_type(value: int) -> tuple[int, int]:
    """(prefix, type id) of a numeric type value (prefix 0: not an extension type)."""
    value = int(value)
    return value >> ExtensionTypeEncoding.LOW_BITS_TYPE, value & _TYPE_MASK


def is_extension_type(value) -> bool:
    """A numeric operand or operation type value above BASE_MAX (an extension's)."""
    return int(value) > BASE_MAX


class _ExtensionType(int):
    """An extension's operand or operation type. As an int it is its numeric value in one
    model (prefix << 16 | type id; prefix 0 while unbound, as registered), but it compares and
    hashes by (extension name, type id) only: the registered (unbound) type finds its
    registrations (operations, signatures, kernels) under whatever prefix a model chose."""

    def __new__(cls, extension: str, type_id: int, type_name: str, prefix: int = 0, **info):
        value = encode_extension_type(prefix, type_id) if prefix else int(type_id)
        self = super().__new__(cls, value)
        self.extension, self.type_id, self.type_name, self.prefix = (
            extension, int(type_id), type_name, int(prefix))
        self._info = info
        return self

    @property
    def key(self) -> tuple[str, int]:
        return (self.extension, self.type_id)

    @property
    def name(self) -> str:
        """"org.clnn.test:NEGATE": the extension and the type's name within it."""
        return f"{self.extension}:{self.type_name}"

    @property
    def value(self) -> int:
        return int(self)

    def bind(self, prefix: int):
        """This type under ``prefix`` (its numeric value in a model that maps the extension's
        name to ``prefix``)."""
        return type(self)(self.extension, self.type_id, self.type_name, prefix, **self._info)

    def __eq__(self, other):
        return isinstance(other, type(self)) and self.key == other.key

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((type(self).__name__, self.key))

    def __repr__(self):
        where = f" prefix {self.prefix:#x}" if self.prefix else ""
        return f"<{type(self).__name__} {self.name} (type {self.type_id}{where})>"

    def __reduce__(self):  # copy / deepcopy / pickle: int's default would drop the fields
        return (_rebuild, (type(self), self.extension, self.type_id, self.type_name,
                           self.prefix, self._info))


def _rebuild(cls, extension, type_id, type_name, prefix, info):
    return cls(extension, type_id, type_name, prefix, **info)


class ExtensionOperandType(_ExtensionType):
    """An extension operand type (hal/extensions.py registers them): tensor or scalar, the
    byte size of an element (Extension.OperandTypeInformation) and the NumPy dtype its values
    are stored in."""

    @property
    def is_tensor(self) -> bool:
        return bool(self._info["is_tensor"])

    @property
    def byte_size(self) -> int:
        return int(self._info["byte_size"])

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self._info["dtype"])


class ExtensionOperationType(_ExtensionType):
    """An extension operation type (hal/extensions.py registers them)."""


class DtypeTable(dict):
    """hal.types.NUMPY_DTYPE: the standard types' dtypes; an extension operand type brings its
    own (its ``dtype``)."""

    def __missing__(self, key):
        if isinstance(key, ExtensionOperandType):
            return key.dtype
        raise KeyError(key)


@dataclass
class ExtensionNameAndPrefix:
    """Model::ExtensionNameAndPrefix: one entry of Model.extension_name_to_prefix."""
    name: str
    prefix: int


@dataclass(frozen=True)
class ExtensionOperandTypeInformation:
    """Extension::OperandTypeInformation: a tensor (byte size of an element) or a scalar."""
    type: int
    is_tensor: bool
    byte_size: int


@dataclass
class Extension:
    """Extension: what get_supported_extensions lists (hal/extensions.py registers them)."""
    name: str
    operand_types: list[ExtensionOperandTypeInformation] = field(default_factory=list)
