"""The payload format of compilation-cache files: data only, nothing in it can run code.

A payload is ``MAGIC | JSON length (8, little-endian) | JSON text | raw bytes``. The JSON tree
holds None, booleans, integers, floats (NaN and infinities as JSON's extension), strings and
lists as themselves, and three tagged objects:

- ``{"t": [...]}``: a tuple (kernel keys are tuples and must come back hashable and equal);
- ``{"b": [offset, length]}``: a ``bytes`` slice of the raw bytes after the JSON text;
- ``{"m": {...}}``: a :class:`hal.types.Model` (see :func:`_model_tree`).

Reading never looks anything up by name: every node is checked for its shape and types, and
enums are built from their integer values, so a payload that is not what clnn wrote (even one
with a valid digest, from someone who knows the token) is GENERAL_FAILURE, never code that runs.
Pickle was used before; its loader resolves dotted names through any allowed module
(``hal.types.os.system``), which is why it is gone.
"""

from __future__ import annotations

import json
import struct

from hal.errors import GeneralFailure
from hal.types import (
    BASE_MAX,
    DataLocation,
    ExtensionNameAndPrefix,
    HostMemory,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
    SymmPerChannelQuantParams,
)

MAGIC = b"clnn-payload-v2\n"
_LEN = struct.Struct("<Q")
#: JSON nesting deeper than this is refused before json.loads recurses into it
MAX_DEPTH = 64


class _Bad(Exception):
    """A payload node that is not what the writer makes; becomes GeneralFailure."""


# ------------------------------------------------------------------------------ writing

def dumps(obj) -> bytes:
    blobs: list[bytes] = []
    size = [0]

    def blob(data) -> dict:
        data = bytes(data)
        node = {"b": [size[0], len(data)]}
        blobs.append(data)
        size[0] += len(data)
        return node

    def enc(x):
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float):
            return float(x)
        if isinstance(x, (bytes, bytearray, memoryview)):
            return blob(x)
        if isinstance(x, tuple):
            return {"t": [enc(v) for v in x]}
        if isinstance(x, list):
            return [enc(v) for v in x]
        if isinstance(x, Model):
            return {"m": _model_tree(x, blob)}
        if hasattr(x, "item"):  # a NumPy scalar in a kernel key
            return enc(x.item())
        raise TypeError(f"a compilation-cache payload cannot hold a {type(x).__name__}")

    text = json.dumps(enc(obj), separators=(",", ":")).encode()
    return MAGIC + _LEN.pack(len(text)) + text + b"".join(blobs)


def _operand_tree(o: Operand, blob) -> list:
    loc = o.location
    if o.extra_params is None:
        extra = None
    elif isinstance(o.extra_params, (bytes, bytearray)):  # an extension operand's parameters
        extra = blob(o.extra_params)
    else:
        extra = [[float(s) for s in o.extra_params.scales], int(o.extra_params.channel_dim)]
    return [int(o.type), [int(d) for d in o.dimensions], float(o.scale), int(o.zero_point),
            int(o.lifetime), [int(loc.pool_index), int(loc.offset), int(loc.length)], extra,
            int(o.number_of_consumers)]


def _subgraph_tree(sg: Subgraph, blob) -> dict:
    return {"operands": [_operand_tree(o, blob) for o in sg.operands],
            "operations": [[int(op.type), [int(i) for i in op.inputs],
                            [int(i) for i in op.outputs]] for op in sg.operations],
            "inputs": [int(i) for i in sg.input_indexes],
            "outputs": [int(i) for i in sg.output_indexes]}


def _model_tree(m: Model, blob) -> dict:
    """Every pool is copied into the payload (a file mapping is read now, restored as host
    memory)."""
    return {"main": _subgraph_tree(m.main, blob),
            "referenced": [_subgraph_tree(sg, blob) for sg in m.referenced],
            "values": blob(m.operand_values),
            "pools": [blob(p.view()) for p in m.pools],
            "relax": bool(m.relax_computation_float32_to_float16),
            "extensions": [[str(e.name), int(e.prefix)] for e in m.extension_name_to_prefix]}


# ------------------------------------------------------------------------------ reading

