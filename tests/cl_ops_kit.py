"""Helpers of the OpenCL element-wise / data-movement / normalization family tests
(tests/test_cl_<family>.py): run a one-operation model on the OpenCL device without fallback
(asserting its kernels ran), run it on the reference device, compare every output."""

from __future__ import annotations

import numpy as np

from hal.errors import ErrorStatus
from hal.reference import ReferenceDevice
from tests import clgemm_kit
from tests.clgemm_kit import _outputs, assert_close, run_cl
from tests.opkit import make_request, one_op_model

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
