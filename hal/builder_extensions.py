"""The extension calls of the NDK-style ModelBuilder (mixed into it):
ANeuralNetworksModel_getExtensionOperandType / getExtensionOperationType /
setOperandExtensionData. The builder gives each extension a prefix the first time one of its
types is asked for (1, 2, ... in that order) and finish() puts the table in the model's
``extension_name_to_prefix``."""

from __future__ import annotations

from hal.builder_layout import bad_data as _bad_data
from hal.errors import HalError
from hal.extensions import registered_extension, resolve_type
from hal.types import (
    BASE_MAX,
    ExtensionNameAndPrefix,
    ExtensionOperandType,
    ExtensionOperationType,
)


class ExtensionCalls:
    """Mixed into ModelBuilder; ``self._extension_prefixes`` maps name -> prefix."""

    def _prefix_of(self, extension_name: str, what: str) -> int:
        if registered_extension(extension_name) is None:
            _bad_data(f"{what}: extension {extension_name!r} is not supported by this driver")
        table = self._extension_prefixes
        if extension_name not in table:
            table[extension_name] = len(table) + 1
        return table[extension_name]

    def get_extension_operand_type(self, extension_name: str, type_id: int
                                   ) -> ExtensionOperandType:
        """ANeuralNetworksModel_getExtensionOperandType: the operand type ``type_id`` of the
        extension, as this model numbers it (an int: prefix << 16 | type id)."""
        what = "get_extension_operand_type"
        self._check_state(what)
        prefix = self._prefix_of(extension_name, what)
        try:
            return registered_extension(extension_name).operand(type_id).bind(prefix)
        except KeyError:
            _bad_data(f"{what}: extension {extension_name} has no operand type {type_id!r}")

    def get_extension_operation_type(self, extension_name: str, type_id: int
                                     ) -> ExtensionOperationType:
        """ANeuralNetworksModel_getExtensionOperationType: the operation type ``type_id`` of
        the extension, as this model numbers it (an int: prefix << 16 | type id)."""
        what = "get_extension_operation_type"
        self._check_state(what)
        prefix = self._prefix_of(extension_name, what)
        try:
            return registered_extension(extension_name).operation(type_id).bind(prefix)
        except KeyError:
            _bad_data(f"{what}: extension {extension_name} has no operation type {type_id!r}")

    def set_operand_extension_data(self, index: int, data: bytes):
        """ANeuralNetworksModel_setOperandExtensionData: the extension operand's parameters
        (Operand.extra_params as bytes; their format is the extension's)."""
        self._check_state("set_operand_extension_data")
        index = self._check_index(index, "set_operand_extension_data")
        op = self._operands[index]
        if not isinstance(op.type, ExtensionOperandType):
            _bad_data(f"set_operand_extension_data: operand {index} ({op.type.name}) is not "
                      "of an extension operand type")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            _bad_data("set_operand_extension_data: data must be bytes")
        op.extra_params = bytes(data)

    def _extension_type(self, value, operand: bool):
        """An extension type given to add_operand / add_operation, checked against this
        model's prefixes; None for anything else (a standard type)."""
        ext_class = ExtensionOperandType if operand else ExtensionOperationType
        if not isinstance(value, ext_class) and not (
                isinstance(value, int) and not isinstance(value, bool) and value > BASE_MAX):
            return None
        table = {p: n for n, p in self._extension_prefixes.items()}
        call = "add_operand" if operand else "add_operation"
        try:
            return resolve_type(value, table, operand, f"{call}: type {int(value):#x}")
        except HalError as e:
            _bad_data(e.reason)

    def _extension_table(self, model) -> list[ExtensionNameAndPrefix]:
        """This model's extension_name_to_prefix. The subgraphs merged from other models
        (IF / WHILE) numbered their extension types with their own prefixes: they are
        renumbered with this model's first."""
        for sg in model.referenced:
            for item in [*sg.operands, *sg.operations]:
                t = item.type
                if isinstance(t, (ExtensionOperandType, ExtensionOperationType)):
                    item.type = t.bind(self._prefix_of(t.extension, "finish"))
        return [ExtensionNameAndPrefix(n, p) for n, p in self._extension_prefixes.items()]
