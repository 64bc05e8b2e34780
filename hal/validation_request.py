"""validate_request (ValidateHal for requests): a request against a model's main subgraph: counts,
pools and locations in range, dimensions compatible with the model's, omitted inputs only where
the operations that read them allow it."""

from __future__ import annotations

import dataclasses

from hal.errors import InvalidArgument
from hal.types import (
    NUMPY_DTYPE,
    Memory,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Request,
    Subgraph,
    is_scalar_type,
)
from hal.types_memory import is_writable
from hal.validation import UINT32_MAX, validate_operation

OT = OperandType
LT = OperandLifeTime


def _fail(msg: str):
    raise InvalidArgument(msg)


def request_dimensions(what: str, op: Operand, arg_dims) -> tuple[int, ...]:
    """Combine an operand's dimensions with a request argument's; reject mismatches."""
    dims = tuple(op.dimensions)
    arg_dims = tuple(arg_dims or ())
    if not arg_dims:
        return dims
    if arg_dims == dims and not is_scalar_type(op.type):
        return arg_dims  # the model's own (validated) dimensions: nothing to check
    if is_scalar_type(op.type):
        _fail(f"{what} is a scalar ({op.type.name}) but the request gives dimensions "
              f"{list(arg_dims)}")
    if any(a < 0 for a in arg_dims):
        _fail(f"{what}: the request gives negative dimensions {list(arg_dims)}")
    if any(a > UINT32_MAX for a in arg_dims):
        _fail(f"{what}: the request gives dimensions {list(arg_dims)} above the uint32 "
              f"limit {UINT32_MAX}")
    if dims and len(dims) != len(arg_dims):
        _fail(f"{what}: the request gives rank {len(arg_dims)} ({list(arg_dims)}), the model "
              f"operand has rank {len(dims)} ({list(dims)})")
    for k, (d, a) in enumerate(zip(dims, arg_dims)):
        if d != 0 and d != a:
            _fail(f"{what}: the request gives dimension {k} as {a}, the model says {d}")
    return arg_dims


class _ArgName:
    """A request argument's name in a message ("request input 0 (operand 3, TENSOR_FLOAT32)"),
    formatted only when a message is: an execution validates every argument of every request,
    and the valid ones need no name."""

    __slots__ = ("kind", "k", "i", "op")

    def __init__(self, kind: str, k: int, i: int, op: Operand):
        self.kind, self.k, self.i, self.op = kind, k, i, op

    def __str__(self) -> str:
        return f"request {self.kind} {self.k} (operand {self.i}, {self.op.type.name})"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def validate_request(request: Request, model: Model, allow_device_memory=None):
    """Raise InvalidArgument unless the request fits the model's main subgraph.

    ``allow_device_memory(pool)`` decides whether a non-host pool (a device Buffer) is valid.
    """
    sg = model.main
    for kind, args, idxs in (("input", request.inputs, sg.input_indexes),
                             ("output", request.outputs, sg.output_indexes)):
        if len(args) != len(idxs):
            _fail(f"the request has {len(args)} {kind}s, the model has {len(idxs)}")
        for k, (arg, i) in enumerate(zip(args, idxs)):
            op = sg.operands[i]
            what = _ArgName(kind, k, i, op)
            loc = arg.location
            if arg.has_no_value:
                if loc.pool_index or loc.offset or loc.length or arg.dimensions:
                    _fail(f"{what} has no value but has a location or dimensions")
                if kind == "output":
                    _fail(f"{what}: an output must have a value")
                continue
            if not 0 <= loc.pool_index < len(request.pools):
                _fail(f"{what} names pool {loc.pool_index}, the request has "
                      f"{len(request.pools)} pools")
            pool = request.pools[loc.pool_index]
            dims = request_dimensions(what, op, arg.dimensions)
            if not isinstance(pool, Memory):
                if allow_device_memory is None or not allow_device_memory(pool):
                    _fail(f"{what} names pool {loc.pool_index}, which is not a valid memory")
                continue
            if loc.offset < 0 or loc.length < 0 or loc.offset + loc.length > pool.size:
                _fail(f"{what}: offset {loc.offset} + length {loc.length} exceeds the "
                      f"{pool.size}-byte pool {loc.pool_index}")
            if kind == "output" and not is_writable(pool):
                _fail(f"{what} is in pool {loc.pool_index}, a read-only memory: an output "
                      "needs a writable one")
            if kind == "input":
                if not is_scalar_type(op.type) and (not dims or any(d == 0 for d in dims)):
                    _fail(f"{what} has unknown dimensions {list(dims)}; the request must give "
                          "them")
                n = NUMPY_DTYPE[op.type].itemsize
                for d in dims:
                    n *= d
                if loc.length != n:
                    _fail(f"{what} needs {n} bytes for dimensions {list(dims)}, its location "
                          f"has length {loc.length}")


def check_omitted_inputs(request: Request, model: Model):
    """A request input given without a value (has_no_value) is only valid where every
    operation that reads it accepts an omitted operand there; InvalidArgument naming the input
    and the operation otherwise. Checked by re-validating those operations with the operand
    omitted, so the rule is the one a model with a NO_VALUE operand meets."""
    sg = model.main
    omitted = {i: k for k, (arg, i) in enumerate(zip(request.inputs, sg.input_indexes))
               if arg.has_no_value}
    if not omitted:
        return
    operands = list(sg.operands)
    for i in omitted:
        operands[i] = dataclasses.replace(operands[i], lifetime=LT.NO_VALUE)
    view = Subgraph(operands, sg.operations, sg.input_indexes, sg.output_indexes)
    for j, operation in enumerate(sg.operations):
        read = [i for i in operation.inputs if i in omitted]
        if not read:
            continue
        try:
            validate_operation(model, view, j, operation)
        except InvalidArgument as e:
            i = read[0]
            raise InvalidArgument(
                f"request input {omitted[i]} (operand {i}) has no value, but "
                f"{operation.type.name} (operation {j}) needs it: "
                f"{e.reason}") from None
