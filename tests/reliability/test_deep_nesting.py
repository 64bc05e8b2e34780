"""IF / WHILE nested deeper than the driver can run: validation must not recurse (a deep model
used to raise RecursionError at prepare), depths up to the documented limit run on both
devices, and deeper ones are INVALID_ARGUMENT naming the limit."""

from __future__ import annotations

import numpy as np
import pytest

from hal.builder import make_request, read_outputs
from hal.errors import ErrorStatus, HalError
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
from hal.validation import MAX_SUBGRAPH_NESTING

LT = OperandLifeTime
OT = OperandType


@pytest.fixture(scope="module", params=["reference", "opencl"])
def device(request):
    from clnn.devices import open_device

    try:
        return open_device(request.param)
    except Exception as e:  # no pyopencl / no OpenCL platform here
        pytest.skip(f"the {request.param} device is not available: {e}")


def _const_bool(offset: int) -> Operand:  # operand_values: b"\x01\x00" (true, false)
    return Operand(OT.TENSOR_BOOL8, (1,), lifetime=LT.CONSTANT_COPY,
                   location=DataLocation(0, offset, 1))


def _if_level(child: int | None) -> Subgraph:
    """x -> IF(true, child, child, x) -> y; the innermost level is RELU(x) -> y."""
    x = Operand(OT.TENSOR_FLOAT32, (2,), lifetime=LT.SUBGRAPH_INPUT)
    y = Operand(OT.TENSOR_FLOAT32, (2,), lifetime=LT.SUBGRAPH_OUTPUT)
    if child is None:
        return Subgraph([x, y], [Operation(OperationType.RELU, [0], [1])], [0], [1])
    ref = Operand(OT.SUBGRAPH, (), lifetime=LT.SUBGRAPH, location=DataLocation(0, child, 0))
    return Subgraph([x, y, _const_bool(0), ref],
                    [Operation(OperationType.IF, [2, 3, 3, 0], [1])], [0], [1])


def _while_level(child: int | None, main: bool = False) -> Subgraph:
    """(x, flag) -> WHILE(flag, body = child)(x, flag) -> y and flag AND false -> flag': a
    level is a loop body that runs once (its flag turns false) and holds the next loop. The
    innermost body is RELU. Subgraph 0 is the condition (flag AND flag)."""
    x = Operand(OT.TENSOR_FLOAT32, (2,), lifetime=LT.SUBGRAPH_INPUT)
    y = Operand(OT.TENSOR_FLOAT32, (2,), lifetime=LT.SUBGRAPH_OUTPUT)
    flag_lt = LT.CONSTANT_COPY if main else LT.SUBGRAPH_INPUT
    flag = Operand(OT.TENSOR_BOOL8, (1,), lifetime=flag_lt,
                   location=DataLocation(0, 0, 1) if main else DataLocation())
    operands = [x, y, flag]
    ops = []
    if child is None:
        ops.append(Operation(OperationType.RELU, [0], [1]))
    else:
        operands += [Operand(OT.SUBGRAPH, (), lifetime=LT.SUBGRAPH,
                             location=DataLocation(0, 0, 0)),
                     Operand(OT.SUBGRAPH, (), lifetime=LT.SUBGRAPH,
                             location=DataLocation(0, child, 0))]
        ops.append(Operation(OperationType.WHILE, [3, 4, 0, 2], [1]))
    if main:
        return Subgraph(operands, ops, [0], [1])
    operands += [_const_bool(1), Operand(OT.TENSOR_BOOL8, (1,), lifetime=LT.SUBGRAPH_OUTPUT)]
    n = len(operands)
    ops.append(Operation(OperationType.LOGICAL_AND, [2, n - 2], [n - 1]))
    return Subgraph(operands, ops, [0, 2], [1, n - 1])


def _condition() -> Subgraph:
    x = Operand(OT.TENSOR_FLOAT32, (2,), lifetime=LT.SUBGRAPH_INPUT)
    flag = Operand(OT.TENSOR_BOOL8, (1,), lifetime=LT.SUBGRAPH_INPUT)
    out = Operand(OT.TENSOR_BOOL8, (1,), lifetime=LT.SUBGRAPH_OUTPUT)
    return Subgraph([x, flag, out], [Operation(OperationType.LOGICAL_AND, [1, 1], [2])],
                    [0, 1], [2])


def nested(depth: int, op: str = "IF") -> Model:
    """main -> level 1 -> ... -> level ``depth`` (RELU): ``depth`` nested IF (or WHILE)
    operations, built directly (the builder copies every level's subgraphs: quadratic)."""
    if op == "IF":
        levels = [_if_level(None)] + [_if_level(k) for k in range(depth - 1)]
        return Model(_if_level(depth - 1), levels, b"\x01\x00")
    levels = [_condition(), _while_level(None)] + [_while_level(k) for k in range(1, depth)]
    return Model(_while_level(depth, main=True), levels, b"\x01\x00")


def _run(device, model):
    x = np.array([-1.5, 2.0], np.float32)
    req = make_request(model, [x])
    result = device.prepare_model(model).execute_synchronously(req)
    assert result.status == ErrorStatus.NONE, result.message
    return read_outputs(model, req, result.output_shapes)[0], x


@pytest.mark.parametrize("depth", [10, MAX_SUBGRAPH_NESTING])
@pytest.mark.parametrize("op", ["IF", "WHILE"])
def test_nesting_up_to_the_limit_runs(device, depth, op):
    got, x = _run(device, nested(depth, op))
    np.testing.assert_array_equal(got, np.maximum(x, 0))


@pytest.mark.parametrize("depth", [MAX_SUBGRAPH_NESTING + 1, 1000, 5000])
@pytest.mark.parametrize("op", ["IF", "WHILE"])
def test_nesting_past_the_limit_is_invalid_argument(device, depth, op):
    model = nested(depth, op)
    for call in (device.get_supported_operations, device.prepare_model):
        with pytest.raises(HalError) as e:
            call(model)
        assert e.value.status == ErrorStatus.INVALID_ARGUMENT
        assert f"nested {depth} levels" in e.value.reason
        assert str(MAX_SUBGRAPH_NESTING) in e.value.reason


def test_long_reference_cycle_is_invalid_argument():
    """A cycle through 5000 subgraphs is found without recursion."""
    from hal.validation import validate_model

    model = nested(5000)
    model.referenced[0] = _if_level(len(model.referenced) - 1)  # close the loop
    with pytest.raises(HalError) as e:
        validate_model(model)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT and "cycle" in e.value.reason
