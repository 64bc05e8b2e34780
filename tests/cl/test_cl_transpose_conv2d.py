"""TRANSPOSE_CONV_2D on OpenCL (GEMM + col2im gather, or the direct kernel for float NHWC layers
of few output columns) vs the reference device: every type incl. per-channel filters, explicit
padding and the implicit form with an output shape, strides larger than the filter, NCHW,
activations (fused LOGISTIC / HARD_SWISH / RELU6 in the direct kernel), a filter given as a
model input."""

from __future__ import annotations

import numpy as np
import pytest

from hal.builder import ModelBuilder
from tests.kits.cl_compare import assert_close, compare, outputs_of, run_ref
from tests.kits.cl_conv_cases import TYPES, conv_operands, ints, kind_of
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import one_op_model, scalar, tensor


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback and without the layout pass (clnn/layout.py, tested
    in test_cl_layout.py and by the CTS): this module's NCHW cases run the NCHW kernels."""
    return open_or_skip("opencl", fallback=False, nhwc=False)


@pytest.mark.parametrize("name", list(TYPES))
@pytest.mark.parametrize("nchw", [False, True])
def test_transpose_explicit(cl_device, name, nchw):
    rng = np.random.default_rng(41)
    n, h, w, c, o, fh, fw = 2, 4, 3, 6, 5, 3, 2
    x_shape = [n, c, h, w] if nchw else [n, h, w, c]
    xs, fs, bs, out, x = conv_operands(name, rng, x_shape, [o, fh, fw, c])
    # pads l0 r1 t1 b0, strides w3 h2: out h = 2*3 + 3 - 1 = 8, w = 3*2 + 2 - 1 = 7
    oh, ow = 8, 7
    o_shape = [n, o, oh, ow] if nchw else [n, oh, ow, o]
    params = ints(0, 1, 1, 0, 3, 2, 1) + [scalar("BOOL", nchw)]
    m = one_op_model("TRANSPOSE_CONV_2D", [xs, fs, bs, *params], [out(o_shape)],
                     relaxed=name == "relaxed")
    compare(m, [x], cl_device, kind_of(name))


@pytest.mark.parametrize("name", ["f32", "qa", "qs_pc"])
@pytest.mark.parametrize("scheme", [1, 2])
def test_transpose_implicit_output_shape(cl_device, name, scheme):
    rng = np.random.default_rng(42)
    xs, fs, bs, out, x = conv_operands(name, rng, [1, 3, 4, 2], [3, 3, 3, 2])
    shape = np.array([1, 6, 8, 3], np.int32) if scheme == 1 else np.array([1, 7, 9, 3],
                                                                           np.int32)
    params = [tensor("TENSOR_INT32", [4], shape), *ints(scheme, 2, 2, 3),
              scalar("BOOL", False)]
    m = one_op_model("TRANSPOSE_CONV_2D", [xs, fs, bs, *params], [out(list(shape))])
    compare(m, [x], cl_device, kind_of(name))


@pytest.mark.parametrize("name", ["f32", "qs"])
def test_transpose_filter_as_input(cl_device, name):
    rng = np.random.default_rng(43)
    xs, fs, bs, out, x = conv_operands(name, rng, [1, 3, 3, 4], [2, 2, 2, 4])
    w, bias = fs.value, bs.value
    fs.value = bs.value = None
    params = ints(0, 0, 0, 0, 2, 2, 0) + [scalar("BOOL", False)]
    m = one_op_model("TRANSPOSE_CONV_2D", [xs, fs, bs, *params], [out([1, 6, 6, 2])])
    compare(m, [x, w, bias], cl_device, kind_of(name))


def _names(pm):
    return [la.name for p in pm.partitions for pl in p.plans.values() for la in pl.launches]


