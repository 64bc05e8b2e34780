"""PAD fusions beyond one convolution (clnn/fusion): a PAD read by several convolutions,
a spatial PAD read by a float pooling without padding of its own (the PAD's taps count as
zeros in the max and the average), and a channel PAD read by a float ADD (zero past the
source's channels). Each checked against the reference device, with the PAD launching nothing,
and the cases that must not fuse."""

from __future__ import annotations

import numpy as np
import pytest

from hal.builder import ModelBuilder
from tests.cl.test_cl_fusion import _check, _launch_names

F32 = "TENSOR_FLOAT32"
F16 = "TENSOR_FLOAT16"


def _x(rng, t, shape, low=-1.0):
    return rng.uniform(low, 1, shape).astype(np.float16 if t == F16 else np.float32)


def pad_pool_model(t, x_shape, pads, kind="MAX_POOL_2D", f=3, stride=2, pool_pads=(0, 0, 0, 0),
                   seed=0):
    """x -> PAD(pads, NHWC) -> pooling f x f, stride, explicit padding l r t b."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(t, x_shape)
    p_shape = [d + a + z for d, (a, z) in zip(x_shape, pads)]
    padded = b.op("PAD", [x, b.constant(np.array(pads, np.int32))], b.tensor(t, p_shape))
    left, right, top, bottom = pool_pads
    oh = (p_shape[1] + top + bottom - f) // stride + 1
    ow = (p_shape[2] + left + right - f) // stride + 1
    y = b.op(kind, [padded, *[b.int32(v) for v in (left, right, top, bottom, stride, stride,
                                                   f, f, 0)]],
             b.tensor(t, [x_shape[0], oh, ow, x_shape[3]]))
    b.mark_output(y)
    # all negative inputs: the PAD's zeros win every max window they are in
    return b.finish(), [_x(rng, t, x_shape, low=-1.0) - 0.5 * (kind == "MAX_POOL_2D")]


@pytest.mark.parametrize("t", [F32, F16])
@pytest.mark.parametrize("kind", ["MAX_POOL_2D", "AVERAGE_POOL_2D", "L2_POOL_2D"])
@pytest.mark.parametrize("c", [16, 3])  # the vector kernel (f32, 4 | C) and the scalar one
def test_pad_fused_into_pooling(cl_device, t, kind, c):
    pads = [(0, 0), (1, 2), (0, 1), (0, 0)]
    m, x = pad_pool_model(t, [2, 7, 8, c], pads, kind=kind)
    _check(m, x, cl_device, "f16" if t == F16 else "f32", fused=True)


def test_pad_not_fused_into_pooling_with_padding_of_its_own(cl_device):
    m, x = pad_pool_model(F32, [1, 6, 6, 8], [(0, 0), (1, 1), (1, 1), (0, 0)],
                          pool_pads=(1, 1, 1, 1))
    _check(m, x, cl_device, "f32", fused=False)


def test_pad_fused_into_two_depthwise_convolutions(cl_device):
    rng = np.random.default_rng(4)
    b = ModelBuilder()
    x = b.input(F32, [1, 8, 9, 8])
    pads = [(0, 0), (1, 1), (1, 1), (0, 0)]
    padded = b.op("PAD", [x, b.constant(np.array(pads, np.int32))], b.tensor(F32, [1, 10, 11, 8]))
    for stride in (1, 2):
        w = b.constant(rng.uniform(-1, 1, (1, 3, 3, 8)).astype(np.float32))
        bias = b.constant(rng.uniform(-1, 1, 8).astype(np.float32))
        oh, ow = (10 - 3) // stride + 1, (11 - 3) // stride + 1
        b.mark_output(b.op("DEPTHWISE_CONV_2D", [padded, w, bias, *[b.int32(v) for v in (
            0, 0, 0, 0, stride, stride, 1, 0)]], b.tensor(F32, [1, oh, ow, 8])))
    m = b.finish()
    pm = _check(m, [_x(rng, F32, [1, 8, 9, 8])], cl_device, "f32", fused=True)
    assert sorted(pm.fused_into) == [0]


def chpad_add_model(t, shape, extra, padded_first=False, act=0, relu=False, seed=0):
    """x (C - extra channels) -> PAD channels -> ADD with y (C channels) [-> RELU]."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    xs = [*shape[:3], shape[3] - extra]
    x = b.input(t, xs)
    y = b.input(t, shape)
    pads = np.array([(0, 0), (0, 0), (0, 0), (0, extra)], np.int32)
    padded = b.op("PAD", [x, b.constant(pads)], b.tensor(t, shape))
    ins = [padded, y] if padded_first else [y, padded]
    out = b.op("ADD", [*ins, b.int32(act)], b.tensor(t, shape))
    if relu:
        out = b.op("RELU", [out], b.tensor(t, shape))
    b.mark_output(out)
    return b.finish(), [_x(rng, t, xs), _x(rng, t, shape)]


@pytest.mark.parametrize("t", [F32, F16])
@pytest.mark.parametrize("padded_first", [False, True])
@pytest.mark.parametrize("act,relu", [(0, False), (3, False), (0, True)])
def test_channel_pad_fused_into_add(cl_device, t, padded_first, act, relu):
    m, x = chpad_add_model(t, [2, 5, 6, 24], 8, padded_first=padded_first, act=act, relu=relu)
    pm = _check(m, x, cl_device, "f16" if t == F16 else "f32", fused=True)
    assert "broadcast.add_chpad" in _launch_names(pm)


def test_channel_pad_not_fused(cl_device):
    # a PAD of rows and channels: the ADD cannot read it, the PAD runs
    rng = np.random.default_rng(1)
    b = ModelBuilder()
    x = b.input(F32, [1, 4, 4, 4])
    y = b.input(F32, [1, 5, 4, 8])
    pads = np.array([(0, 0), (1, 0), (0, 0), (0, 4)], np.int32)
    padded = b.op("PAD", [x, b.constant(pads)], b.tensor(F32, [1, 5, 4, 8]))
    b.mark_output(b.op("ADD", [y, padded, b.int32(0)], b.tensor(F32, [1, 5, 4, 8])))
    m = b.finish()
    inputs = [_x(rng, F32, [1, 4, 4, 4]), _x(rng, F32, [1, 5, 4, 8])]
    _check(m, inputs, cl_device, "f32", fused=False)
