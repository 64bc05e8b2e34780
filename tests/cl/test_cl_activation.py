"""RELU RELU1 RELU6 LOGISTIC TANH ELU HARD_SWISH PRELU on OpenCL vs the reference device:
float32, float16, relaxed, quant8 asymm and signed (fixed output quantization for LOGISTIC and
TANH, own scales for HARD_SWISH and PRELU), PRELU broadcasting, ranks 1 to 4."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.one_op_models import scalar, tensor

UNARY = ["RELU", "RELU1", "RELU6", "LOGISTIC", "TANH", "HARD_SWISH"]
QOUT = {("LOGISTIC", "TENSOR_QUANT8_ASYMM"): (1 / 256, 0),
        ("LOGISTIC", "TENSOR_QUANT8_ASYMM_SIGNED"): (1 / 256, -128),
        ("TANH", "TENSOR_QUANT8_ASYMM"): (1 / 128, 128),
        ("TANH", "TENSOR_QUANT8_ASYMM_SIGNED"): (1 / 128, 0)}


@pytest.mark.parametrize("op", UNARY + ["ELU"])
@pytest.mark.parametrize("kind", ["f32", "f16", "relaxed"])
@pytest.mark.parametrize("shape", [[7], [2, 3, 5], [2, 3, 1, 4]])
def test_float(cl_device, op, kind, shape):
    rng = np.random.default_rng(2)
    t = "TENSOR_FLOAT16" if kind == "f16" else "TENSOR_FLOAT32"
    x = rng.uniform(-8, 8, shape).astype(np.float16 if kind == "f16" else np.float32)
    ins = [tensor(t, shape)]
    if op == "ELU":
        ins.append(scalar("FLOAT16" if kind == "f16" else "FLOAT32", 0.7))
    check(op, ins, [tensor(t, shape)], [x], cl_device, "f16" if kind == "f16" else "f32",
          relaxed=kind == "relaxed")


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("t", ["TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"])
def test_quant(cl_device, op, t):
    signed = t.endswith("SIGNED")
    x = np.arange(-128, 128) if signed else np.arange(256)
    x = x.astype(np.int8 if signed else np.uint8)
    qi = dict(scale=0.05, zero_point=10 if signed else 138)
    if op in ("LOGISTIC", "TANH"):
        s, z = QOUT[(op, t)]
        qo = dict(scale=s, zero_point=z)
    elif op == "HARD_SWISH":
        qo = dict(scale=0.03, zero_point=-20 if signed else 108)
    else:
        qo = qi
    check(op, [tensor(t, [256], **qi)], [tensor(t, [256], **qo)], [x], cl_device, "quant")


@pytest.mark.parametrize("kind", ["f32", "f16", "TENSOR_QUANT8_ASYMM",
                                  "TENSOR_QUANT8_ASYMM_SIGNED"])
@pytest.mark.parametrize("shapes", [([2, 3, 4], [4]), ([1, 2, 2, 3], [1, 1, 3]), ([5], [5])])
def test_prelu(cl_device, kind, shapes):
    rng = np.random.default_rng(5)
    a, b = shapes
    out = list(np.broadcast_shapes(tuple(a), tuple(b)))
    if kind.startswith("TENSOR"):
        signed = kind.endswith("SIGNED")
        lo, hi, dt = (-128, 127, np.int8) if signed else (0, 255, np.uint8)
        x, al = rng.integers(lo, hi + 1, a).astype(dt), rng.integers(lo, hi + 1, b).astype(dt)
        qx, qa = dict(scale=0.1, zero_point=(0 if signed else 128)), dict(scale=0.01,
                                                                          zero_point=lo + 50)
        qo = dict(scale=0.2, zero_point=(-5 if signed else 120))
        check("PRELU", [tensor(kind, a, **qx), tensor(kind, b, **qa)], [tensor(kind, out, **qo)],
              [x, al], cl_device, "quant")
        return
    t = "TENSOR_FLOAT16" if kind == "f16" else "TENSOR_FLOAT32"
    dt = np.float16 if kind == "f16" else np.float32
    x, al = rng.uniform(-4, 4, a).astype(dt), rng.uniform(-1, 1, b).astype(dt)
    check("PRELU", [tensor(t, a), tensor(t, b)], [tensor(t, out)], [x, al], cl_device, kind)


def test_relu_quant_clamps_at_zero_point(cl_device):
    q = dict(scale=0.5, zero_point=128)
    (y,) = check("RELU6", [tensor("TENSOR_QUANT8_ASYMM", [5], **q)],
                 [tensor("TENSOR_QUANT8_ASYMM", [5], **q)],
                 [np.array([0, 100, 128, 200, 255], np.uint8)], cl_device, "exact")
    np.testing.assert_array_equal(y, [128, 128, 128, 140, 140])


def test_unsupported_type_has_reason(cl_device):
    from tests.kits.cl_compare import reason
    from tests.kits.one_op_models import one_op_model

    m = one_op_model("RELU", [tensor("TENSOR_FLOAT32", [2])], [tensor("TENSOR_FLOAT32", [2])])
    assert cl_device.support_report(m)[0][2]
    assert reason("RELU", [tensor("TENSOR_FLOAT32", [2])], [tensor("TENSOR_FLOAT32", [2])],
                  cl_device) is None


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("op", ["HARD_SWISH", "PRELU"])
def test_fixed_point_pipelines_exact_over_scales(cl_device, seed, op):
    """Quantized HARD_SWISH and PRELU run the reference's integer pipelines: equal, not +-1."""
    rng = np.random.default_rng(seed)
    t = ("TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED")[seed % 2]
    lo, dt = (0, np.uint8) if seed % 2 == 0 else (-128, np.int8)
    x = np.arange(lo, lo + 256).astype(dt)

    def q():
        return dict(scale=float(np.exp(rng.uniform(-6, 1))),
                    zero_point=int(rng.integers(lo, lo + 256)))

    ins = [tensor(t, [256], **q())]
    inputs = [x]
    if op == "PRELU":
        ins.append(tensor(t, [256], **q()))
        inputs.append(rng.permutation(x))
    check(op, ins, [tensor(t, [256], **q())], inputs, cl_device, "exact")