# the direct kernel: float NHWC, stride = filter, O * fh * fw <= 16 (x shape, filter
# [o, fh, fw, c], pads l r t b, strides w h, activation): selfie_segmentation's last layer (2x2,
# one output channel), 12 columns (no vector width) over 6 channels (not a multiple of 4),
# 16 columns, cropping pads on every side
DIRECT = [([1, 8, 8, 16], [1, 2, 2, 16], (0, 0, 0, 0), (2, 2), 0),
          ([2, 5, 4, 6], [2, 3, 2, 6], (0, 1, 1, 0), (2, 3), 1),
          ([1, 4, 6, 3], [4, 2, 2, 3], (1, 0, 0, 1), (2, 2), 3),
          ([1, 3, 3, 8], [1, 3, 3, 8], (1, 1, 1, 1), (3, 3), 2)]


@pytest.mark.parametrize("name", ["f32", "f16", "relaxed"])
@pytest.mark.parametrize("case", range(len(DIRECT)))
def test_transpose_direct_kernel(cl_device, name, case):
    x_shape, f_shape, pads, strides, act = DIRECT[case]
    n, h, w, _ = x_shape
    o, fh, fw, _ = f_shape
    oh = strides[1] * (h - 1) + fh - pads[2] - pads[3]
    ow = strides[0] * (w - 1) + fw - pads[0] - pads[1]
    xs, fs, bs, out, x = conv_operands(name, np.random.default_rng(60 + case), x_shape, f_shape)
    params = ints(*pads, *strides, act) + [scalar("BOOL", False)]
    m = one_op_model("TRANSPOSE_CONV_2D", [xs, fs, bs, *params], [out([n, oh, ow, o])],
                     relaxed=name == "relaxed")
    compare(m, [x], cl_device, kind_of(name))
    assert _names(cl_device.prepare_model(m)) == ["transpose_conv2d.direct"]


@pytest.mark.parametrize("kind", ["LOGISTIC", "HARD_SWISH", "RELU6"])
def test_transpose_direct_runs_the_following_activation(cl_device, kind):
    """TRANSPOSE_CONV_2D -> LOGISTIC (selfie_segmentation's mask): one kernel, the
    reference's values."""
    rng = np.random.default_rng(70)
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", [1, 6, 5, 8])
    w = rng.uniform(-1, 1, (1, 2, 2, 8)).astype(np.float32)
    bias = rng.uniform(-1, 1, 1).astype(np.float32)
    y = b.op("TRANSPOSE_CONV_2D", [x, b.constant(w), b.constant(bias),
                                   *[b.int32(v) for v in (0, 0, 0, 0, 2, 2, 0)], b.bool(False)],
             b.tensor("TENSOR_FLOAT32", [1, 12, 10, 1]))
    b.mark_output(b.op(kind, [y], b.tensor("TENSOR_FLOAT32", [1, 12, 10, 1])))
    m = b.finish()
    xv = rng.uniform(-2, 2, (1, 6, 5, 8)).astype(np.float32)
    pm = cl_device.prepare_model(m)
    assert_close(outputs_of(m, pm, [xv])[0], run_ref(m, [xv])[0], "f32")
    assert _names(pm) == ["transpose_conv2d.direct"]


@pytest.mark.parametrize("f_shape,strides", [([8, 3, 3, 8], (2, 2)), ([1, 2, 2, 8], (1, 1)),
                                             ([2, 2, 2, 8], (3, 2))])
def test_transpose_other_layers_keep_the_gemm(cl_device, f_shape, strides):
    """O * fh * fw > 16, or a stride other than the filter: the GEMM and col2im."""
    rng = np.random.default_rng(71)
    o, fh, fw, _ = f_shape
    oh, ow = strides[1] * 3 + fh, strides[0] * 3 + fw
    xs, fs, bs, out, x = conv_operands("f32", rng, [1, 4, 4, 8], f_shape)
    m = one_op_model("TRANSPOSE_CONV_2D", [xs, fs, bs, *ints(0, 0, 0, 0, *strides, 0),
                                           scalar("BOOL", False)], [out([1, oh, ow, o])])
    compare(m, [x], cl_device, "f32")
    assert _names(cl_device.prepare_model(m)) == ["gemm.gemm", "transpose_conv2d.col2im"]
