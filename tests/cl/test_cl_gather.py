"""GATHER on OpenCL vs the reference device: every type, every (negative) axis, multi-dim
indices, constant and input indices (a new index tensor makes a new plan), out-of-range
indices failing the execution."""

from __future__ import annotations

import numpy as np
import pytest

from hal.errors import ErrorStatus
from hal.types import Model, OperandLifeTime, Operation, OperationType, Subgraph
from tests.kits.cl_compare import check, outputs_of, status_of
from tests.kits.one_op_models import one_op_model, rejected, scalar, tensor

TYPES = [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16),
         ("TENSOR_INT32", np.int32), ("TENSOR_QUANT8_ASYMM", np.uint8),
         ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8)]


def _model(t, shape, axis, idx_shape, idx=None):
    out = list(shape[:axis % len(shape)]) + list(idx_shape) + list(shape[axis % len(shape) + 1:])
    q = dict(scale=0.5, zero_point=3) if "QUANT" in t else {}
    return ([tensor(t, shape, **q), scalar("INT32", axis),
             tensor("TENSOR_INT32", idx_shape, idx)], [tensor(t, out, **q)])


@pytest.mark.parametrize("t,dt", TYPES)
@pytest.mark.parametrize("axis", [-3, -1, 0, 1, 2])
def test_gather_types_axes(cl_device, t, dt, axis):
    shape = [3, 4, 5]
    x = (np.arange(60) % 97).astype(dt).reshape(shape)
    idx = np.array([[2, 0], [1, 2], [0, 0]], np.int32)
    ins, outs = _model(t, shape, axis, idx.shape)
    (y,) = check("GATHER", ins, outs, [x, idx], cl_device)
    assert np.array_equal(y, np.take(x, idx, axis=axis))


def test_gather_constant_indices(cl_device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([3, 3, 0], np.int32)
    ins, outs = _model("TENSOR_FLOAT32", [3, 4], 1, [3], idx)
    (y,) = check("GATHER", ins, outs, [x], cl_device)
    assert y.tolist() == [[3, 3, 0], [7, 7, 4], [11, 11, 8]]


def test_gather_new_indices_new_plan(cl_device):
    x = np.arange(10, dtype=np.float32)
    ins, outs = _model("TENSOR_FLOAT32", [10], 0, [2])
    model = one_op_model("GATHER", ins, outs)
    prepared = cl_device.prepare_model(model)
    for idx in ([1, 9], [4, 0], [1, 9]):
        (y,) = outputs_of(model, prepared, [x, np.array(idx, np.int32)])
        assert y.tolist() == idx
    assert prepared.pool_report()["plans"] == 2


@pytest.mark.parametrize("bad", [[0, 5], [-1, 0]])
def test_gather_out_of_range_fails(cl_device, bad):
    ins, outs = _model("TENSOR_FLOAT32", [5], 0, [2])
    status = status_of("GATHER", ins, outs, [np.zeros(5, np.float32), np.array(bad, np.int32)],
                       cl_device)
    assert status == ErrorStatus.GENERAL_FAILURE


@pytest.mark.parametrize("axis,idx_type,why", [(3, "TENSOR_INT32", "axis"),
                                                (0, "TENSOR_FLOAT32", "")])
def test_gather_invalid_rejected_by_cl(cl_device, axis, idx_type, why):
    m = one_op_model("GATHER", [tensor("TENSOR_FLOAT32", [2, 3]), scalar("INT32", axis),
                                tensor(idx_type, [1])], [tensor("TENSOR_FLOAT32", [1, 3])])
    assert why in rejected(m, cl_device)


def test_gather_axis_from_rank_on_device(cl_device):
    # RANK (on OpenCL) computes GATHER's axis inside the partition: not known at planning,
    # so the partition runs on the reference with the value instead of failing
    base = one_op_model("GATHER", [tensor("TENSOR_FLOAT32", [3]), tensor("TENSOR_FLOAT32", [2, 3]),
                                   tensor("TENSOR_INT32", [2])],
                        [scalar("INT32", None), tensor("TENSOR_FLOAT32", [2, 2])])
    sg = base.main
    sg.operands[3].lifetime = OperandLifeTime.TEMPORARY_VARIABLE
    ops = [Operation(OperationType.RANK, [0], [3]),
           Operation(OperationType.GATHER, [1, 3, 2], [4])]
    model = Model(Subgraph(sg.operands, ops, [0, 1, 2], [4]), [], base.operand_values,
                  base.pools, False)
    assert cl_device.get_supported_operations(model) == [True, True]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = outputs_of(model, cl_device.prepare_model(model),
                    [np.zeros(3, np.float32), x, np.array([2, 0], np.int32)])
    assert y.tolist() == [[2, 0], [5, 3]]
