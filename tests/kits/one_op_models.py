"""Small helpers for op tests: a one-operation model, run on a device, with error status.

    m = one_op_model("ADD", [tensor("TENSOR_FLOAT32", [2], x), tensor("TENSOR_FLOAT32", [2]),
                             scalar("INT32", 0)], [tensor("TENSOR_FLOAT32", [2])])
    (y,) = run(m, [x, y_in])            # raises HalError on a failed execution
    status, shapes, outs = execute(m, [x, y_in])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hal.errors import ErrorStatus, HalError
from hal.reference import ReferenceDevice
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


@dataclass
class Spec:
    type: str
    dims: tuple = ()
    value: object = None  # a value makes the operand a constant; None makes it a model input
    scale: float = 0.0
    zero_point: int = 0
    channel_quant: tuple | None = None  # (scales, channel_dim)
    omitted: bool = False
    extra: dict = field(default_factory=dict)


def tensor(type_, dims, value=None, scale=0.0, zero_point=0, channel_quant=None) -> Spec:
    return Spec(type_, tuple(dims), value, scale, zero_point, channel_quant)


def scalar(type_, value) -> Spec:
    return Spec(type_, (), value)


def omitted(type_="TENSOR_FLOAT32") -> Spec:
    return Spec(type_, (), None, omitted=True)


def _operand(s: Spec, lifetime, values: bytearray, pool: bytearray) -> Operand:
    t = OperandType[s.type]
    cq = SymmPerChannelQuantParams(tuple(s.channel_quant[0]), s.channel_quant[1]) \
        if s.channel_quant else None
    loc = DataLocation()
    if lifetime == OperandLifeTime.CONSTANT_COPY:
        data = array_to_bytes(np.asarray(s.value, dtype=NUMPY_DTYPE[t]))
        if len(data) > 128:
            lifetime = OperandLifeTime.CONSTANT_REFERENCE
            buf = pool
        else:
            buf = values
        while len(buf) % 8:
            buf.append(0)
        loc = DataLocation(0, len(buf), len(data))
        buf.extend(data)
    return Operand(t, tuple(s.dims), s.scale, s.zero_point, lifetime, loc, cq)


def one_op_model(op: str | OperationType, inputs: list[Spec], outputs: list[Spec],
                 relaxed: bool = False) -> Model:
    """Inputs with a value become constants, omitted() ones NO_VALUE, the rest model inputs."""
    values, pool = bytearray(), bytearray()
    operands, model_inputs = [], []
    for s in inputs:
        if s.omitted:
            lt = OperandLifeTime.NO_VALUE
        elif s.value is not None:
            lt = OperandLifeTime.CONSTANT_COPY
        else:
            lt = OperandLifeTime.SUBGRAPH_INPUT
            model_inputs.append(len(operands))
        operands.append(_operand(s, lt, values, pool))
    n_in = len(operands)
    for s in outputs:
        operands.append(_operand(s, OperandLifeTime.SUBGRAPH_OUTPUT, values, pool))
    op_type = OperationType[op] if isinstance(op, str) else op
    operation = Operation(op_type, list(range(n_in)), list(range(n_in, len(operands))))
    main = Subgraph(operands, [operation], model_inputs, list(range(n_in, len(operands))))
    return Model(main, [], bytes(values), [HostMemory(bytes(pool))] if pool else [], relaxed)


def make_request(model: Model, inputs, out_sizes=None) -> Request:
    sg = model.main
    inp = bytearray()
    args = []
    for i, x in zip(sg.input_indexes, inputs):
        if x is None:  # an omitted optional input (setInput(nullptr))
            args.append(RequestArgument(True, DataLocation(), ()))
            continue
        op = sg.operands[i]
        arr = np.asarray(x, dtype=NUMPY_DTYPE[op.type])
        data = array_to_bytes(arr)
        dims = tuple(arr.shape) if arr.ndim else ()
        args.append(RequestArgument(False, DataLocation(0, len(inp), len(data)), dims))
        inp.extend(data)
    outs, off = [], 0
    for k in range(len(sg.output_indexes)):
        n = out_sizes[k] if out_sizes else 1 << 20
        outs.append(RequestArgument(False, DataLocation(1, off, n), ()))
        off += n
    return Request(args, outs, [HostMemory(bytes(inp) or b"\0"), HostMemory(off)])


def execute(model: Model, inputs, device=None, out_sizes=None, **kw):
    """Prepare and execute; returns (status, output shapes, output arrays or None)."""
    device = device or ReferenceDevice()
    try:
        prepared = device.prepare_model(model)
    except HalError as e:
        return e.status, [], None
    req = make_request(model, inputs, out_sizes)
    r = prepared.execute_synchronously(req, **kw)
    if r.status != ErrorStatus.NONE:
        return r.status, r.output_shapes, None
    arrays = []
    view = req.pools[1].view()
    for arg, shape, i in zip(req.outputs, r.output_shapes, model.main.output_indexes):
        t = model.main.operands[i].type
        dt = NUMPY_DTYPE[t]
        n = int(np.prod(shape.dimensions)) * dt.itemsize
        raw = bytes(view[arg.location.offset: arg.location.offset + n])
        a = np.frombuffer(raw, dtype=np.uint8 if dt == np.bool_ else dt)
        arrays.append(a.astype(dt).reshape(shape.dimensions))
    return r.status, r.output_shapes, arrays


def run(model: Model, inputs, device=None):
    status, _, arrays = execute(model, inputs, device)
    if status != ErrorStatus.NONE:
        raise HalError(f"execution failed with {status.name}", status)
    return arrays


def rejected(model: Model, device=None) -> str:
    """Assert both get_supported_operations and prepare_model reject the model with
    INVALID_ARGUMENT; return the reason."""
    device = device or ReferenceDevice()
    reasons = []
    for call in (device.get_supported_operations, device.prepare_model):
        try:
            call(model)
        except HalError as e:
            assert e.status == ErrorStatus.INVALID_ARGUMENT, e
            reasons.append(e.reason)
        else:
            raise AssertionError(f"{call.__name__} accepted an invalid model")
    assert reasons[0], "the rejection has no reason"
    return reasons[0]
