"""Helpers of the OpenCL element-wise / data-movement / normalization family tests
(tests/test_cl_<family>.py): run a one-operation model on the OpenCL device without fallback
(asserting its kernels ran), run it on the reference device, compare every output."""

from __future__ import annotations

import numpy as np

from hal.errors import ErrorStatus
from hal.reference import ReferenceDevice
from hal.types import Model, OperandLifeTime, Operation, OperationType, Subgraph
from tests import clgemm_kit
from tests.clgemm_kit import _outputs, assert_close, run_cl
from tests.opkit import make_request, one_op_model, tensor

cl_device = clgemm_kit.cl_device


def check(op, ins, outs, inputs, device, kind="exact", relaxed=False):
    """Outputs of ``op`` on OpenCL and on the reference: equal ("exact", NaN == NaN), or by the
    CTS criteria ("f32", "f16", "quant"). Returns the OpenCL outputs."""
    model = one_op_model(op, ins, outs, relaxed=relaxed)
    got = run_cl(model, inputs, device)
    want = _outputs(model, ReferenceDevice().prepare_model(model), inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if kind == "exact":
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape)
            assert np.array_equal(g, w, equal_nan=g.dtype.kind == "f"), (g, w)
        else:
            assert_close(g, w, kind)
    return got


def status_of(op, ins, outs, inputs, device):
    """Execution status of a one-operation model on ``device``."""
    model = one_op_model(op, ins, outs)
    return device.prepare_model(model).execute_synchronously(make_request(model, inputs)).status


def reason(op, ins, outs, device) -> str | None:
    """The OpenCL support reason of a one-operation model (None when supported)."""
    ((_, _, ok, why),) = device.support_report(one_op_model(op, ins, outs))
    return None if ok else why


OK = ErrorStatus.NONE


def after_zero_sized(op, params, out, device):
    """Run ``op`` on a zero-sized [0, 3] float32 tensor made inside the model (TILE by
    multiples [0, 1] of a [2, 3] input: requests cannot carry zero-sized tensors), with the
    extra inputs ``params`` and output spec ``out``, on OpenCL (no fallback) and on the
    reference. Returns the two ExecutionResults."""
    base = one_op_model("TILE", [tensor("TENSOR_FLOAT32", [2, 3]),
                                 tensor("TENSOR_INT32", [2], np.array([0, 1], np.int32)),
                                 *params], [tensor("TENSOR_FLOAT32", [0, 3]), out])
    sg = base.main
    n_in = 2 + len(params)
    sg.operands[n_in].lifetime = OperandLifeTime.TEMPORARY_VARIABLE
    ops = [Operation(OperationType.TILE, [0, 1], [n_in]),
           Operation(OperationType[op], [n_in, *range(2, n_in)], [n_in + 1])]
    model = Model(Subgraph(sg.operands, ops, [0], [n_in + 1]), [], base.operand_values,
                  base.pools, False)
    assert device.get_supported_operations(model) == [True, True]
    x = [np.ones((2, 3), np.float32)]
    return tuple(d.prepare_model(model).execute_synchronously(make_request(model, x))
                 for d in (device, ReferenceDevice()))
