"""CONV_2D: against a loop reference (float and the integer pipeline), layouts, padding forms,
dilation, quantization, zero-sized batches and validation mutations."""

import numpy as np
import pytest

from tests.kits.conv_reference import execute_direct, naive_conv, requant_ref
from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

RNG = np.random.default_rng(7)


def explicit_scalars(pads, stride, act=0, nchw=None, dil=None):
    """CONV_2D explicit scalars from pads (top, bottom, left, right) and stride (h, w)."""
    top, bottom, left, right = pads
    s = [scalar("INT32", v) for v in (left, right, top, bottom, stride[1], stride[0], act)]
    if nchw is not None:
        s.append(scalar("BOOL", nchw))
    if dil is not None:
        s += [scalar("INT32", dil[1]), scalar("INT32", dil[0])]
    return s


def float_conv_model(xs, f, b, scalars, out_dims, t="TENSOR_FLOAT32", op="CONV_2D"):
    return one_op_model(op, [tensor(t, xs), tensor(t, f.shape, f), tensor(t, b.shape, b)]
                        + scalars, [tensor(t, out_dims)])


@pytest.mark.parametrize("stride,pads,dil", [((1, 1), (0, 0, 0, 0), (1, 1)),
                                             ((2, 1), (1, 0, 2, 1), (1, 1)),
                                             ((1, 2), (1, 1, 1, 1), (2, 2)),
                                             ((3, 3), (0, 2, 2, 0), (1, 2))])
@pytest.mark.parametrize("nchw", [False, True])
def test_float_matches_loop_reference(stride, pads, dil, nchw):
    x = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)
    f = RNG.standard_normal((4, 3, 2, 3)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    want = naive_conv(x, f, b, stride, pads, dil)
    xin = x.transpose(0, 3, 1, 2) if nchw else x
    m = float_conv_model(xin.shape, f, b, explicit_scalars(pads, stride, 0, nchw, dil), [0] * 4)
    (y,) = run(m, [xin])
    if nchw:
        y = y.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_implicit_same_equals_explicit_padding():
    x = RNG.standard_normal((1, 5, 6, 2)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 3, 2)).astype(np.float32)
    b = np.zeros(3, np.float32)
    implicit = [scalar("INT32", v) for v in (1, 2, 2, 0)]  # SAME, stride w 2, stride h 2
    (y,) = run(float_conv_model(x.shape, f, b, implicit, [1, 3, 3, 3]), [x])
    # SAME with in 5/6, filter 3, stride 2: height pads (1, 1), width pads (0, 1)
    np.testing.assert_allclose(y, naive_conv(x, f, b, (2, 2), (1, 1, 0, 1)), rtol=1e-5,
                               atol=1e-5)
    valid = [scalar("INT32", v) for v in (2, 1, 1, 0)]
    (y,) = run(float_conv_model(x.shape, f, b, valid, [1, 3, 4, 3]), [x])
    np.testing.assert_allclose(y, naive_conv(x, f, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("act,lo,hi", [(1, 0, np.inf), (2, -1, 1), (3, 0, 6)])
def test_fused_activation(act, lo, hi):
    x = (RNG.standard_normal((1, 4, 4, 2)) * 5).astype(np.float32)
    f = RNG.standard_normal((2, 2, 2, 2)).astype(np.float32)
    b = np.array([0.5, -0.5], np.float32)
    m = float_conv_model(x.shape, f, b, explicit_scalars((0, 0, 0, 0), (1, 1), act), [1, 3, 3, 2])
    (y,) = run(m, [x])
    np.testing.assert_allclose(y, np.clip(naive_conv(x, f, b), lo, hi), rtol=1e-5, atol=1e-5)


def test_float16_computes_in_float32():
    x = RNG.standard_normal((1, 4, 4, 3)).astype(np.float16)
    f = RNG.standard_normal((2, 3, 3, 3)).astype(np.float16)
    b = RNG.standard_normal(2).astype(np.float16)
    m = float_conv_model(x.shape, f, b, explicit_scalars((1, 1, 1, 1), (1, 1)), [1, 4, 4, 2],
                         t="TENSOR_FLOAT16")
    (y,) = run(m, [x])
    assert y.dtype == np.float16
    want = naive_conv(x.astype(np.float64), f.astype(np.float64), b.astype(np.float64),
                      pads=(1, 1, 1, 1))
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=5 * 2**-10, atol=5 * 2**-10)


def quant_model(xq, fq, bq, scalars, out_dims, s, t="TENSOR_QUANT8_ASYMM", cq=None):
    """s = (x_scale, x_zp, f_scale, f_zp, out_scale, out_zp); cq = per-channel scales."""
    xs, xz, fs, fz, os_, oz = s
    if cq is None:
        ft = tensor(t, fq.shape, fq, fs, fz)
        bt = tensor("TENSOR_INT32", bq.shape, bq, xs * fs)
    else:
        ft = tensor("TENSOR_QUANT8_SYMM_PER_CHANNEL", fq.shape, fq, channel_quant=(cq, 0))
        bt = tensor("TENSOR_INT32", bq.shape, bq)
    return one_op_model("CONV_2D", [tensor(t, xq.shape, None, xs, xz), ft, bt] + scalars,
                        [tensor(t, out_dims, None, os_, oz)])


def test_quant8_asymm_integer_pipeline():
    xq = RNG.integers(0, 256, (1, 5, 5, 3)).astype(np.uint8)
    fq = RNG.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8)
    bq = RNG.integers(-2000, 2000, 4).astype(np.int32)
    s = (0.5, 120, 0.25, 130, 8.0, 100)
    m = quant_model(xq, fq, bq, explicit_scalars((1, 1, 1, 1), (1, 1)), [1, 5, 5, 4], s)
    (y,) = run(m, [xq])
    acc = naive_conv(xq.astype(np.float64) - 120, fq.astype(np.float64) - 130, bq,
                     pads=(1, 1, 1, 1))
    want = np.clip(requant_ref(acc, 0.5 * 0.25 / 8.0) + 100, 0, 255)
    assert np.abs(y.astype(np.int64) - want).max() <= 1


