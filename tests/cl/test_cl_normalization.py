"""L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, INSTANCE_NORMALIZATION on OpenCL vs the
reference device: every type (the quant8 integer pipeline exactly), every (negative) axis, the
optional axis omitted, all-zero vectors, large sums of squares, LRN windows wider than the
axis, instance norms over more positions than one work-group, NHWC and NCHW."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import OK, after_zero_sized, check
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import one_op_model, rejected, scalar, tensor
from tests.kits.slices import slow_unless


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback and without the layout pass (clnn/layout.py, tested
    in test_cl_layout.py and by the CTS): this module's NCHW cases run the NCHW kernels."""
    return open_or_skip("opencl", fallback=False, nhwc=False)


SHAPE = [2, 3, 4, 5]


@pytest.mark.parametrize("kind", ["f32", "f16", "qa", "qs"])
@pytest.mark.parametrize("axis", [None, -4, -2, 0, 1, 3])
def test_l2_normalization(cl_device, kind, axis):
    rng = np.random.default_rng(6)
    x = rng.normal(size=SHAPE)
    x[0, 0, 0, :] = 0.0
    x[:, 0, :, 0] = 0.0  # all-zero vectors along several axes
    if kind in ("f32", "f16"):
        t = "TENSOR_FLOAT32" if kind == "f32" else "TENSOR_FLOAT16"
        xs = ys = tensor(t, SHAPE)
        data = x.astype(np.float32 if kind == "f32" else np.float16)
    else:
        signed = kind == "qs"
        t = "TENSOR_QUANT8_ASYMM_SIGNED" if signed else "TENSOR_QUANT8_ASYMM"
        zi = -3 if signed else 120
        q = np.clip(np.round(x * 40) + zi, -128 if signed else 0, 127 if signed else 255)
        data = q.astype(np.int8 if signed else np.uint8)
        xs = tensor(t, SHAPE, scale=0.025, zero_point=zi)
        ys = tensor(t, SHAPE, scale=1 / 128, zero_point=0 if signed else 128)
    params = [] if axis is None else [scalar("INT32", axis)]
    exact = kind in ("qa", "qs")
    check("L2_NORMALIZATION", [xs, *params], [ys], [data], cl_device,
          "exact" if exact else kind)


@pytest.mark.parametrize("n", [1, 2, 3, 300])
def test_l2_normalization_quant_sum_sizes(cl_device, n):
    # extreme values make sums of squares from 1 (the <= 1 branch) to above 2^24
    x = np.full([2, n], 255, np.uint8)
    x[1, :] = np.arange(n) % 256
    x[1, 0] = 1
    check("L2_NORMALIZATION", [tensor("TENSOR_QUANT8_ASYMM", [2, n], scale=0.1, zero_point=0)],
          [tensor("TENSOR_QUANT8_ASYMM", [2, n], scale=1 / 128, zero_point=128)], [x],
          cl_device)


@pytest.mark.parametrize("kind", ["f32", "f16"])
@pytest.mark.parametrize("axis", [None, -1, 0, 2])
@pytest.mark.parametrize("radius", [0, 2, 9])
def test_local_response_normalization(cl_device, kind, axis, radius):
    t, st, dt = (("TENSOR_FLOAT32", "FLOAT32", np.float32) if kind == "f32"
                 else ("TENSOR_FLOAT16", "FLOAT16", np.float16))
    x = np.random.default_rng(7).normal(size=SHAPE).astype(dt)
    params = [scalar("INT32", radius), scalar(st, 1.5), scalar(st, 0.25), scalar(st, 0.75)]
    if axis is not None:
        params.append(scalar("INT32", axis))
    check("LOCAL_RESPONSE_NORMALIZATION", [tensor(t, SHAPE), *params], [tensor(t, SHAPE)],
          [x], cl_device, kind)


