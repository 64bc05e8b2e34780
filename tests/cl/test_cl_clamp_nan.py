"""A NaN through the float epilogues' clamp (templates/common.mako ``clamp_to``: compares and
selects, not OpenCL's clamp, which returns the lower bound for a NaN): a fused activation keeps
it NaN where the reference (numpy.clip) does, and every other output matches the reference."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import assert_close, run_cl, run_ref
from tests.kits.cl_conv_cases import conv_operands, ints
from tests.kits.one_op_models import one_op_model

RELU6 = 3
CASES = {  # (operation, input shape, filter shape, channel dim, parameters, output shape)
    # 1x1 convolution: the GEMM's stores
    "pointwise": ("CONV_2D", [1, 6, 7, 8], [16, 1, 1, 8], 0, ints(0, 0, 0, 0, 1, 1, RELU6),
                  [1, 6, 7, 16]),
    # 3x3 depthwise, stride 1 and 2: the NHWC depthwise kernels' stores
    "depthwise": ("DEPTHWISE_CONV_2D", [1, 9, 10, 16], [1, 3, 3, 16], 3,
                  ints(1, 1, 1, 1, 1, 1, 1, RELU6), [1, 9, 10, 16]),
    "depthwise-s2": ("DEPTHWISE_CONV_2D", [1, 9, 10, 16], [1, 3, 3, 16], 3,
                     ints(0, 1, 1, 1, 2, 2, 1, RELU6), [1, 5, 5, 16]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_nan_stays_nan(cl_device, case):
    op, x_shape, f_shape, cdim, params, o_shape = CASES[case]
    rng = np.random.default_rng(7)
    xs, fs, bs, out, x = conv_operands("f32", rng, x_shape, f_shape, channel_dim=cdim)
    x = np.array(x, np.float32)
    x[0, 4, 5, 3] = np.nan
    model = one_op_model(op, [xs, fs, bs, *params], [out(o_shape)])
    (got,), (want,) = run_cl(model, [x], cl_device), run_ref(model, [x])
    assert np.isnan(want).any(), "the case must carry a NaN to the output"
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    assert_close(got[keep], want[keep], "f32")
