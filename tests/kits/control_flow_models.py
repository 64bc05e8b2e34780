"""Models with control flow built operand by operand (IF / WHILE need referenced subgraphs,
which the one-operation models cannot express): a tiny subgraph builder and a counting loop."""

from __future__ import annotations

import numpy as np

from hal.types import (
    DataLocation,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
)
from hal.values import array_to_bytes

LT = OperandLifeTime
OT = OperandType
F32 = "TENSOR_FLOAT32"


class Graph:
    """A tiny subgraph builder: constants go into one shared operand-values buffer."""

    def __init__(self, values: bytearray):
        self.values = values
        self.operands: list[Operand] = []
        self.operations: list[Operation] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def add(self, type_, dims=(), lifetime=LT.TEMPORARY_VARIABLE, scale=0.0, zp=0,
            location=None):
        self.operands.append(Operand(OT[type_], tuple(dims), scale, zp, lifetime,
                                     location or DataLocation()))
        return len(self.operands) - 1

    def input(self, type_, dims=(), **kw):
        i = self.add(type_, dims, LT.SUBGRAPH_INPUT, **kw)
        self.inputs.append(i)
        return i

    def output(self, type_, dims=(), **kw):
        i = self.add(type_, dims, LT.SUBGRAPH_OUTPUT, **kw)
        self.outputs.append(i)
        return i

    def const(self, type_, dims, value):
        data = array_to_bytes(np.asarray(value, dtype=_dtype(type_)))
        while len(self.values) % 8:
            self.values.append(0)
        loc = DataLocation(0, len(self.values), len(data))
        self.values.extend(data)
        return self.add(type_, dims, LT.CONSTANT_COPY, location=loc)

    def ref(self, subgraph_index):
        return self.add("SUBGRAPH", (), LT.SUBGRAPH, location=DataLocation(0, subgraph_index, 0))

    def op(self, type_, ins, outs):
        self.operations.append(Operation(OperationType[type_], list(ins), list(outs)))

    def subgraph(self):
        return Subgraph(self.operands, self.operations, self.inputs, self.outputs)


def _dtype(type_):
    return {"TENSOR_FLOAT32": np.float32, "TENSOR_INT32": np.int32, "INT32": np.int32,
            "TENSOR_BOOL8": np.bool_}[type_]


def counter_model(limit_dims=(1,), body_amount=1, extra_output=False):
    """WHILE (i < n) { i += body_amount; acc = acc + 1.5 }: m = 2 outputs (acc, i), n = 1."""
    values = bytearray()
    cond = Graph(values)
    c_acc, c_i, c_n = cond.input(F32, [1]), cond.input("TENSOR_INT32", [1]), \
        cond.input("TENSOR_INT32", limit_dims)
    c_out = cond.output("TENSOR_BOOL8", [1])
    cond.op("LESS", [c_i, c_n], [c_out])
    del c_acc
    body = Graph(values)
    b_acc, b_i = body.input(F32, [1]), body.input("TENSOR_INT32", [1])
    body.input("TENSOR_INT32", limit_dims)
    o_acc, o_i = body.output(F32, [1]), body.output("TENSOR_INT32", [1])
    step = body.const("TENSOR_INT32", [1], [body_amount])
    half = body.const(F32, [1], [1.5])
    act = body.const("INT32", [], 0)
    body.op("ADD", [b_acc, half, act], [o_acc])
    body.op("ADD", [b_i, step, act], [o_i])
    main = Graph(values)
    cref, bref = main.ref(0), main.ref(1)
    acc0 = main.input(F32, [1])
    i0 = main.input("TENSOR_INT32", [1])
    n = main.input("TENSOR_INT32", [1])
    acc = main.output(F32, [0])
    i = main.output("TENSOR_INT32", [1]) if extra_output else main.add("TENSOR_INT32", [1])
    main.op("WHILE", [cref, bref, acc0, i0, n], [acc, i])
    return Model(main.subgraph(), [cond.subgraph(), body.subgraph()], bytes(values))
