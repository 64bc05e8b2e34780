"""PAD -> CONV_2D / DEPTHWISE_CONV_2D fusion on OpenCL (clnn/fusion.py): the convolution reads
the unpadded tensor with the padding added to its own, the PAD launches nothing. Checked
against the reference device, with the cases that must not fuse (another reader, a pad value
that is not zero, channel padding, NCHW, the padded tensor as a model output)."""

from __future__ import annotations

import numpy as np
import pytest

from hal.builder import ModelBuilder
from tests import clgemm_kit
from tests.clgemm_kit import _outputs, assert_close, run_ref

cl_device = clgemm_kit.cl_device

F32 = "TENSOR_FLOAT32"
QA = "TENSOR_QUANT8_ASYMM"
QS = "TENSOR_QUANT8_ASYMM_SIGNED"


def _q(t):
    if t == QA:
        return dict(scale=0.05, zero_point=120)
    if t == QS:
        return dict(scale=0.05, zero_point=-7)
    return {}


def _data(rng, t, shape):
    if t == QA:
        return rng.integers(0, 256, shape).astype(np.uint8)
    if t == QS:
        return rng.integers(-128, 128, shape).astype(np.int8)
    return rng.uniform(-1, 1, shape).astype(np.float32)


def pad_conv_model(t, x_shape, pads, op="DEPTHWISE_CONV_2D", o=None, f=3, stride=2,
                   pad_op="PAD", pad_value=0, second_reader=False, pad_output=False,
                   conv_pads=(0, 0, 0, 0), nchw=False, seed=0):
    """x -> PAD(pads) -> conv (explicit padding ``conv_pads`` l r t b, stride, f x f, layout
    NCHW or NHWC: x_shape and pads are in that layout)."""
    rng = np.random.default_rng(seed)
    q = _q(t)
    b = ModelBuilder()
    x = b.input(t, x_shape, **q)
    p_shape = [d + a + z for d, (a, z) in zip(x_shape, pads)]
    pv = [b.constant(np.array(pads, np.int32))]
    if pad_op == "PAD_V2":
        pv.append(b.float32(pad_value) if t == F32 else b.int32(pad_value))
    padded = b.op(pad_op, [x, *pv], b.tensor(t, p_shape, **q))
    n, c, ph, pw = p_shape if nchw else (p_shape[0], p_shape[3], p_shape[1], p_shape[2])
    o = o or c
    depthwise = op == "DEPTHWISE_CONV_2D"
    w_shape = (1, f, f, o) if depthwise else (o, f, f, c)
    if t == F32:
        wq, bq, bias = {}, {}, rng.uniform(-1, 1, o).astype(np.float32)
        wt, wtype, btype = rng.uniform(-1, 1, w_shape).astype(np.float32), F32, F32
    else:
        wq = dict(scale=0.02, zero_point=3 if t == QS else 130)
        bq = dict(scale=0.05 * 0.02)
        wt, wtype, btype = _data(rng, t, w_shape), t, "TENSOR_INT32"
        bias = rng.integers(-500, 500, o).astype(np.int32)
    left, right, top, bottom = conv_pads
    oh = (ph + top + bottom - f) // stride + 1
    ow = (pw + left + right - f) // stride + 1
    params = [b.int32(v) for v in (left, right, top, bottom, stride, stride)]
    if depthwise:
        params.append(b.int32(1))
    params += [b.int32(0), b.bool(nchw)]
    oq = dict(scale=0.1, zero_point=100 if t == QA else -3) if t != F32 else {}
    y = b.op(op, [padded, b.constant(wt, wtype, **wq), b.constant(bias, btype, **bq), *params],
             b.tensor(t, [n, o, oh, ow] if nchw else [n, oh, ow, o], **oq))
    b.mark_output(y)
    if second_reader:
        b.mark_output(b.op("RELU", [padded], b.tensor(t, p_shape, **q)))
    if pad_output:
        b.mark_output(padded)
    return b.finish(), [_data(rng, t, x_shape)]