# make test: every (channels, radius) x exponent x layout once, the type in turn (each run
# compiles a kernel of its own); make test-full: both types
@pytest.mark.parametrize("nchw,beta,channels,radius,kind", [
    slow_unless(j == 0, nchw, beta, channels, radius, ["f32", "f16"][(i + b + n + j) % 2])
    for n, nchw in enumerate([False, True]) for b, beta in enumerate([0.75, 0.5, 1.0, 0.6])
    for i, (channels, radius) in enumerate([(12, 2), (24, 2), (32, 1), (64, 8), (16, 5), (8, 0),
                                            (6, 3)])
    for j in (0, 1)])
def test_local_response_normalization_channels(cl_device, kind, channels, radius, beta, nchw):
    """Along the channels: NHWC (ONNX LRN after the layout pass) the vector kernel lrn_vec
    where a vector divides the channels (windows inside the row and at its ends, a window
    wider than the vector), the unrolled lrn_rows elsewhere; NCHW lrn_planes (windows cut at
    both ends); each compiled exponent."""
    t, st, dt = (("TENSOR_FLOAT32", "FLOAT32", np.float32) if kind == "f32"
                 else ("TENSOR_FLOAT16", "FLOAT16", np.float16))
    shape = [2, channels, 3, 5] if nchw else [2, 3, 5, channels]
    x = (np.random.default_rng(channels + radius).normal(size=shape) * 2).astype(dt)
    params = [scalar("INT32", radius), scalar(st, 1.0), scalar(st, 0.05), scalar(st, beta),
              scalar("INT32", 1 if nchw else -1)]
    check("LOCAL_RESPONSE_NORMALIZATION", [tensor(t, shape), *params], [tensor(t, shape)],
          [x], cl_device, kind)


@pytest.mark.parametrize("kind", ["f32", "f16", "relaxed"])
@pytest.mark.parametrize("nchw", [False, True])
@pytest.mark.parametrize("hw", [(1, 1), (3, 5), (13, 11)])
def test_instance_normalization(cl_device, kind, nchw, hw):
    h, w = hw
    shape = [2, 3, h, w] if nchw else [2, h, w, 3]
    t, st, dt = (("TENSOR_FLOAT16", "FLOAT16", np.float16) if kind == "f16"
                 else ("TENSOR_FLOAT32", "FLOAT32", np.float32))
    x = (np.random.default_rng(8).normal(size=shape) * 4 + 2).astype(dt)
    check("INSTANCE_NORMALIZATION", [tensor(t, shape), scalar(st, 1.25), scalar(st, -0.5),
                                     scalar(st, 1e-4), scalar("BOOL", nchw)],
          [tensor(t, shape)], [x], cl_device, "f16" if kind == "f16" else "f32",
          relaxed=kind == "relaxed")


def test_instance_normalization_constant_plane(cl_device):
    x = np.full([1, 4, 4, 2], 3.0, np.float32)
    (y,) = check("INSTANCE_NORMALIZATION", [tensor("TENSOR_FLOAT32", [1, 4, 4, 2]),
                                            scalar("FLOAT32", 2.0), scalar("FLOAT32", 0.5),
                                            scalar("FLOAT32", 1e-3), scalar("BOOL", False)],
                 [tensor("TENSOR_FLOAT32", [1, 4, 4, 2])], [x], cl_device, "f32")
    assert np.allclose(y, 0.5)


def test_l2_normalization_zero_sized(cl_device):
    cl, ref = after_zero_sized("L2_NORMALIZATION", [], tensor("TENSOR_FLOAT32", [0, 3]),
                               cl_device)
    assert cl.status == ref.status == OK and cl.output_shapes[0].dimensions == (0, 3)


@pytest.mark.parametrize("case", ["axis", "out_scale", "rank"])
def test_normalization_invalid_rejected_by_cl(cl_device, case):
    shape = [1, 2, 2, 2, 2] if case == "rank" else SHAPE
    axis = [scalar("INT32", 4)] if case == "axis" else []
    scale = 0.5 if case == "out_scale" else 1 / 128
    m = one_op_model("L2_NORMALIZATION",
                     [tensor("TENSOR_QUANT8_ASYMM", shape, scale=0.1, zero_point=128), *axis],
                     [tensor("TENSOR_QUANT8_ASYMM", shape, scale=scale, zero_point=128)])
    assert rejected(m, cl_device)
