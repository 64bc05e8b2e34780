"""FILL and RANK on OpenCL vs the reference device: every FILL type, shapes and values as
model inputs, zero-sized fills, RANK of every tensor type, RANK feeding FILL on the device."""

from __future__ import annotations

import numpy as np
import pytest

from hal.types import (
    NUMPY_DTYPE,
    Model,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
)
from tests.kits.cl_compare import OK, after_zero_sized, check, outputs_of, run_ref
from tests.kits.one_op_models import one_op_model, scalar, tensor

FILL = [("TENSOR_FLOAT32", "FLOAT32", 2.5), ("TENSOR_FLOAT16", "FLOAT16", -1.25),
        ("TENSOR_INT32", "INT32", -7)]


@pytest.mark.parametrize("t,st,v", FILL)
def test_fill_constant(cl_device, t, st, v):
    (y,) = check("FILL", [tensor("TENSOR_INT32", [3], np.array([2, 3, 4], np.int32)),
                          scalar(st, v)], [tensor(t, [2, 3, 4])], [], cl_device)
    assert y.shape == (2, 3, 4) and (y == v).all()


@pytest.mark.parametrize("t,st,v", FILL)
def test_fill_inputs(cl_device, t, st, v):
    dt = {"FLOAT32": np.float32, "FLOAT16": np.float16, "INT32": np.int32}[st]
    (y,) = check("FILL", [tensor("TENSOR_INT32", [2]), tensor(st, [])], [tensor(t, [0, 0])],
                 [np.array([5, 1], np.int32), dt(v)], cl_device)
    assert y.shape == (5, 1) and (y == v).all()


def test_fill_zero_sized(cl_device):
    m = one_op_model("FILL", [tensor("TENSOR_INT32", [2], np.array([0, 3], np.int32)),
                              scalar("FLOAT32", 1.0)], [tensor("TENSOR_FLOAT32", [0, 3])])
    assert cl_device.get_supported_operations(m) == [True]
    (y,) = outputs_of(m, cl_device.prepare_model(m), [])
    assert y.shape == (0, 3)
    assert run_ref(m, [])[0].shape == (0, 3)


@pytest.mark.parametrize("t", ["TENSOR_FLOAT16", "TENSOR_FLOAT32", "TENSOR_INT32",
                               "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT16_SYMM", "TENSOR_BOOL8",
                               "TENSOR_QUANT16_ASYMM", "TENSOR_QUANT8_SYMM",
                               "TENSOR_QUANT8_ASYMM_SIGNED"])
@pytest.mark.parametrize("shape", [[3], [1, 2, 1, 2, 1]])
def test_rank_types(cl_device, t, shape):
    q = dict(scale=0.5) if "QUANT" in t else {}
    x = np.zeros(shape, NUMPY_DTYPE[OperandType[t]])
    (y,) = check("RANK", [tensor(t, shape, **q)], [scalar("INT32", None)], [x], cl_device)
    assert int(y) == len(shape)


def test_rank_feeds_fill_on_device(cl_device):
    base = one_op_model("RANK", [tensor("TENSOR_FLOAT32", [2, 3]),
                                 tensor("TENSOR_INT32", [2])],
                        [scalar("INT32", None), tensor("TENSOR_INT32", [0, 0])])
    sg = base.main
    # operands: 0 x, 1 shape, 2 rank (temporary), 3 output
    sg.operands[2].lifetime = OperandLifeTime.TEMPORARY_VARIABLE
    ops = [Operation(OperationType.RANK, [0], [2]), Operation(OperationType.FILL, [1, 2], [3])]
    model = Model(Subgraph(sg.operands, ops, [0, 1], [3]), [], base.operand_values, base.pools,
                  False)
    inputs = [np.zeros((2, 3), np.float32), np.array([3, 2], np.int32)]
    assert cl_device.get_supported_operations(model) == [True, True]
    prepared = cl_device.prepare_model(model)
    (got,) = outputs_of(model, prepared, inputs)
    (want,) = run_ref(model, inputs)
    assert got.shape == (3, 2) and np.array_equal(got, want) and (got == 2).all()
    assert prepared.pool_report()["launches"] == 2


def test_rank_of_zero_sized(cl_device):
    cl, ref = after_zero_sized("RANK", [], scalar("INT32", None), cl_device)
    assert cl.status == ref.status == OK


def test_tile_of_zero_sized(cl_device):
    cl, ref = after_zero_sized("TILE", [tensor("TENSOR_INT32", [2], np.array([2, 2], np.int32))],
                               tensor("TENSOR_FLOAT32", [0, 6]), cl_device)
    assert cl.status == ref.status == OK and cl.output_shapes[0].dimensions == (0, 6)
