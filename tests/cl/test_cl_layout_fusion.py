"""TRANSPOSE (0, 2, 3, 1) fused into the CONV_2D that reads it (clnn/fusion): the direct
kernel conv_tile reads the NCHW tensor itself (the first layer of an ONNX image model after
the layout pass). Checked against the reference device, with the TRANSPOSE launching nothing,
and the cases that must not fuse."""

from __future__ import annotations

import numpy as np
import pytest

from hal.builder import ModelBuilder
from tests.cl.test_cl_fusion import _launch_names
from tests.kits.cl_compare import assert_close, outputs_of, run_ref

F32 = "TENSOR_FLOAT32"
F16 = "TENSOR_FLOAT16"


def transpose_conv_model(t, nchw_shape, o=16, f=3, stride=2, pads=(1, 1, 1, 1), act=0,
                         perm=(0, 2, 3, 1), also_output=False, seed=0):
    """x (NCHW) -> TRANSPOSE(perm) -> CONV_2D f x f, stride, explicit padding l r t b."""
    rng = np.random.default_rng(seed)
    dt = np.float16 if t == F16 else np.float32
    b = ModelBuilder()
    x = b.input(t, nchw_shape)
    nhwc = [nchw_shape[k] for k in perm]
    xt = b.op("TRANSPOSE", [x, b.constant(np.array(perm, np.int32))], b.tensor(t, nhwc))
    n, h, w, c = nhwc
    left, right, top, bottom = pads
    oh = (h + top + bottom - f) // stride + 1
    ow = (w + left + right - f) // stride + 1
    wt = b.constant(rng.uniform(-1, 1, (o, f, f, c)).astype(dt))
    bias = b.constant(rng.uniform(-1, 1, o).astype(dt))
    y = b.op("CONV_2D", [xt, wt, bias, *[b.int32(v) for v in (left, right, top, bottom,
                                                              stride, stride, act)]],
             b.tensor(t, [n, oh, ow, o]))
    b.mark_output(y)
    if also_output:
        b.mark_output(xt)
    return b.finish(), [rng.uniform(-1, 1, nchw_shape).astype(dt)]


def _check(model, inputs, device, kind, fused):
    pm = device.prepare_model(model)
    got = outputs_of(model, pm, inputs)
    want = run_ref(model, inputs)
    for g, w in zip(got, want):
        assert_close(g, w, kind)
    names = _launch_names(pm)
    assert (0 in pm.fused_into) == fused, names  # (operation 0: the TRANSPOSE)
    assert len(names) == (1 if fused else 2), names
    assert "conv2d.conv_tile" in names, names
    return pm


@pytest.mark.parametrize("t", [F32, F16])
@pytest.mark.parametrize("shape,f,stride,pads,act", [
    ([1, 3, 17, 19], 3, 2, (1, 1, 1, 1), 1),   # the 3-channel first layer, stride 2
    ([2, 3, 9, 12], 3, 1, (0, 2, 1, 0), 0),    # batch 2, uneven padding, stride 1
    ([1, 8, 10, 11], 5, 2, (2, 2, 2, 2), 3),   # 8 channels, a 5x5 window
])
def test_transpose_fused_into_direct_convolution(cl_device, t, shape, f, stride, pads, act):
    m, x = transpose_conv_model(t, shape, f=f, stride=stride, pads=pads, act=act)
    pm = _check(m, x, cl_device, "f16" if t == F16 else "f32", fused=True)
    assert sorted(pm.fused_into) == [0]


def test_transpose_not_fused_where_it_is_an_output_or_another_permutation(cl_device):
    m, x = transpose_conv_model(F32, [1, 3, 9, 10], also_output=True)
    _check(m, x, cl_device, "f32", fused=False)
    # (0, 3, 2, 1): the tensor is not NHWC of the NCHW one; the convolution reads its own
    m, x = transpose_conv_model(F32, [1, 3, 9, 10], perm=(0, 3, 2, 1))
    _check(m, x, cl_device, "f32", fused=False)


def test_transpose_not_fused_into_gemm_convolution(cl_device):
    """64 input channels: the convolution runs a GEMM, which reads NHWC rows."""
    m, x = transpose_conv_model(F32, [1, 64, 6, 7], o=8, stride=1)
    pm = cl_device.prepare_model(m)
    got = outputs_of(m, pm, x)
    for g, w in zip(got, run_ref(m, x)):
        assert_close(g, w, "f32")
    assert 0 not in pm.fused_into
    assert "conv2d.conv_tile" not in _launch_names(pm)


def test_nchw_flag_convolution_reads_the_model_input(cl_device):
    """A CONV_2D with NNAPI's NCHW layout flag over 3 channels (the conformance corpus's
    form): the layout pass runs it NHWC behind a TRANSPOSE of the input, which conv_tile
    reads away (the output TRANSPOSE back to NCHW stays)."""
    rng = np.random.default_rng(3)
    b = ModelBuilder()
    x = b.input(F32, [1, 3, 12, 13])
    wt = b.constant(rng.uniform(-1, 1, (8, 3, 3, 3)).astype(np.float32))
    bias = b.constant(rng.uniform(-1, 1, 8).astype(np.float32))
    y = b.op("CONV_2D", [x, wt, bias, *[b.int32(v) for v in (1, 1, 1, 1, 2, 2, 0)],
                         b.bool(True)], b.tensor(F32, [1, 8, 6, 7]))
    b.mark_output(y)
    m = b.finish()
    inputs = [rng.uniform(-1, 1, (1, 3, 12, 13)).astype(np.float32)]
    pm = cl_device.prepare_model(m)
    for g, w in zip(outputs_of(m, pm, inputs), run_ref(m, inputs)):
        assert_close(g, w, "f32")
    names = _launch_names(pm)
    assert "conv2d.conv_tile" in names and len(names) == 2, names
