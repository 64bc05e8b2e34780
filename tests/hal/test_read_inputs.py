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
