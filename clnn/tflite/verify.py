"""Structural check of a .tflite flatbuffer before the ``tflite`` package reads it.

The generated ``tflite`` readers trust every offset: a truncated or corrupted file makes them
raise ``struct.error`` / ``IndexError`` deep inside flatbuffers, or read garbage. This module
walks the parts of the schema the importer reads (as the C++ flatbuffers ``Verifier`` does)
and raises :class:`TfliteImportError` naming the first object that lies outside the file:
every table and its vtable in bounds, every scalar field inside its table, every vector and
string with its length inside the file, every union table in bounds.

The walk follows uoffsets (always forward) and so terminates; its cost is linear in the
number of objects referenced, itself bounded by the file size.
"""

from __future__ import annotations

import struct

from tflite.BuiltinOptions import BuiltinOptions

from clnn.tflite.errors import TfliteImportError

_U8 = struct.Struct("<B")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")

# Schema of the tables the importer reads: field id -> kind. Kinds: ("scalar", size),
# ("vector", element size), ("string",), ("table", name), ("tables", name),
# ("union", type field id, {type code: table name}). Fields not listed are never read.
_OPTION_TABLES = {v: k for k, v in vars(BuiltinOptions).items()
                  if not k.startswith("_") and isinstance(v, int)}
_INT_VECTORS = {1: "Int32Vector", 2: "Uint16Vector", 3: "Uint8Vector"}
SCHEMA: dict[str, dict[int, tuple]] = {
    "Model": {0: ("scalar", 4), 1: ("tables", "OperatorCode"), 2: ("tables", "SubGraph"),
              3: ("string",), 4: ("tables", "Buffer")},
    "OperatorCode": {0: ("scalar", 1), 1: ("string",), 2: ("scalar", 4), 3: ("scalar", 4)},
    "SubGraph": {0: ("tables", "Tensor"), 1: ("vector", 4), 2: ("vector", 4),
                 3: ("tables", "Operator"), 4: ("string",)},
    "Tensor": {0: ("vector", 4), 1: ("scalar", 1), 2: ("scalar", 4), 3: ("string",),
               4: ("table", "QuantizationParameters"), 6: ("table", "SparsityParameters"),
               7: ("vector", 4)},
    "QuantizationParameters": {2: ("vector", 4), 3: ("vector", 8), 6: ("scalar", 4)},
    "SparsityParameters": {0: ("vector", 4), 1: ("vector", 4),
                           2: ("tables", "DimensionMetadata")},
    "DimensionMetadata": {0: ("scalar", 1), 1: ("scalar", 4), 2: ("scalar", 1),
                          3: ("union", 2, _INT_VECTORS), 4: ("scalar", 1),
                          5: ("union", 4, _INT_VECTORS)},
    "Int32Vector": {0: ("vector", 4)},
    "Uint16Vector": {0: ("vector", 2)},
    "Uint8Vector": {0: ("vector", 1)},
    "Operator": {0: ("scalar", 4), 1: ("vector", 4), 2: ("vector", 4), 3: ("scalar", 1),
                 4: ("union", 3, "options"), 5: ("vector", 1)},
    "Buffer": {0: ("vector", 1), 1: ("scalar", 8), 2: ("scalar", 8)},
    # builtin options whose vector fields the importer reads (other options: scalars only)
    "ReshapeOptions": {0: ("vector", 4)},
    "SqueezeOptions": {0: ("vector", 4)},
    # resource variables (clnn/tflite/state.py): the variable's container and shared name
    "VarHandleOptions": {0: ("string",), 1: ("string",)},
}


#: schema field names, for messages
FIELD_NAMES = {
    "Model": ("version", "operator_codes", "subgraphs", "description", "buffers"),
    "OperatorCode": ("deprecated_builtin_code", "custom_code", "version", "builtin_code"),
    "SubGraph": ("tensors", "inputs", "outputs", "operators", "name"),
    "Tensor": ("shape", "type", "buffer", "name", "quantization", "is_variable", "sparsity",
               "shape_signature"),
    "QuantizationParameters": ("min", "max", "scale", "zero_point", "details_type", "details",
                               "quantized_dimension"),
    "SparsityParameters": ("traversal_order", "block_map", "dim_metadata"),
    "DimensionMetadata": ("format", "dense_size", "array_segments_type", "array_segments",
                          "array_indices_type", "array_indices"),
    "Operator": ("opcode_index", "inputs", "outputs", "builtin_options_type",
                 "builtin_options", "custom_options"),
    "Buffer": ("data", "offset", "size"),
    "VarHandleOptions": ("container", "shared_name"),
}