def test_quant8_saturates_and_applies_relu6_in_output_scale():
    xq = np.full((1, 2, 2, 1), 255, np.uint8)
    fq = np.full((1, 1, 1, 1), 255, np.uint8)
    s = (1.0, 0, 1.0, 0, 1.0, 0)
    m = quant_model(xq, fq, np.zeros(1, np.int32), explicit_scalars((0,) * 4, (1, 1)),
                    [1, 2, 2, 1], s)
    np.testing.assert_array_equal(run(m, [xq])[0], 255)
    s = (1.0, 0, 1.0, 0, 0.5, 10)  # RELU6 -> at most 10 + 6 / 0.5 = 22
    m = quant_model(xq, fq, np.zeros(1, np.int32), explicit_scalars((0,) * 4, (1, 1), 3),
                    [1, 2, 2, 1], s)
    np.testing.assert_array_equal(run(m, [xq])[0], 22)


def test_per_channel_signed():
    xq = RNG.integers(-128, 128, (2, 4, 4, 2)).astype(np.int8)
    fq = RNG.integers(-127, 128, (3, 2, 2, 2)).astype(np.int8)
    bq = RNG.integers(-500, 500, 3).astype(np.int32)
    scales = [0.1, 0.02, 0.3]
    s = (0.5, -3, 0.0, 0, 0.8, 5)
    xin = xq.transpose(0, 3, 1, 2)
    m = quant_model(xin, fq, bq, explicit_scalars((0, 1, 1, 0), (1, 2), 0, True),
                    [2, 3, 4, 2], s, "TENSOR_QUANT8_ASYMM_SIGNED", scales)
    (y,) = run(m, [xin])
    acc = naive_conv(xq.astype(np.float64) + 3, fq.astype(np.float64), bq, (1, 2), (0, 1, 1, 0))
    want = np.clip(requant_ref(acc, np.array(scales) * 0.5 / 0.8) + 5, -128, 127)
    assert y.dtype == np.int8 and y.shape == (2, 3, 4, 2)
    assert np.abs(y.transpose(0, 2, 3, 1).astype(np.int64) - want).max() <= 1


@pytest.mark.parametrize("nchw", [False, True])
def test_zero_sized_batch(nchw):
    f = RNG.standard_normal((2, 2, 2, 3)).astype(np.float32)
    x = np.zeros((0, 3, 4, 4) if nchw else (0, 4, 4, 3), np.float32)
    y = execute_direct("CONV_2D", [("TENSOR_FLOAT32", x), ("TENSOR_FLOAT32", f),
                                   ("TENSOR_FLOAT32", np.zeros(2, np.float32))],
                       [0, 0, 0, 0, 1, 1, 0, nchw])
    assert y.shape == ((0, 2, 3, 3) if nchw else (0, 3, 3, 2)) and y.dtype == np.float32


def test_per_channel_requantize_helper_matches_scalar_helper():
    from hal.operations.common import multiply_by_quantized_multiplier, quantize_multiplier
    from hal.operations.conv2d import multiply_by_quantized_multiplier_pc
    acc = RNG.integers(-(2**24), 2**24, (50, 3))
    reals = [0.0007, 0.9, 3.5]
    qs = [quantize_multiplier(r) for r in reals]
    got = multiply_by_quantized_multiplier_pc(acc, np.array([q for q, _ in qs]),
                                              np.array([s for _, s in qs]))
    for c, (q, sh) in enumerate(qs):
        np.testing.assert_array_equal(got[:, c], multiply_by_quantized_multiplier(acc[:, c], q, sh))


