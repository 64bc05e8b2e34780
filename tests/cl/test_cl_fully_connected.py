"""FULLY_CONNECTED on the OpenCL GEMM vs the reference device: float32 / float16 / relaxed /
quant8 asymm / signed, rank-4 inputs flattened, fused activations, weights as model inputs,
tile edges and saturation."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import compare, rng_data
from tests.kits.one_op_models import one_op_model, scalar, tensor

TYPES = {"f32": "TENSOR_FLOAT32", "f16": "TENSOR_FLOAT16", "relaxed": "TENSOR_FLOAT32",
         "qa": "TENSOR_QUANT8_ASYMM", "qs": "TENSOR_QUANT8_ASYMM_SIGNED"}


def fc_model(name, rng, x_shape, units, size, act, weights_const=True, x_value=None):
    t = TYPES[name]
    w = rng_data(rng, t, [units, size])
    x = rng_data(rng, t, x_shape) if x_value is None else x_value
    batch = int(np.prod(x_shape)) // size
    if name in ("f32", "f16", "relaxed"):
        bias = rng_data(rng, t, [units])
        xs, ws, bs = tensor(t, x_shape), tensor(t, [units, size], w), tensor(t, [units], bias)
        ys = tensor(t, [batch, units])
    else:
        zx, zw, zo = (120, 131, 100) if name == "qa" else (-5, 3, -20)
        bias = rng.integers(-3000, 3000, units).astype(np.int32)
        xs = tensor(t, x_shape, scale=0.05, zero_point=zx)
        ws = tensor(t, [units, size], w, scale=0.03, zero_point=zw)
        bs = tensor("TENSOR_INT32", [units], bias,
                    scale=float(np.float32(0.05) * np.float32(0.03)))
        ys = tensor(t, [batch, units], scale=0.2, zero_point=zo)
    inputs = [x]
    if not weights_const:
        ws.value = bs.value = None
        inputs += [w, bias]
    m = one_op_model("FULLY_CONNECTED", [xs, ws, bs, scalar("INT32", act)], [ys],
                     relaxed=name == "relaxed")
    return m, inputs


KIND = {"f32": "f32", "relaxed": "f32", "f16": "f16", "qa": "quant", "qs": "quant"}


@pytest.mark.parametrize("name", list(TYPES))
@pytest.mark.parametrize("act", [0, 1, 2, 3])
def test_types_and_activations(cl_device, name, act):
    rng = np.random.default_rng(act)
    m, x = fc_model(name, rng, [3, 2, 2, 10], 45, 20, act)  # rank 4 flattened to [6, 20]
    compare(m, x, cl_device, KIND[name])


@pytest.mark.parametrize("name", ["f32", "qa", "qs"])
def test_weights_as_inputs(cl_device, name):
    rng = np.random.default_rng(9)
    m, x = fc_model(name, rng, [9, 33], 17, 33, 0, weights_const=False)
    compare(m, x, cl_device, KIND[name])


def test_large_float(cl_device):
    rng = np.random.default_rng(10)
    m, x = fc_model("f32", rng, [70, 300], 130, 300, 1)
    compare(m, x, cl_device, "f32")


def test_quant_saturates(cl_device):
    rng = np.random.default_rng(12)
    xv = np.full((2, 64), 255, np.uint8)
    m, x = fc_model("qa", rng, [2, 64], 5, 64, 0, x_value=xv)
    got = compare(m, x, cl_device, "quant")
    assert got.max() == 255 or got.min() == 0


def test_support_reasons(cl_device):
    # a fused activation given at execution time is not known when the kernels are planned
    w = np.ones((3, 4), np.float32)
    m = one_op_model("FULLY_CONNECTED", [tensor("TENSOR_FLOAT32", [2, 4]),
                                         tensor("TENSOR_FLOAT32", [3, 4], w),
                                         tensor("TENSOR_FLOAT32", [3], np.zeros(3)),
                                         scalar("INT32", None)],
                     [tensor("TENSOR_FLOAT32", [2, 3])])
    rows = cl_device.support_report(m)
    assert rows[0][2] is False and "input 3 (fused activation)" in rows[0][3]


@pytest.mark.parametrize("name,batch,units,size", [("qa", 5, 40, 64), ("qs", 1, 24, 12),
                                                   ("qs", 9, 33, 16)])
def test_quant_int_pairs(cl_device, name, batch, units, size):
    """Bit-exact with the reference; where the device class sums int16 pairs
    (_gemm.int_pairs: an even vector of the input's rows), the layer's GEMM kernel is the
    ``ip`` one."""
    from clnn.kernels import _gemm
    from tests.kits.cl_compare import run_cl, run_ref

    m, x = fc_model(name, np.random.default_rng(size), [batch, size], units, size, 0)
    (got,), (want,) = run_cl(m, x, cl_device), run_ref(m, x)
    assert np.array_equal(got, want), np.abs(got.astype(int) - want).max()
    events = []
    cl_device.prepare_model(m).run(x, events=events)
    keys = [dict(launch.key[2]) for launch, _ in events if launch.name == "gemm.gemm"]
    assert keys and all(k.get("ip", False) == _gemm.int_pairs(cl_device, True, size)
                        for k in keys), keys