def _field_name(table: str, fid: int) -> str:
    names = FIELD_NAMES.get(table, ())
    return names[fid] if fid < len(names) else f"field {fid}"


class _Walker:
    def __init__(self, raw: bytes):
        self.raw = raw
        self.n = len(raw)

    def fail(self, what: str, reason: str):
        raise TfliteImportError(f"malformed flatbuffer: {what} {reason} (the file has "
                                f"{self.n} bytes)")

    def read(self, fmt: struct.Struct, pos: int, what: str) -> int:
        if pos < 0 or pos + fmt.size > self.n:
            self.fail(what, f"at byte {pos} lies outside the file")
        return fmt.unpack_from(self.raw, pos)[0]

    def follow(self, pos: int, what: str) -> int:
        """The position a uoffset stored at ``pos`` points to."""
        return pos + self.read(_U32, pos, f"the offset to {what}")

    def table(self, pos: int, name: str, what: str):
        """Check the table at ``pos`` and its vtable; then its fields per the schema."""
        vt = pos - self.read(_I32, pos, what)
        vt_size = self.read(_U16, vt, f"the vtable of {what}")
        obj_size = self.read(_U16, vt + 2, f"the vtable of {what}")
        if vt_size < 4 or vt_size % 2 or vt + vt_size > self.n:
            self.fail(f"the vtable of {what}", f"at byte {vt} has a bad size {vt_size}")
        if obj_size < 4 or pos + obj_size > self.n:
            self.fail(what, f"at byte {pos} with size {obj_size} lies outside the file")
        fields = (vt_size - 4) // 2
        for fid in range(fields):
            off = _U16.unpack_from(self.raw, vt + 4 + 2 * fid)[0]
            if off and off >= obj_size:
                self.fail(what, f"{_field_name(name, fid)} at offset {off} lies outside its table "
                                f"({obj_size} bytes)")
        schema = SCHEMA.get(name, {})
        for fid, kind in schema.items():
            off = (_U16.unpack_from(self.raw, vt + 4 + 2 * fid)[0] if fid < fields else 0)
            if off:
                self.field(pos, pos + off, obj_size - off, kind,
                           f"{what}.{_field_name(name, fid)}", vt, fields)

    def field(self, table_pos, pos, room, kind, what, vt, fields):
        tag = kind[0]
        if tag == "scalar":
            if kind[1] > room:
                self.fail(what, f"({kind[1]} bytes) overruns its table")
            return
        if room < 4:
            self.fail(what, "(an offset) overruns its table")
        target = self.follow(pos, what)
        if tag == "vector":
            self.vector(target, kind[1], what)
        elif tag == "string":
            self.vector(target, 1, what)
        elif tag == "table":
            self.table(target, kind[1], what)
        elif tag == "tables":
            count = self.vector(target, 4, what)
            for i in range(count):
                at = target + 4 + 4 * i
                self.table(self.follow(at, f"{what}[{i}]"), kind[1], f"{what}[{i}]")
        elif tag == "union":
            type_off = (_U16.unpack_from(self.raw, vt + 4 + 2 * kind[1])[0]
                        if kind[1] < fields else 0)
            code = self.read(_U8, table_pos + type_off, f"{what} type") if type_off else 0
            name = (_OPTION_TABLES if kind[2] == "options" else kind[2]).get(code, "")
            if code:
                self.table(target, name, f"{what} ({name or f'union type {code}'})")

    def vector(self, pos: int, elem: int, what: str) -> int:
        length = self.read(_U32, pos, f"the length of {what}")
        if pos + 4 + length * elem > self.n:
            self.fail(what, f"of {length} elements at byte {pos} runs past the end of the file")
        return length


def verify(raw: bytes) -> None:
    """Raise :class:`TfliteImportError` unless every object the importer reads lies inside
    ``raw``."""
    if len(raw) < 8 or raw[4:8] != b"TFL3":
        raise TfliteImportError("not a TFLite flatbuffer (file identifier 'TFL3' missing)")
    w = _Walker(raw)
    w.table(w.follow(0, "the root table"), "Model", "model")  # paths: model.x[i].y