# ------------------------------------------------------------------ validation mutations

def _valid_parts():
    f = np.ones((2, 2, 2, 3), np.float32)
    b = np.zeros(2, np.float32)
    ins = [tensor("TENSOR_FLOAT32", [1, 4, 4, 3]), tensor("TENSOR_FLOAT32", f.shape, f),
           tensor("TENSOR_FLOAT32", b.shape, b)] + explicit_scalars((0,) * 4, (1, 1))
    return ins, [tensor("TENSOR_FLOAT32", [1, 3, 3, 2])]


def test_valid_model_runs():
    ins, outs = _valid_parts()
    (y,) = run(one_op_model("CONV_2D", ins, outs), [np.ones((1, 4, 4, 3), np.float32)])
    np.testing.assert_allclose(y, 12.0)


@pytest.mark.parametrize("mutate,needle", [
    (lambda i: i.__setitem__(1, tensor("TENSOR_FLOAT16", [2, 2, 2, 3], np.ones((2, 2, 2, 3)))),
     "match no signature"),
    (lambda i: i.pop(), "match no signature"),
    (lambda i: i.__setitem__(0, tensor("TENSOR_FLOAT32", [1, 4, 3])), "rank 4"),
    (lambda i: i.__setitem__(9, scalar("INT32", 5)), "fused activation"),
    (lambda i: i.__setitem__(7, scalar("INT32", 0)), "stride width"),
    (lambda i: i.__setitem__(3, scalar("INT32", -1)), "padding left"),
    (lambda i: i.__setitem__(2, tensor("TENSOR_FLOAT32", [3], np.zeros(3))), "bias"),
    (lambda i: i.__setitem__(0, tensor("TENSOR_FLOAT32", [1, 4, 4, 2])), "depth"),
])
def test_rejects(mutate, needle):
    ins, outs = _valid_parts()
    mutate(ins)
    assert needle in rejected(one_op_model("CONV_2D", ins, outs))


def test_rejects_bad_padding_scheme_and_dilation():
    ins, outs = _valid_parts()
    implicit = ins[:3] + [scalar("INT32", v) for v in (3, 1, 1, 0)]
    assert "padding scheme" in rejected(one_op_model("CONV_2D", implicit, outs))
    dil = ins[:3] + [scalar("INT32", v) for v in (2, 1, 1, 0)] + [
        scalar("BOOL", False), scalar("INT32", 0), scalar("INT32", 1)]
    assert "dilation width" in rejected(one_op_model("CONV_2D", dil, outs))


def test_rejects_quant_bias_scale_and_per_channel_axis():
    fq = np.ones((2, 1, 1, 1), np.uint8)
    base = [tensor("TENSOR_QUANT8_ASYMM", [1, 2, 2, 1], None, 0.5, 0)]
    scal = explicit_scalars((0,) * 4, (1, 1))
    out = [tensor("TENSOR_QUANT8_ASYMM", [1, 2, 2, 2], None, 1.0, 0)]
    m = one_op_model("CONV_2D", base + [tensor("TENSOR_QUANT8_ASYMM", fq.shape, fq, 0.5, 0),
                                        tensor("TENSOR_INT32", [2], np.zeros(2), 0.3)] + scal,
                     out)
    assert "bias" in rejected(m)
    base = [tensor("TENSOR_QUANT8_ASYMM", [1, 2, 2, 2], None, 0.5, 0)]
    m = one_op_model("CONV_2D", base + [
        tensor("TENSOR_QUANT8_SYMM_PER_CHANNEL", [1, 1, 1, 2], np.ones((1, 1, 1, 2)),
               channel_quant=([0.1, 0.2], 3)), tensor("TENSOR_INT32", [1], np.zeros(1))] + scal,
        [tensor("TENSOR_QUANT8_ASYMM", [1, 2, 2, 1], None, 1.0, 0)])
    assert "channel dimension" in rejected(m)


def test_runtime_scalar_checked_at_execution():
    """A stride given as a model input is only known at execution; 0 fails cleanly there."""
    from hal.errors import ErrorStatus
    from tests.kits.one_op_models import Spec, execute
    ins, outs = _valid_parts()
    ins[7] = Spec("INT32")  # stride width becomes a model input
    m = one_op_model("CONV_2D", ins, [tensor("TENSOR_FLOAT32", [0, 0, 0, 0])])
    x = np.ones((1, 4, 4, 3), np.float32)
    assert run(m, [x, np.int32(1)])[0].shape == (1, 3, 3, 2)
    status, _, _ = execute(m, [x, np.int32(0)])
    assert status != ErrorStatus.NONE
