"""BATCH_MATMUL on the OpenCL GEMM vs the reference device: adjoint flags, broadcast batch
dimensions, float32 / float16 / quant8 signed, tile edges, a constant rhs, and the reason
given for INT32 (left to the reference)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import compare
from tests.kits.one_op_models import omitted, one_op_model, scalar, tensor

RNG = np.random.default_rng(11)
Q = {"x": (0.05, -3), "y": (0.04, 7), "out": (0.3, 5)}


def model(t, xs, ys, adj, out_dims, quant=False, y_value=None):
    q = Q if quant else {}
    ins = [tensor(t, xs, None, *q.get("x", ())), tensor(t, ys, y_value, *q.get("y", ()))]
    ins += [scalar("BOOL", a) if a is not None else omitted("BOOL") for a in adj]
    return one_op_model("BATCH_MATMUL", ins, [tensor(t, out_dims, None, *q.get("out", ()))])


def data(t, shape):
    if t == "TENSOR_QUANT8_ASYMM_SIGNED":
        return RNG.integers(-128, 128, shape).astype(np.int8)
    return RNG.standard_normal(shape).astype(np.float16 if t == "TENSOR_FLOAT16" else
                                             np.float32)


KIND = {"TENSOR_FLOAT32": "f32", "TENSOR_FLOAT16": "f16", "TENSOR_QUANT8_ASYMM_SIGNED": "quant"}


@pytest.mark.parametrize("t", list(KIND))
@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True),
                                         (True, True)])
def test_adjoints_and_types(cl_device, t, adj_x, adj_y):
    m_, k_, n_ = 13, 21, 37  # not multiples of the 8 x 32 tile
    xs = (3, k_, m_) if adj_x else (3, m_, k_)
    ys = (3, n_, k_) if adj_y else (3, k_, n_)
    m = model(t, xs, ys, (adj_x, adj_y), (3, m_, n_), quant=t.endswith("SIGNED"))
    compare(m, [data(t, xs), data(t, ys)], cl_device, KIND[t])


@pytest.mark.parametrize("xs,ys,want", [((2, 3), (3, 4), (2, 4)),
                                        ((2, 1, 2, 3), (3, 3, 5), (2, 3, 2, 5)),
                                        ((4, 2, 3), (3, 1), (4, 2, 1)),
                                        ((1, 2, 3), (5, 3, 2), (5, 2, 2))])
def test_broadcast_batch_dims(cl_device, xs, ys, want):
    m = model("TENSOR_FLOAT32", xs, ys, (), want)
    got = compare(m, [data("TENSOR_FLOAT32", xs), data("TENSOR_FLOAT32", ys)], cl_device,
                  "f32")
    assert got.shape == want


def test_constant_rhs_and_omitted_flags(cl_device):
    y = data("TENSOR_FLOAT32", (40, 70))
    m = model("TENSOR_FLOAT32", (33, 40), (40, 70), (None, None), (33, 70), y_value=y)
    x = data("TENSOR_FLOAT32", (33, 40))
    got = compare(m, [x], cl_device, "f32")
    np.testing.assert_allclose(got, x @ y, rtol=1e-4, atol=1e-4)


def test_quant_saturates(cl_device):
    xs, ys = (1, 4, 64), (1, 64, 3)
    m = model("TENSOR_QUANT8_ASYMM_SIGNED", xs, ys, (), (1, 4, 3), quant=True)
    x = np.full(xs, 127, np.int8)
    y = np.concatenate([np.full((1, 64, 1), 127), np.full((1, 64, 1), -128),
                        np.full((1, 64, 1), 7)], axis=2).astype(np.int8)
    got = compare(m, [x, y], cl_device, "quant")
    assert got[0, 0, 0] == 127 and got[0, 0, 1] == -128


def test_int32_is_left_to_the_reference(cl_device):
    m = model("TENSOR_INT32", (2, 3), (3, 2), (), (2, 2))
    rows = cl_device.support_report(m)
    assert rows[0][2] is False and "TENSOR_INT32" in rows[0][3]