def loads(data: bytes):
    """The object :func:`dumps` wrote; GeneralFailure for anything else."""
    data = bytes(data)
    head = len(MAGIC) + _LEN.size
    if len(data) < head or not data.startswith(MAGIC):
        raise GeneralFailure("the cache payload is not in the clnn payload format (a cache "
                             "from an older clnn, or not a cache)")
    (n,) = _LEN.unpack_from(data, len(MAGIC))
    if n > len(data) - head:
        raise GeneralFailure(f"the cache payload's JSON part claims {n} bytes, only "
                             f"{len(data) - head} follow")
    # (the raw part as a view: each byte string is copied once, out of the payload)
    return _decode(data[head:head + n], _Reader(memoryview(data)[head + n:]))


def load(f):
    """:func:`loads` of the payload in the binary file ``f`` (read from its start), each byte
    string read straight from the file into its own buffer (a pool's bytearray), never the
    whole payload into memory first (a cached import of pose_landmark_full read its 12.7 MB
    of pools and then copied them out of the payload)."""
    import os

    size = os.fstat(f.fileno()).st_size
    head = len(MAGIC) + _LEN.size
    start = _read_exactly(f, head) if size >= head else None
    if start is None or not start.startswith(MAGIC):
        raise GeneralFailure("the cache payload is not in the clnn payload format (a cache "
                             "from an older clnn, or not a cache)")
    (n,) = _LEN.unpack_from(start, len(MAGIC))
    if n > size - head:
        raise GeneralFailure(f"the cache payload's JSON part claims {n} bytes, only "
                             f"{size - head} follow")
    text = _read_exactly(f, n)
    if text is None:
        raise GeneralFailure("the cache payload ends before its JSON part does (the file "
                             "changed while it was read)")
    return _decode(text, _FileReader(f, head + n, size - head - n))


