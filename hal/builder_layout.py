"""ModelBuilder.finish internals: the layout of constant values and pools, run order (Kahn's
algorithm) and the merging of models referenced by SUBGRAPH operands (IF, WHILE)."""

from __future__ import annotations

import dataclasses
import heapq

from hal.errors import BuilderError, ResultCode
from hal.types import (
    DataLocation,
    HostMemory,
    Memory,
    Model,
    Operand,
    OperandLifeTime,
    Operation,
    Subgraph,
)

LT = OperandLifeTime

#: ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES
MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES = 128
SMALL_ALIGN = 8
LARGE_ALIGN = 64


def bad_data(reason: str):
    raise BuilderError(ResultCode.BAD_DATA, reason)


def align(buf: bytearray, n: int):
    buf.extend(b"\0" * (-len(buf) % n))


@dataclasses.dataclass
class Value:
    """Where a constant's bytes come from, until finish() lays them out."""

    data: bytes | None = None  # copied bytes (CONSTANT_COPY or the builder's own pool)
    memory: Memory | None = None  # set_operand_value_from_memory
    offset: int = 0
    length: int = 0
    model: Model | None = None  # set_operand_value_from_model (a SUBGRAPH operand)


def run_order(operations: list[Operation]) -> list[Operation]:
    """Kahn's algorithm, keeping the order of addition among ready operations."""
    producer = {}
    for k, op in enumerate(operations):
        for o in op.outputs:
            if o in producer:
                bad_data(f"finish: operand {o} is written by operations {producer[o]} "
                          f"and {k}")
            producer[o] = k
    n = len(operations)
    waiting = [0] * n
    consumers: list[list[int]] = [[] for _ in range(n)]
    for k, op in enumerate(operations):
        for p in {producer[i] for i in op.inputs if i in producer}:
            waiting[k] += 1
            consumers[p].append(k)
    ready = [k for k in range(n) if waiting[k] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for c in consumers[k]:
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, c)
    if len(order) < n:
        left = sorted(set(range(n)) - set(order))
        bad_data(f"finish: operations {left} form a cycle")
    return [dataclasses.replace(operations[k], inputs=list(operations[k].inputs),
                                outputs=list(operations[k].outputs)) for k in order]

def build_model(operands_in: list[Operand], operations_in: list[Operation],
                values_in: dict[int, Value], no_value: set[int], inputs: list[int],
                outputs: list[int], relaxed: bool) -> Model:
    """The Model of a builder's state: constants laid out (CONSTANT_COPY up to
    MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES bytes, else CONSTANT_REFERENCE into a pool the
    builder owns), lifetimes and consumer counts set, operations in run order."""
    values, own_pool = bytearray(), bytearray()
    pools: list[Memory] = []
    pool_ids: dict[int, int] = {}
    referenced: list[Subgraph] = []
    model_ids: dict[int, int] = {}

    def pool_index(mem: Memory) -> int:
        if id(mem) not in pool_ids:
            pool_ids[id(mem)] = len(pools)
            pools.append(mem)
        return pool_ids[id(mem)]

    own_pool_index = None
    large = [i for i, v in values_in.items()
             if v.data is not None and len(v.data) > MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES]
    if large:
        own_pool_index = len(pools)
        pools.append(HostMemory(0))  # replaced below, once filled
    operands = []
    for i, op in enumerate(operands_in):
        op = dataclasses.replace(op, location=DataLocation(), number_of_consumers=0)
        v = values_in.get(i)
        if i in no_value:
            op.lifetime = LT.NO_VALUE
        elif v is None:
            op.lifetime = LT.TEMPORARY_VARIABLE
        elif v.model is not None:
            op.lifetime = LT.SUBGRAPH
            op.location = DataLocation(0, merge_model(
                v.model, values, pool_index, referenced, model_ids), 0)
        elif v.memory is not None:
            op.lifetime = LT.CONSTANT_REFERENCE
            op.location = DataLocation(pool_index(v.memory), v.offset, v.length)
        elif len(v.data) > MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES:
            align(own_pool, LARGE_ALIGN)
            op.lifetime = LT.CONSTANT_REFERENCE
            op.location = DataLocation(own_pool_index, len(own_pool), len(v.data))
            own_pool.extend(v.data)
        else:
            align(values, SMALL_ALIGN)
            op.lifetime = LT.CONSTANT_COPY
            op.location = DataLocation(0, len(values), len(v.data))
            values.extend(v.data)
        operands.append(op)
    if own_pool_index is not None:
        pools[own_pool_index] = pool = HostMemory(own_pool)
        pool.private = True
    for i in inputs:
        operands[i].lifetime = LT.SUBGRAPH_INPUT
    for i in outputs:
        operands[i].lifetime = LT.SUBGRAPH_OUTPUT
    operations = run_order(operations_in)
    for op in operations:
        for i in op.inputs:
            operands[i].number_of_consumers += 1
    main = Subgraph(operands, operations, list(inputs), list(outputs))
    return Model(main, referenced, bytes(values), pools, relaxed)

def merge_model(model: Model, values: bytearray, pool_index, referenced: list[Subgraph],
                 model_ids: dict[int, int]) -> int:
    """Append ``model``'s subgraphs to ``referenced`` (its main first) with their constant
    locations moved into this model's values and pools; return its main's index."""
    if id(model) in model_ids:
        return model_ids[id(model)]
    base = len(referenced)
    model_ids[id(model)] = base
    align(values, SMALL_ALIGN)
    value_base = len(values)
    values.extend(model.operand_values)
    pool_map = [pool_index(p) for p in model.pools]
    for sg in [model.main] + list(model.referenced):
        operands = []
        for op in sg.operands:
            loc = op.location
            if op.lifetime == LT.CONSTANT_COPY:
                loc = DataLocation(0, loc.offset + value_base, loc.length)
            elif op.lifetime == LT.CONSTANT_REFERENCE and loc.pool_index < len(pool_map):
                loc = DataLocation(pool_map[loc.pool_index], loc.offset, loc.length)
            elif op.lifetime == LT.SUBGRAPH:
                # index into model.referenced -> index into ours (its main sits at base)
                loc = DataLocation(0, base + 1 + loc.offset, 0)
            operands.append(dataclasses.replace(op, location=loc))
        operations = [dataclasses.replace(o, inputs=list(o.inputs), outputs=list(o.outputs))
                      for o in sg.operations]
        referenced.append(Subgraph(operands, operations, list(sg.input_indexes),
                                   list(sg.output_indexes)))
    return base