def _launch_names(pm):
    return [launch.name for p in pm.partitions for pl in p.plans.values() for launch in
            pl.launches]


def _check(model, inputs, device, kind, fused):
    pm = device.prepare_model(model)
    got = _outputs(model, pm, inputs)
    want = run_ref(model, inputs)
    for g, w in zip(got, want):
        assert_close(g, w, kind)
    names = _launch_names(pm)
    assert ("pad.pad" not in names) == fused, names
    return pm


@pytest.mark.parametrize("t", [F32, QA, QS])
@pytest.mark.parametrize("op", ["DEPTHWISE_CONV_2D", "CONV_2D"])
@pytest.mark.parametrize("pads,conv_pads,stride", [
    ([(0, 0), (0, 1), (0, 1), (0, 0)], (0, 0, 0, 0), 2),   # TF SAME of stride 2
    ([(0, 0), (2, 1), (1, 3), (0, 0)], (1, 0, 0, 2), 1),   # uneven, plus the conv's own
])
def test_pad_fused_into_convolution(cl_device, t, op, pads, conv_pads, stride):
    # 3 channels: CONV_2D takes the direct kernel for float; 16: the GEMM with im2col
    for c in (3, 16):
        m, x = pad_conv_model(t, [2, 9, 10, c], pads, op=op, stride=stride,
                              conv_pads=conv_pads, o=8 if op == "CONV_2D" else None)
        _check(m, x, cl_device, "f32" if t == F32 else "quant", fused=True)


def test_pad_v2_zero_fuses_and_nonzero_does_not(cl_device):
    pads = [(0, 0), (1, 1), (1, 1), (0, 0)]
    m, x = pad_conv_model(F32, [1, 8, 8, 16], pads, pad_op="PAD_V2", pad_value=0.0)
    _check(m, x, cl_device, "f32", fused=True)
    m, x = pad_conv_model(F32, [1, 8, 8, 16], pads, pad_op="PAD_V2", pad_value=0.5)
    _check(m, x, cl_device, "f32", fused=False)
    m, x = pad_conv_model(QA, [1, 8, 8, 16], pads, pad_op="PAD_V2", pad_value=120)
    _check(m, x, cl_device, "quant", fused=True)  # the zero point
    m, x = pad_conv_model(QA, [1, 8, 8, 16], pads, pad_op="PAD_V2", pad_value=0)
    _check(m, x, cl_device, "quant", fused=False)


@pytest.mark.parametrize("case", ["second_reader", "pad_output", "channel_pad", "batch_pad",
                                  "nchw"])
def test_pad_not_fused(cl_device, case):
    pads = [(0, 0), (1, 1), (1, 1), (0, 0)]
    kw = {}
    if case == "channel_pad":
        pads = [(0, 0), (1, 1), (1, 1), (0, 2)]
        kw = dict(op="CONV_2D", o=4)
    elif case == "batch_pad":
        pads = [(1, 0), (1, 1), (1, 1), (0, 0)]
    elif case == "nchw":  # pads channels and height of an NCHW tensor
        kw = dict(nchw=True)
    else:
        kw = {case: True}
    m, x = pad_conv_model(F32, [1, 7, 6, 8], pads, **kw)
    _check(m, x, cl_device, "f32", fused=False)


def test_fused_plan_frees_the_padded_tensor(cl_device):
    """The padded tensor takes no pool bytes: the pool holds the input and the output only."""
    pads = [(0, 0), (0, 1), (0, 1), (0, 0)]
    m, x = pad_conv_model(F32, [1, 32, 32, 16], pads)
    pm = _check(m, x, cl_device, "f32", fused=True)
    report = pm.pool_report()
    assert report["tensor_bytes"] == 32 * 32 * 16 * 4 + 16 * 16 * 16 * 4
    assert report["launches"] == 1
