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
