import numpy as np
import pytest

from hal.operations import _fixedpoint16 as fp
from tests.kits.one_op_models import omitted, one_op_model, rejected, run, scalar, tensor

Q8, Q16, I32 = "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT16_SYMM", "TENSOR_INT32"


@pytest.mark.parametrize("bits", [0, 3, 4])
def test_fixedpoint_logistic_tanh_close_to_float(bits):
    a = np.arange(-32768, 32768, 7)
    real = a / 2.0 ** (15 - bits)
    assert np.abs(fp.logistic(a, bits) - 32768 / (1 + np.exp(-real))).max() < 12
    assert np.abs(fp.tanh(a, bits) - 32768 * np.tanh(real)).max() < 16
    assert fp.logistic(np.array([0]), bits)[0] == 16384
    assert fp.tanh(np.array([0]), bits)[0] == 0


def test_inv_sqrt_multiplier():
    for v in (2, 3, 100, 1998, 123456, 1 << 30):
        q, s = fp.inv_sqrt_multiplier(v)
        assert abs(q * 2.0 ** (s - 31) - 1 / np.sqrt(v)) < 1e-3 / np.sqrt(v)


def _q16_model(batch=1, n_in=2, out=3, w_scale=0.01, w_zp=100, other_scale=None):
    x = dict(scale=1 / 128, zero_point=128)
    w = dict(scale=w_scale, zero_point=w_zp)
    b = dict(scale=w_scale / 128)
    specs = [tensor(Q8, [batch, n_in], **x)]
    specs += [tensor(Q8, [out, n_in], **w)] * 4
    specs += [tensor(Q8, [out, out], **w)] * 3
    specs += [tensor(Q8, [out, out], scale=other_scale or w_scale, zero_point=w_zp)]
    specs += [tensor(I32, [out], **b)] * 4
    specs += [tensor(Q16, [batch, out], scale=1 / 2048), tensor(Q8, [batch, out], **x)]
    outs = [tensor(Q16, [batch, out], scale=1 / 2048), tensor(Q8, [batch, out], **x)]
    return one_op_model("QUANTIZED_16BIT_LSTM", specs, outs)


def test_quantized_16bit_lstm_neutral_gates():
    # weights at their zero point and zero biases: i = f = o = 1/2, g = 0
    m = _q16_model()
    c_prev = np.array([[1024, -2048, 4000]], np.int16)
    feed = [np.array([[200, 30]], np.uint8)] + [np.full((3, 2), 100, np.uint8)] * 4 + \
        [np.full((3, 3), 100, np.uint8)] * 4 + [np.zeros(3, np.int32)] * 4 + \
        [c_prev, np.array([[128, 0, 255]], np.uint8)]
    c_new, out = run(m, feed)
    np.testing.assert_allclose(c_new, c_prev // 2, atol=1)
    expected = 128 + np.round(128 * 0.5 * np.tanh(c_prev / 2 / 2048.0))
    np.testing.assert_allclose(out.astype(int), expected, atol=1)


def test_quantized_16bit_lstm_rejects_mixed_weight_scales():
    assert "scale and zero point" in rejected(_q16_model(other_scale=0.02))


Q8S, Q8W = "TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_SYMM"


def _om(t):
    spec = omitted(t)
    if t != I32:
        spec.scale = 0.01  # quantized operands need a scale even without a value
    return spec


def _qlstm_model(cell_scale=2.0 ** -11, cifg=True, ln=True, proj=False):
    n_in, units, batch = 3, 4, 2
    out = units
    w = dict(scale=0.01)
    specs = [tensor(Q8S, [batch, n_in], scale=1 / 128)]
    specs += [_om(Q8W) if cifg else tensor(Q8W, [units, n_in], **w)]
    specs += [tensor(Q8W, [units, n_in], **w)] * 3
    specs += [_om(Q8W) if cifg else tensor(Q8W, [units, out], **w)]
    specs += [tensor(Q8W, [units, out], **w)] * 3
    specs += [_om(Q16)] * 3
    specs += [_om(I32) if cifg else tensor(I32, [units])] + [tensor(I32, [units])] * 3
    specs += [tensor(Q8W, [out, units], **w), tensor(I32, [out])] if proj else \
        [_om(Q8W), _om(I32)]
    specs += [tensor(Q8S, [batch, out], scale=1 / 128), tensor(Q16, [batch, units],
                                                                scale=cell_scale)]
    ln_spec = tensor(Q16, [units], scale=1 / 4096)
    specs += [_om(Q16) if cifg or not ln else ln_spec] + \
        [ln_spec if ln else _om(Q16)] * 3
    specs += [scalar("FLOAT32", 0.0)] * 2 + [scalar("FLOAT32", 0.007)] * 4 + \
        [scalar("INT32", 0), scalar("FLOAT32", 1 / 128)]
    outs = [tensor(Q8S, [batch, out], scale=1 / 128), tensor(Q16, [batch, units],
                                                              scale=cell_scale),
            tensor(Q8S, [batch, out], scale=1 / 128)]
    return one_op_model("QUANTIZED_LSTM", specs, outs)


def _sig(v):
    return 1 / (1 + np.exp(-v))


def test_qlstm_close_to_float_cifg_layer_norm():
    rng = np.random.default_rng(1)
    x = rng.integers(-100, 100, (2, 3)).astype(np.int8)
    wx = [rng.integers(-100, 100, (4, 3)).astype(np.int8) for _ in range(3)]
    wr = [rng.integers(-100, 100, (4, 4)).astype(np.int8) for _ in range(3)]
    bias = [np.zeros(4, np.int32)] * 3
    h = rng.integers(-100, 100, (2, 4)).astype(np.int8)
    c = rng.integers(-2000, 2000, (2, 4)).astype(np.int16)
    ln = [np.full(4, 4096, np.int16)] * 3  # layer norm weight 1.0
    out, c_new, out2 = run(_qlstm_model(), [x, *wx, *wr, *bias, h, c, *ln])
    np.testing.assert_array_equal(out, out2)
    xr, hr, cr = x / 128, h / 128, c / 2048

    def gate(k):
        z = xr @ (wx[k] * 0.01).T + hr @ (wr[k] * 0.01).T
        return (z - z.mean(1, keepdims=True)) / np.sqrt(z.var(1, keepdims=True) + 1e-8)

    f = _sig(gate(0))
    c_ref = f * cr + (1 - f) * np.tanh(gate(1))
    h_ref = _sig(gate(2)) * np.tanh(c_ref)
    np.testing.assert_allclose(c_new / 2048, c_ref, atol=0.02)
    np.testing.assert_allclose(out / 128, h_ref, atol=0.03)


def test_qlstm_rejects():
    assert "power of two" in rejected(_qlstm_model(cell_scale=0.0003))
    m = _qlstm_model(cifg=False)
    m.main.operations[0].inputs[5] = m.main.operations[0].inputs[9]  # an omitted operand
    assert "input gate" in rejected(m)
