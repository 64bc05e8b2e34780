"""TRANSPOSE_CONV_2D on OpenCL (GEMM + col2im gather) vs the reference device: every type incl.
per-channel filters, explicit padding and the implicit form with an output shape, strides
larger than the filter, NCHW, activations, a filter given as a model input."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import compare
from tests.kits.cl_conv_cases import TYPES, conv_operands, ints, kind_of
from tests.kits.one_op_models import one_op_model, scalar, tensor


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
