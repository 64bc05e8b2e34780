"""BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND on OpenCL vs the reference device: every type, NHWC
and NCHW, the optional layout omitted, paddings (zero point for quantized tensors), block
sizes from 1, a round trip."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.cl_compare import check
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import one_op_model, rejected, scalar, tensor


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback and without the layout pass (clnn/layout.py, tested
    in test_cl_layout.py and by the CTS): this module's NCHW cases run the NCHW kernels."""
    return open_or_skip("opencl", fallback=False, nhwc=False)


TYPES = [("TENSOR_FLOAT32", np.float32), ("TENSOR_FLOAT16", np.float16),
         ("TENSOR_QUANT8_ASYMM", np.uint8), ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8)]


def _layout(shape, nchw):
    n, h, w, c = shape
    return [n, c, h, w] if nchw else [n, h, w, c]


def _q(t):
    return dict(scale=0.5, zero_point=-5 if "SIGNED" in t else 7) if "QUANT" in t else {}


@pytest.mark.parametrize("t,dt", TYPES)
@pytest.mark.parametrize("nchw", [None, False, True])
@pytest.mark.parametrize("block", [(2, 2), (1, 3), (3, 1)])
def test_batch_to_space(cl_device, t, dt, nchw, block):
    bh, bw = block
    xs = _layout([2 * bh * bw, 2, 3, 3], nchw)
    ys = _layout([2, 2 * bh, 3 * bw, 3], nchw)
    x = (np.arange(int(np.prod(xs))) % 113).astype(dt).reshape(xs)
    layout = [] if nchw is None else [scalar("BOOL", nchw)]
    check("BATCH_TO_SPACE_ND", [tensor(t, xs, **_q(t)),
                                tensor("TENSOR_INT32", [2], np.array(block, np.int32)),
                                *layout], [tensor(t, ys, **_q(t))], [x], cl_device)


@pytest.mark.parametrize("t,dt", TYPES)
@pytest.mark.parametrize("nchw", [None, False, True])
@pytest.mark.parametrize("block,pads", [((2, 2), [[0, 0], [0, 0]]), ((2, 3), [[1, 0], [2, 2]]),
                                        ((1, 1), [[2, 1], [0, 3]])])
def test_space_to_batch(cl_device, t, dt, nchw, block, pads):
    bh, bw = block
    h, w = 3, 5
    hp, wp = h + sum(pads[0]), w + sum(pads[1])
    if hp % bh or wp % bw:
        h, w = h + (bh - hp % bh) % bh, w + (bw - wp % bw) % bw
        hp, wp = h + sum(pads[0]), w + sum(pads[1])
    xs = _layout([2, h, w, 3], nchw)
    ys = _layout([2 * bh * bw, hp // bh, wp // bw, 3], nchw)
    x = (np.arange(int(np.prod(xs))) % 113 + 1).astype(dt).reshape(xs)
    layout = [] if nchw is None else [scalar("BOOL", nchw)]
    (y,) = check("SPACE_TO_BATCH_ND", [tensor(t, xs, **_q(t)),
                                       tensor("TENSOR_INT32", [2], np.array(block, np.int32)),
                                       tensor("TENSOR_INT32", [2, 2], np.array(pads, np.int32)),
                                       *layout], [tensor(t, ys, **_q(t))], [x], cl_device)
    if any(sum(p) for p in pads) and "QUANT" in t:
        assert (y == _q(t)["zero_point"]).sum() > 0  # padding is the zero point


def test_space_to_batch_input_block(cl_device):
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    (y,) = check("SPACE_TO_BATCH_ND", [tensor("TENSOR_FLOAT32", [1, 4, 4, 1]),
                                       tensor("TENSOR_INT32", [2]), tensor("TENSOR_INT32", [2, 2])],
                 [tensor("TENSOR_FLOAT32", [4, 2, 2, 1])],
                 [x, np.array([2, 2], np.int32), np.zeros((2, 2), np.int32)], cl_device)
    assert y[:, 0, 0, 0].tolist() == [0, 1, 4, 5]


@pytest.mark.parametrize("case", ["block", "pads", "rank"])
def test_space_to_batch_invalid_rejected_by_cl(cl_device, case):
    shape = [1, 4, 4] if case == "rank" else [1, 4, 4, 1]
    block = [0, 2] if case == "block" else [2, 2]
    pads = [[-1, 1], [0, 0]] if case == "pads" else [[0, 0], [0, 0]]
    m = one_op_model("SPACE_TO_BATCH_ND", [
        tensor("TENSOR_FLOAT32", shape), tensor("TENSOR_INT32", [2], np.array(block, np.int32)),
        tensor("TENSOR_INT32", [2, 2], np.array(pads, np.int32))],
        [tensor("TENSOR_FLOAT32", [4, 2, 2, 1])])
    assert rejected(m, cl_device)
