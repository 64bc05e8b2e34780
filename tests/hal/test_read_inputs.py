"""hal.driver.read_inputs: copies of the request's inputs, or read-only views of its memory
(copy=False, for a device that only uploads them before the execution returns)."""

import numpy as np
import pytest

from hal.builder import make_request
from hal.driver import read_inputs
from hal.types import (
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
)
from hal.values import array_view_of_bytes

LT = OperandLifeTime


def _model(t=OperandType.TENSOR_FLOAT32, dims=(2, 3)):
    ops = [Operand(t, dims, lifetime=LT.SUBGRAPH_INPUT),
           Operand(t, dims, lifetime=LT.SUBGRAPH_INPUT),
           Operand(t, dims, lifetime=LT.SUBGRAPH_OUTPUT)]
    return Model(Subgraph(ops, [Operation(OperationType.ADD, [0, 1], [2])], [0, 1], [2]))


def test_copies_by_default_and_views_without_copy():
    model = _model()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = -a
    req = make_request(model, [a, b])
    copied = read_inputs(model, req)
    viewed = read_inputs(model, req, copy=False)
    pool = np.frombuffer(req.pools[0].view(), np.uint8)
    for got, want in zip(copied, (a, b)):
        np.testing.assert_array_equal(got, want)
        assert got.flags.writeable and not np.shares_memory(got, pool)
    for got, want in zip(viewed, (a, b)):
        np.testing.assert_array_equal(got, want)
        assert not got.flags.writeable  # a view: the request's memory is the client's
        with pytest.raises(ValueError):
            got[0, 0] = 1.0
        assert np.shares_memory(got, pool)


def test_bool_inputs_are_converted_either_way():
    data = bytes([0, 1, 2, 0])
    v = array_view_of_bytes(memoryview(data), OperandType.TENSOR_BOOL8, (2, 2))
    assert v.dtype == np.bool_ and v.tolist() == [[False, True], [True, False]]


def test_an_output_in_a_read_only_memory_is_invalid(tmp_path):
    """Request validation rejects an output placed in a read-only file mapping, naming it; an
    input there is valid."""
    import dataclasses

    from hal.builder import ModelBuilder
    from hal.errors import InvalidArgument
    from hal.types import DataLocation, MmapMemory, Request
    from hal.validation_request import validate_request

    b = ModelBuilder()
    b.op("RELU", [b.input("TENSOR_FLOAT32", [2])], b.output("TENSOR_FLOAT32", [2]))
    model = b.finish()
    path = tmp_path / "pool"
    path.write_bytes(bytes(16))
    ro = MmapMemory(path, 16, writable=False)
    args = make_request(model, [np.zeros(2, np.float32)])
    ok = Request([dataclasses.replace(args.inputs[0], location=DataLocation(0, 0, 8))],
                 list(args.outputs), [ro, args.pools[1]])
    validate_request(ok, model)
    bad = Request(list(args.inputs), [dataclasses.replace(
        args.outputs[0], location=DataLocation(1, 8, 8))], [args.pools[0], ro])
    with pytest.raises(InvalidArgument, match="output 0 .*read-only memory"):
        validate_request(bad, model)