@pytest.mark.parametrize("kind", ["f32", "TENSOR_QUANT8_ASYMM_SIGNED"])
@pytest.mark.parametrize("shapes", [([1, 6, 7, 32], [1, 1, 32]), ([2, 3, 4, 5], [4, 5])])
def test_prelu_per_channel_alpha_launch(cl_device, kind, shapes):
    """Alpha repeated over the leading dimensions (NHWC per-channel) takes the 2-D launch."""
    from clnn.kernels.support import row_broadcast

    assert row_broadcast(shapes[0], shapes[1], shapes[0])[0] == "b_rows"
    test_prelu(cl_device, kind, shapes)


@pytest.mark.parametrize("kind", ["f32", "f16", "TENSOR_QUANT8_ASYMM_SIGNED"])
@pytest.mark.parametrize("shapes", [([1, 5, 6, 7], [5, 1, 1]), ([2, 3, 4, 5], [1, 3, 1, 1])])
def test_prelu_nchw_alpha_launch(cl_device, kind, shapes):
    """Alpha per channel of NCHW (one value per plane) takes the 3-D launch."""
    from clnn.kernels.support import plane_broadcast

    assert plane_broadcast(shapes[0], shapes[1], shapes[0])[0] == "b_planes"
    test_prelu(cl_device, kind, shapes)


@pytest.mark.parametrize("kind", ["f32", "f16"])
@pytest.mark.parametrize("shapes", [([1, 16, 16, 8], [1, 1, 8]), ([2, 3, 16], [16]),
                                    ([4, 12], [12]), ([3, 5, 24], [24]), ([2, 4, 42], [42])])
def test_prelu_vector_kernel(cl_device, kind, shapes):
    """A float PRELU with one alpha per channel: ``prelu_vec`` (vectors of a row per
    work-item; float32: any row of 4 or more, a row's last vector overlapping its neighbour
    where none divides it; float16: a vector dividing the row, else the element kernel), NaN
    kept as NaN."""
    from tests.kits.one_op_models import one_op_model

    rng = np.random.default_rng(6)
    a, b = shapes
    t = "TENSOR_FLOAT16" if kind == "f16" else "TENSOR_FLOAT32"
    dt = np.float16 if kind == "f16" else np.float32
    x, al = rng.uniform(-4, 4, a).astype(dt), rng.uniform(-1, 1, b).astype(dt)
    x.reshape(-1)[::9] = np.nan
    ins, outs = [tensor(t, a), tensor(t, b)], [tensor(t, a)]
    (y,) = check("PRELU", ins, outs, [x, al], cl_device, kind)
    assert np.isnan(y.reshape(-1)[::9]).all()
    pm = cl_device.prepare_model(one_op_model("PRELU", ins, outs))
    want = "prelu" if kind == "f16" and b[-1] % 4 else "prelu_vec"
    assert [la.name for p in pm.partitions for pl in p.plans.values() for la in pl.launches] \
        == [f"activation.{want}"]