def _read_exactly(f, n: int):
    """A bytearray of the next ``n`` bytes of ``f``, read straight into it; None where the
    file ends first."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = f.readinto(view[got:])
        if not k:
            return None
        got += k
    return buf


def _decode(text: bytes, reader):
    try:
        _check_depth(text)
        tree = json.loads(text.decode("utf-8"))
        return reader.dec(tree)
    except GeneralFailure:
        raise
    except (_Bad, ValueError, TypeError, KeyError, IndexError, UnicodeDecodeError) as e:
        raise GeneralFailure(f"the cache payload is malformed: {e}") from None


def _check_depth(text: bytes):
    """json.loads recurses once per nesting level; a forged payload must not reach Python's
    recursion limit (brackets inside strings only over-count, which is harmless). The running
    depth as a cumulative sum (a loop over the bytes was a millisecond of every cached import
    of a MediaPipe model: clnn.tflite.import_cache)."""
    import numpy as np

    b = np.frombuffer(text, np.uint8)
    step = (b == ord("[")).view(np.int8) + (b == ord("{")).view(np.int8) \
        - (b == ord("]")).view(np.int8) - (b == ord("}")).view(np.int8)
    if b.size and int(np.cumsum(step, dtype=np.int64).max()) > MAX_DEPTH:
        raise _Bad(f"nesting deeper than {MAX_DEPTH} levels")


def _need(cond, what: str):
    if not cond:
        raise _Bad(what)


def _int(x, what: str) -> int:
    if type(x) is not int:  # (the message made only for a bad node: these run per operand)
        raise _Bad(f"{what} is not an integer")
    return x


def _ints(xs, what: str) -> list[int]:
    if type(xs) is not list:
        raise _Bad(f"{what} is not a list")
    for x in xs:
        if type(x) is not int:
            raise _Bad(f"{what} is not an integer")
    return xs  # (a list of the tree json.loads made: nothing else holds it)


def _float(x, what: str) -> float:
    if type(x) is not float and type(x) is not int:
        raise _Bad(f"{what} is not a number")
    return float(x)


def _enum(cls, x, what: str):
    member = cls._value2member_map_.get(x) if type(x) is int else None
    if member is not None:
        return member
    try:
        return cls(_int(x, what))
    except ValueError:
        raise _Bad(f"{what} {x} is not a {cls.__name__}") from None


def _type(cls, x, what: str):
    """A standard operand / operation type, or an extension's numeric value (prefix << 16 |
    type id), kept as an int: validate_model resolves it through the model's
    extension_name_to_prefix when the cache is restored."""
    if type(x) is int and BASE_MAX < x <= 0xFFFF_FFFF:
        return x
    return _enum(cls, x, what)


class _Reader:
    def __init__(self, raw: bytes):
        self.raw, self.size = raw, len(raw)

    def span(self, node) -> tuple[int, int]:
        """(offset, length) of the byte string ``node`` in the raw part, checked."""
        _need(type(node) is dict and set(node) == {"b"}, "a byte string node is malformed")
        off, n = node["b"] if type(node["b"]) is list and len(node["b"]) == 2 else (None, None)
        _need(type(off) is int and type(n) is int and 0 <= off and 0 <= n
              and off + n <= self.size, "a byte string lies outside the payload")
        return off, n

    def blob(self, node, make=bytes):
        """The byte string of ``node``, copied out of the payload as ``make`` (bytes; a
        pool's bytearray)."""
        off, n = self.span(node)
        return make(self.raw[off:off + n])

    def dec(self, x):
        if x is None or type(x) in (bool, int, float, str):
            return x
        if type(x) is list:
            return [self.dec(v) for v in x]
        _need(type(x) is dict and len(x) == 1, "a payload node is neither data nor tagged")
        (tag, v), = x.items()
        if tag == "t":
            _need(type(v) is list, "a tuple node is malformed")
            return tuple(self.dec(e) for e in v)
        if tag == "b":
            return self.blob(x)
        if tag == "m":
            return self.model(v)
        raise _Bad(f"unknown payload tag {tag!r}")

    def model(self, t) -> Model:
        _need(type(t) is dict and set(t) == {"main", "referenced", "values", "pools", "relax",
                                             "extensions"}, "the model node is malformed")
        _need(type(t["referenced"]) is list and type(t["pools"]) is list
              and type(t["extensions"]) is list and type(t["relax"]) is bool,
              "the model node is malformed")
        ext = []
        for e in t["extensions"]:
            _need(type(e) is list and len(e) == 2 and type(e[0]) is str,
                  "an extension entry is malformed")
            ext.append(ExtensionNameAndPrefix(e[0], _int(e[1], "an extension prefix")))
        pools = [HostMemory(self.blob(p, bytearray)) for p in t["pools"]]
        for pool in pools:  # (copied out of the payload: the model's alone)
            pool.private = True
        return Model(self.subgraph(t["main"]), [self.subgraph(s) for s in t["referenced"]],
                     self.blob(t["values"]), pools, t["relax"], ext)

    def subgraph(self, t) -> Subgraph:
        _need(type(t) is dict and set(t) == {"operands", "operations", "inputs", "outputs"}
              and type(t["operands"]) is list and type(t["operations"]) is list,
              "a subgraph node is malformed")
        ops = []
        for op in t["operations"]:
            _need(type(op) is list and len(op) == 3, "an operation node is malformed")
            ops.append(Operation(_type(OperationType, op[0], "an operation type"),
                                 _ints(op[1], "an operation input"),
                                 _ints(op[2], "an operation output")))
        return Subgraph([self.operand(o) for o in t["operands"]], ops,
                        _ints(t["inputs"], "a subgraph input"),
                        _ints(t["outputs"], "a subgraph output"))

    def operand(self, t) -> Operand:
        _need(type(t) is list and len(t) == 8, "an operand node is malformed")
        typ, dims, scale, zp, lifetime, loc, extra, consumers = t
        _need(type(loc) is list and len(loc) == 3, "an operand location is malformed")
        cq = None
        if type(extra) is dict:  # an extension operand's parameters
            cq = self.blob(extra)
        elif extra is not None:
            _need(type(extra) is list and len(extra) == 2 and type(extra[0]) is list,
                  "per-channel parameters are malformed")
            cq = SymmPerChannelQuantParams(
                tuple(_float(s, "a per-channel scale") for s in extra[0]),
                _int(extra[1], "a channel dimension"))
        scale = _float(scale, "an operand scale")
        return Operand(_type(OperandType, typ, "an operand type"),
                       tuple(_ints(dims, "a dimension")), scale, _int(zp, "a zero point"),
                       _enum(OperandLifeTime, lifetime, "an operand lifetime"),
                       DataLocation(*_ints(loc, "an operand location")), cq,
                       _int(consumers, "a consumer count"))


class _FileReader(_Reader):
    """A :class:`_Reader` whose raw part (``size`` bytes from ``start``) stays in the file
    ``f``: each byte string is read from there into its own buffer when it is decoded."""

    def __init__(self, f, start: int, size: int):
        self.f, self.start, self.size = f, start, size

    def blob(self, node, make=bytes):
        off, n = self.span(node)
        self.f.seek(self.start + off)
        buf = _read_exactly(self.f, n)
        if buf is None:
            raise GeneralFailure("the cache payload ends before a byte string it holds (the "
                                 "file changed while it was read)")
        return buf if make is bytearray else make(buf)
