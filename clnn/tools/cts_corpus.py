"""Reading the NNAPI CTS corpus (JSON, see shared/cts/FORMAT.md): its tests as hal Models and
Requests, constants laid out as the NDK would (small ones copied, large ones in a pool)."""

from __future__ import annotations

import fnmatch
import gzip
import json
import os
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

OT = OperandType
#: constants up to this many bytes are CONSTANT_COPY in operand_values; larger ones go to a pool
COPY_LIMIT = 128


def iter_corpus(corpus: str | os.PathLike, pattern: str | None = None):
    """Yield (spec, version, test dict) for every test (optionally matching a glob/substring)."""
    for path in sorted(Path(corpus).glob("*.json.gz")):
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
        for t in doc["tests"]:
            if pattern and not _matches(pattern, doc["spec"], t["name"]):
                continue
            yield doc["spec"], doc.get("version"), t


def _matches(pattern: str, spec: str, name: str) -> bool:
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(spec, pattern)
    return pattern in name or pattern in spec


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


def build_subgraph(sg: dict, sink: _ConstantSink, dynamic_outputs: bool = False) -> Subgraph:
    operands = []
    for o in sg["operands"]:
        t = OT[o["type"]]
        lt = OperandLifeTime[o["lifetime"]]
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
    ops = [Operation(OperationType[op["type"]], list(op["inputs"]), list(op["outputs"]))
           for op in sg["operations"]]
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
