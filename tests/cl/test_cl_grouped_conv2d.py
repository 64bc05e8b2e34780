"""GROUPED_CONV_2D on the OpenCL GEMM (one GEMM batch per group) vs the reference device:
every type incl. per-channel filters, both padding forms, NCHW, activations."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import compare
from tests.kits.cl_conv_cases import TYPES, conv_operands, ints, kind_of
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import one_op_model, scalar


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback and without the layout pass (clnn/layout.py, tested
    in test_cl_layout.py and by the CTS): this module's NCHW cases run the NCHW kernels."""
    return open_or_skip("opencl", fallback=False, nhwc=False)


@pytest.mark.parametrize("name", list(TYPES))
@pytest.mark.parametrize("nchw", [False, True])
def test_grouped_explicit(cl_device, name, nchw):
    rng = np.random.default_rng(21)
    n, h, w, g, cg, og = 2, 6, 5, 3, 2, 4
    x_shape = [n, g * cg, h, w] if nchw else [n, h, w, g * cg]
    xs, fs, bs, out, x = conv_operands(name, rng, x_shape, [g * og, 3, 2, cg])
    # pads (left 1, right 0, top 1, bottom 1), strides (w 2, h 1)
    oh, ow = (h + 2 - 3) // 1 + 1, (w + 1 - 2) // 2 + 1
    o_shape = [n, g * og, oh, ow] if nchw else [n, oh, ow, g * og]
    params = ints(1, 0, 1, 1, 2, 1, g, 1) + [scalar("BOOL", nchw)]
    m = one_op_model("GROUPED_CONV_2D", [xs, fs, bs, *params], [out(o_shape)],
                     relaxed=name == "relaxed")
    compare(m, [x], cl_device, kind_of(name))


@pytest.mark.parametrize("name", ["f32", "qa"])
def test_grouped_implicit_same(cl_device, name):
    rng = np.random.default_rng(22)
    xs, fs, bs, out, x = conv_operands(name, rng, [1, 7, 7, 8], [12, 3, 3, 4])
    params = ints(1, 2, 2, 2, 3) + [scalar("BOOL", False)]
    m = one_op_model("GROUPED_CONV_2D", [xs, fs, bs, *params], [out([1, 4, 4, 12])])
    compare(m, [x], cl_device, kind_of(name))


@pytest.mark.parametrize("name", list(TYPES))
@pytest.mark.parametrize("nchw", [False, True])
def test_grouped_pointwise(cl_device, name, nchw):
    """A 1x1, stride 1, unpadded grouped convolution (ShuffleNet's): NHWC reads each group's
    channels of the input rows directly (no im2col launch); NCHW packs them."""
    rng = np.random.default_rng(23)
    n, h, w, g, cg, og = 2, 5, 6, 4, 6, 5
    x_shape = [n, g * cg, h, w] if nchw else [n, h, w, g * cg]
    xs, fs, bs, out, x = conv_operands(name, rng, x_shape, [g * og, 1, 1, cg])
    o_shape = [n, g * og, h, w] if nchw else [n, h, w, g * og]
    params = ints(0, 0, 0, 0, 1, 1, g, 0) + [scalar("BOOL", nchw)]
    m = one_op_model("GROUPED_CONV_2D", [xs, fs, bs, *params], [out(o_shape)],
                     relaxed=name == "relaxed")
    compare(m, [x], cl_device, kind_of(name))
    pm = cl_device.prepare_model(m)
    names = [la.name for p in pm.partitions for pl in p.plans.values() for la in pl.launches]
    assert ("gemm.im2col_pack" in names) == nchw, names


def _grouped_then(t, tail: str, f: int, seed: int = 24):
    """x [1, 5, 6, 12] -> GROUPED_CONV_2D (3 groups, f x f, SAME) -> ``tail``: "relu",
    "add_relu" (ADD of a model input, then RELU), "prelu" or "add_logistic"."""
    from hal.builder import ModelBuilder

    rng = np.random.default_rng(seed)
    dt = np.float16 if t == "TENSOR_FLOAT16" else np.float32
    b = ModelBuilder()
    shape = [1, 5, 6, 12]
    x = b.input(t, shape)
    wt = rng.uniform(-1, 1, (12, f, f, 4)).astype(dt)
    bias = rng.uniform(-1, 1, 12).astype(dt)
    y = b.op("GROUPED_CONV_2D", [x, b.constant(wt, t), b.constant(bias, t),
                                 *[b.int32(v) for v in (1, 1, 1, 3, 0)], b.bool(False)],
             b.tensor(t, shape))
    inputs = [rng.uniform(-2, 2, shape).astype(dt)]
    if tail.startswith("add"):
        y = b.op("ADD", [y, b.input(t, shape), b.int32(0)], b.tensor(t, shape))
        inputs.append(rng.uniform(-2, 2, shape).astype(dt))
    if tail == "prelu":
        alpha = b.constant(rng.uniform(0.05, 0.5, (1, 1, 12)).astype(dt), t)
        y = b.op("PRELU", [y, alpha], b.tensor(t, shape))
    else:
        y = b.op("LOGISTIC" if tail.endswith("logistic") else "RELU", [y], b.tensor(t, shape))
    b.mark_output(y)
    return b.finish(), inputs


@pytest.mark.parametrize("t", ["TENSOR_FLOAT32", "TENSOR_FLOAT16"])
@pytest.mark.parametrize("tail", ["relu", "add_relu", "prelu", "add_logistic"])
@pytest.mark.parametrize("f", [1, 3])
def test_grouped_fuses_add_and_activation(cl_device, t, tail, f):
    """The ADD and the activation after a grouped convolution run in its GEMM's epilogue
    (clnn/fusion): one GEMM launch (after an im2col for 3x3), nothing else."""
    from tests.kits.cl_compare import assert_close, outputs_of, run_ref

    m, inputs = _grouped_then(t, tail, f)
    pm = cl_device.prepare_model(m)
    for got, want in zip(outputs_of(m, pm, inputs), run_ref(m, inputs)):
        assert_close(got, want, "f16" if t == "TENSOR_FLOAT16" else "f32")
    names = [la.name for p in pm.partitions for pl in p.plans.values() for la in pl.launches]
    assert names == (["gemm.gemm"] if f == 1 else ["gemm.im2col_pack", "gemm.gemm"]), names
    assert len(pm.fused_into) == len(m.main.operations) - 1
