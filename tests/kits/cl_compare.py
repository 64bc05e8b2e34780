"""Helpers of the OpenCL GEMM-family tests (test_cl_conv2d.py, ...): run a one-operation model
on the OpenCL device without fallback, check that its kernels really ran (a plan with
launches), and compare with the reference device by the CTS criteria."""

from __future__ import annotations

import numpy as np
import pytest

from hal.errors import ErrorStatus
from hal.reference import ReferenceDevice
from tests.opkit import make_request

#: CTS float32 tolerance (cts/FORMAT.md): atol 1e-5 + rtol 5.96e-7 (relative to |expected|)
F32_TOL = (1e-5, 5.96e-7)
F16_TOL = (5.0 * 2**-10, 5.0 * 2**-10)


@pytest.fixture(scope="module")
def cl_device():
    try:
        from clnn.device import ClDevice

        return ClDevice(fallback=False)
    except Exception as e:  # no pyopencl / no OpenCL platform on this machine
        pytest.skip(f"no OpenCL device: {e}")


def _outputs(model, prepared, inputs):
    req = make_request(model, inputs)
    r = prepared.execute_synchronously(req)
    assert r.status == ErrorStatus.NONE, r
    from hal.types import NUMPY_DTYPE

    view = req.pools[1].view()
    outs = []
    for arg, shape, i in zip(req.outputs, r.output_shapes, model.main.output_indexes):
        dt = NUMPY_DTYPE[model.main.operands[i].type]
        n = int(np.prod(shape.dimensions)) * dt.itemsize
        raw = bytes(view[arg.location.offset: arg.location.offset + n])
        outs.append(np.frombuffer(raw, dtype=dt).reshape(shape.dimensions))
    return outs


def run_cl(model, inputs, device):
    """Outputs of the OpenCL device, asserting the operation ran in OpenCL kernels."""
    assert device.get_supported_operations(model) == [True], \
        device.support_report(model)
    prepared = device.prepare_model(model)
    outs = _outputs(model, prepared, inputs)
    report = prepared.pool_report()
    assert report["plans"] >= 1 and report["launches"] >= 1, report
    return outs


def run_ref(model, inputs):
    return _outputs(model, ReferenceDevice().prepare_model(model), inputs)


def assert_close(got, want, kind: str):
    """CTS criteria: float32 1e-5 + 5.96e-7 |e|, float16 5 * 2^-10 (abs + rel), quant +-1."""
    assert got.shape == want.shape, (got.shape, want.shape)
    if kind == "quant":
        diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
        assert diff.size == 0 or diff.max() <= 1, f"max quantized difference {diff.max()}"
        return
    atol, rtol = F16_TOL if kind == "f16" else F32_TOL
    g, w = got.astype(np.float64), want.astype(np.float64)
    bad = np.abs(g - w) > atol + rtol * np.abs(w)
    assert not bad.any(), f"{bad.sum()} elements off; max err {np.abs(g - w).max()}"


def compare(model, inputs, device, kind: str):
    (got,) = run_cl(model, inputs, device)
    (want,) = run_ref(model, inputs)
    assert_close(got, want, kind)
    return got


def rng_data(rng, type_, shape, lo=-1.0, hi=1.0):
    if type_ == "TENSOR_QUANT8_ASYMM":
        return rng.integers(0, 256, shape).astype(np.uint8)
    if type_ in ("TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_SYMM_PER_CHANNEL"):
        return rng.integers(-127, 128, shape).astype(np.int8)
    if type_ == "TENSOR_INT32":
        return rng.integers(-50, 50, shape).astype(np.int32)
    dt = np.float16 if type_ == "TENSOR_FLOAT16" else np.float32
    return rng.uniform(lo, hi, shape).astype(dt)
