"""Reading the conformance corpus (shared/cts/FORMAT.md): gzipped JSON files of tests, and
building hal Models and Requests from its tests.

A file that cannot be read, or a test in it the runner cannot name, is a CorpusError that
names the file; :func:`iter_corpus` can collect those instead, so that one damaged file does
not stop a run over the rest (clnn/suites/cts.py reports them as ``error`` results).
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path

import numpy as np

from hal.types import (
    NUMPY_DTYPE,
    DataLocation,
    HostMemory,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Request,
    RequestArgument,
    Subgraph,
    SymmPerChannelQuantParams,
)
from hal.values import array_to_bytes


class CorpusError(ValueError):
    """A corpus file, or a test in it, that cannot be read; the reason names the file."""


def read_corpus_file(path: str | os.PathLike) -> dict:
    """One corpus file's document, with a list of tests; a CorpusError naming the file when it
    is not gzip, not JSON or not shaped as shared/cts/FORMAT.md says."""
    name = Path(path).name
    try:
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
    except (OSError, EOFError, ValueError, zlib.error) as e:  # ValueError: JSON, UTF-8
        raise CorpusError(f"{name} cannot be read: {type(e).__name__}: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tests"), list):
        raise CorpusError(f"{name} is not a corpus file: it has no list of \"tests\"")
    return doc


def iter_corpus(corpus: str | os.PathLike, pattern: str | None = None, errors=None):
    """Yield (spec, version, test dict) for every test (optionally matching a -k expression).

    A file that cannot be read, or a test in it without a name or a main graph, raises a
    CorpusError; when ``errors`` is a list, (spec, name, reason) is appended to it instead and
    the other files go on."""
    for path in sorted(Path(corpus).glob("*.json.gz")):
        stem = path.name.removesuffix(".json.gz")
        try:
            doc = read_corpus_file(path)
        except CorpusError as e:
            if errors is None:
                raise
            errors.append((stem, path.name, str(e)))
            continue
        spec = doc.get("spec") if isinstance(doc.get("spec"), str) else stem
        for k, t in enumerate(doc["tests"]):
            if not (isinstance(t, dict) and isinstance(t.get("name"), str)
                    and isinstance(t.get("main"), dict)):
                reason = f"{path.name}: test {k} has no name or no main graph"
                if errors is None:
                    raise CorpusError(reason)
                errors.append((spec, f"{path.name}#{k}", reason))
                continue
            if pattern and not _matches(pattern, spec, t["name"]):
                continue
            yield spec, doc.get("version"), t


def _matches(pattern: str, spec: str, name: str) -> bool:
    """``pattern`` is a pytest-style -k expression of substrings and globs
    (clnn/suites/kexpr.py)."""
    from clnn.suites.kexpr import matches

    return matches(pattern, spec, name)


# ----------------------------------------------------------------------------- building
OT = OperandType
#: constants up to this many bytes are CONSTANT_COPY in operand_values; larger ones go to a pool
COPY_LIMIT = 128


def array_of(operand: dict) -> np.ndarray:
    t = OT[operand["type"]]
    data = operand["data"]
    dims = tuple(operand["dimensions"])
    arr = np.asarray(data if data is not None else [], dtype=NUMPY_DTYPE[t])
    if dims and arr.size == int(np.prod(dims)):
        arr = arr.reshape(dims)
    return arr


class _ConstantSink:
    def __init__(self):
        self.values = bytearray()
        self.pool = bytearray()

    def place(self, arr: np.ndarray, lifetime: OperandLifeTime) -> DataLocation:
        data = array_to_bytes(arr)
        if lifetime == OperandLifeTime.CONSTANT_COPY and len(data) <= COPY_LIMIT:
            buf, pool = self.values, 0
        else:
            buf, pool = self.pool, 0
            lifetime = OperandLifeTime.CONSTANT_REFERENCE
        while len(buf) % 8:
            buf.append(0)
        off = len(buf)
        buf.extend(data)
        return lifetime, DataLocation(pool, off, len(data))


def _enum(kind, name, what: str):
    try:
        return kind[name]
    except (KeyError, TypeError):
        raise ValueError(f"{what} {name!r} is unknown") from None


def build_subgraph(sg: dict, sink: _ConstantSink, dynamic_outputs: bool = False) -> Subgraph:
    operands = []
    for k, o in enumerate(sg["operands"]):
        t = _enum(OT, o["type"], f"operand {k}: operand type")
        lt = _enum(OperandLifeTime, o["lifetime"], f"operand {k}: lifetime")
        cq = o.get("channelQuant")
        extra = (SymmPerChannelQuantParams(tuple(cq["scales"]), cq["channelDim"])
                 if cq else None)
        dims = tuple(o["dimensions"])
        loc = DataLocation()
        if lt in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
            lt, loc = sink.place(array_of(o), lt)
        elif lt == OperandLifeTime.SUBGRAPH:
            loc = DataLocation(0, int(o["data"][0]), 0)
        operands.append(Operand(t, dims, float(o.get("scale", 0.0)), int(o.get("zeroPoint", 0)),
                                lt, loc, extra))
    if dynamic_outputs:
        for i in sg["outputIndexes"]:
            operands[i].dimensions = tuple(0 for _ in operands[i].dimensions)
    ops = [Operation(_enum(OperationType, op["type"], f"operation {k}: type"),
                     list(op["inputs"]), list(op["outputs"]))
           for k, op in enumerate(sg["operations"])]
    return Subgraph(operands, ops, list(sg["inputIndexes"]), list(sg["outputIndexes"]))


def build_model(test: dict, dynamic_outputs: bool = False) -> Model:
    sink = _ConstantSink()
    main = build_subgraph(test["main"], sink, dynamic_outputs)
    refs = [build_subgraph(s, sink) for s in test.get("referenced", [])]
    pools = [HostMemory(bytes(sink.pool))] if sink.pool else []
    return Model(main, refs, bytes(sink.values), pools, bool(test.get("isRelaxed")))


def build_request(test: dict, shrink_outputs: bool = False, output_dims: bool = False):
    """Request with one input pool and one output pool; returns (request, output slices).
    ``output_dims``: the output arguments give the expected dimensions."""
    sg = test["main"]
    inp = bytearray()
    args = []
    for i in sg["inputIndexes"]:
        if sg["operands"][i]["data"] == []:
            # the CTS harness passes an input without data as omitted (setInput(nullptr))
            args.append(RequestArgument(True, DataLocation(), ()))
            continue
        data = array_to_bytes(array_of(sg["operands"][i]))
        args.append(RequestArgument(False, DataLocation(0, len(inp), len(data)), ()))
        inp.extend(data)
        while len(inp) % 8:
            inp.append(0)
    out_args, slices = [], []
    off = 0
    for i in sg["outputIndexes"]:
        o = sg["operands"][i]
        n = NUMPY_DTYPE[OT[o["type"]]].itemsize * int(np.prod(o["dimensions"] or [1]))
        length = n - 1 if (shrink_outputs and n > 0) else n
        dims = tuple(o["dimensions"]) if output_dims else ()
        out_args.append(RequestArgument(False, DataLocation(1, off, length), dims))
        slices.append((off, n))
        off += n + (-n) % 8
    pools = [HostMemory(bytes(inp) or b"\0"), HostMemory(max(off, 1))]
    return Request(args, out_args, pools), slices
