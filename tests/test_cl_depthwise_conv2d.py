"""DEPTHWISE_CONV_2D on the OpenCL direct kernel vs the reference device: every type incl.
per-channel filters (channel dimension 3), depth multiplier, padding forms, strides, dilation,
NCHW, activations, a filter given as a model input."""

from __future__ import annotations

import numpy as np
import pytest

from tests import clgemm_kit
from tests.clgemm_kit import compare
from tests.opkit import one_op_model, scalar
from tests.test_cl_conv2d import TYPES, conv_operands, ints, kind_of

cl_device = clgemm_kit.cl_device


@pytest.mark.parametrize("name", list(TYPES))
@pytest.mark.parametrize("act", [0, 3])
def test_depthwise_explicit_multiplier(cl_device, name, act):
    rng = np.random.default_rng(31)
    c, dm = 5, 3
    xs, fs, bs, out, x = conv_operands(name, rng, [2, 6, 7, 5], [1, 3, 3, c * dm],
                                       channel_dim=3)
    params = ints(1, 1, 0, 2, 1, 2, dm, act)  # pads l1 r1 t0 b2, strides w1 h2
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out([2, 3, 7, c * dm])],
                     relaxed=name == "relaxed")
    compare(m, [x], cl_device, kind_of(name))


@pytest.mark.parametrize("name", ["f32", "qs_pc", "f16"])
@pytest.mark.parametrize("nchw", [False, True])
def test_depthwise_same_dilation_layout(cl_device, name, nchw):
    rng = np.random.default_rng(32)
    x_shape = [1, 4, 9, 8] if nchw else [1, 9, 8, 4]
    xs, fs, bs, out, x = conv_operands(name, rng, x_shape, [1, 2, 3, 4], channel_dim=3)
    params = ints(1, 1, 1, 1, 0) + [scalar("BOOL", nchw)] + ints(2, 2)
    o_shape = [1, 4, 9, 8] if nchw else [1, 9, 8, 4]
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *params], [out(o_shape)])
    compare(m, [x], cl_device, kind_of(name))


@pytest.mark.parametrize("name", ["f32", "qa"])
def test_depthwise_filter_as_input(cl_device, name):
    rng = np.random.default_rng(33)
    xs, fs, bs, out, x = conv_operands(name, rng, [1, 5, 5, 6], [1, 3, 3, 6], channel_dim=3)
    w, bias = fs.value, bs.value
    fs.value = bs.value = None
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *ints(2, 1, 1, 1, 1)],
                     [out([1, 3, 3, 6])])
    compare(m, [x, w, bias], cl_device, kind_of(name))
