"""Spec formulas for the operations and forms the public corpus does not exercise (held-back
CTS specs: LESS/LESS_EQUAL beyond INT32, LOG, SLICE, TILE, CHANNEL_SHUFFLE, HARD_SWISH,
quantized TANH, RESIZE with align_corners / half_pixel_centers, BATCH_MATMUL, RANK, omitted
optional inputs). Expected values are computed here from the spec's definitions."""

from __future__ import annotations

import numpy as np
import pytest

from tests.kits.one_op_models import omitted, one_op_model, rejected, run, scalar, tensor

F32, F16, I32, B8 = "TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_INT32", "TENSOR_BOOL8"
Q8, QS8 = "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"
DT = {F32: np.float32, F16: np.float16, I32: np.int32, B8: np.bool_, Q8: np.uint8,
      QS8: np.int8}
RNG = np.random.default_rng(7)


def _q(t, scale=0.5, zp=None):
    if t == Q8:
        return dict(scale=scale, zero_point=128 if zp is None else zp)
    if t == QS8:
        return dict(scale=scale, zero_point=0 if zp is None else zp)
    return {}


def _values(t, shape):
    if t == B8:
        return RNG.integers(0, 2, shape).astype(bool)
    if t in (Q8, QS8):
        info = np.iinfo(DT[t])
        return RNG.integers(info.min, info.max + 1, shape).astype(DT[t])
    if t == I32:
        return RNG.integers(-50, 50, shape).astype(np.int32)
    return RNG.uniform(-4, 4, shape).astype(DT[t])


def _real(t, x, q):
    return (x.astype(np.float64) - q["zero_point"]) * q["scale"] if q else x


# ------------------------------------------------------------------ LESS, LESS_EQUAL

@pytest.mark.parametrize("op,fn", [("LESS", np.less), ("LESS_EQUAL", np.less_equal)])
@pytest.mark.parametrize("t", [F32, F16, I32, B8, Q8, QS8])
def test_less_broadcast(op, fn, t):
    qa, qb = _q(t, 0.5, None), _q(t, 0.25, 3 if t == QS8 else 120)  # scales may differ
    a, b = _values(t, (2, 1)), _values(t, (3,))
    b[0] = a[0, 0] if not qa else b[0]  # a tie
    m = one_op_model(op, [tensor(t, [2, 1], **qa), tensor(t, [3], **qb)], [tensor(B8, [2, 3])])
    (y,) = run(m, [a, b])
    np.testing.assert_array_equal(y, fn(_real(t, a, qa), _real(t, b, qb)))


def test_less_quant_compares_real_values():
    # 130 at (0.5, 128) is 1.0; 140 at (0.1, 130) is 1.0: equal reals, different codes
    m = one_op_model("LESS_EQUAL", [tensor(Q8, [2], scale=0.5, zero_point=128),
                                    tensor(Q8, [2], scale=0.1, zero_point=130)],
                     [tensor(B8, [2])])
    (y,) = run(m, [np.array([130, 131], np.uint8), np.array([140, 140], np.uint8)])
    np.testing.assert_array_equal(y, [True, False])


def test_less_rejects_mixed_types():
    m = one_op_model("LESS", [tensor(F32, [2]), tensor(I32, [2])], [tensor(B8, [2])])
    assert "match no signature" in rejected(m)


# ------------------------------------------------------------------ LOG

@pytest.mark.parametrize("t", [F32, F16])
def test_log(t):
    x = np.array([0.0, 1e-3, 0.5, 1.0, 2.718281828, 1000.0], dtype=DT[t])
    (y,) = run(one_op_model("LOG", [tensor(t, [2, 3])], [tensor(t, [2, 3])]), [x.reshape(2, 3)])
    assert y.dtype == DT[t]
    with np.errstate(divide="ignore"):
        want = np.log(x.astype(np.float32)).astype(DT[t]).reshape(2, 3)
    np.testing.assert_array_equal(y, want)


# ------------------------------------------------------------------ SLICE, TILE

@pytest.mark.parametrize("t", [F32, F16, I32, Q8, QS8])
def test_slice_all_types(t):
    x = _values(t, (3, 4, 2))
    m = one_op_model("SLICE", [tensor(t, [3, 4, 2], **_q(t)), tensor(I32, [3], [1, 0, 1]),
                               tensor(I32, [3], [-1, 3, 1])], [tensor(t, [2, 3, 1], **_q(t))])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, x[1:, 0:3, 1:2])


def test_slice_rejects_size_past_end():
    m = one_op_model("SLICE", [tensor(F32, [3]), tensor(I32, [1], [2]), tensor(I32, [1], [2])],
                     [tensor(F32, [2])])
    assert "size" in rejected(m)


@pytest.mark.parametrize("t", [F32, F16, I32, Q8, QS8])
def test_tile_all_types(t):
    x = _values(t, (2, 3))
    m = one_op_model("TILE", [tensor(t, [2, 3], **_q(t)), tensor(I32, [2], [2, 3])],
                     [tensor(t, [4, 9], **_q(t))])
    (y,) = run(m, [x])
    want = np.array([[x[i % 2, j % 3] for j in range(9)] for i in range(4)])
    np.testing.assert_array_equal(y, want)


def test_tile_rank_mismatch_rejected():
    m = one_op_model("TILE", [tensor(F32, [2, 3]), tensor(I32, [1], [2])], [tensor(F32, [4, 3])])
    assert "multiples" in rejected(m)


# ------------------------------------------------------------------ CHANNEL_SHUFFLE

@pytest.mark.parametrize("t", [F32, F16, Q8, QS8])
@pytest.mark.parametrize("axis", [-1, 1, 0, -3])
def test_channel_shuffle(t, axis):
    shape = [6, 6, 3]
    x = _values(t, shape)
    groups = 3
    m = one_op_model("CHANNEL_SHUFFLE", [tensor(t, shape, **_q(t)), scalar("INT32", groups),
                                         scalar("INT32", axis)], [tensor(t, shape, **_q(t))])
    (y,) = run(m, [x])
    ax = axis % 3
    c = shape[ax]
    size = c // groups
    # spec: output channel k * num_groups + g = input channel g * group_size + k
    for k in range(size):
        for g in range(groups):
            np.testing.assert_array_equal(np.take(y, k * groups + g, axis=ax),
                                          np.take(x, g * size + k, axis=ax))


def test_channel_shuffle_rejects_groups_not_dividing():
    m = one_op_model("CHANNEL_SHUFFLE", [tensor(F32, [2, 5]), scalar("INT32", 2),
                                         scalar("INT32", 1)], [tensor(F32, [2, 5])])
    assert "num_groups" in rejected(m)


# ------------------------------------------------------------------ HARD_SWISH, TANH (quant)

def _hard_swish(x):
    return x * np.minimum(6, np.maximum(0, x + 3)) / 6


@pytest.mark.parametrize("t", [F32, F16])
def test_hard_swish_float(t):
    x = np.linspace(-5, 5, 41).astype(DT[t])
    (y,) = run(one_op_model("HARD_SWISH", [tensor(t, [41])], [tensor(t, [41])]), [x])
    np.testing.assert_allclose(y.astype(np.float64), _hard_swish(x.astype(np.float64)),
                               rtol=1e-3 if t == F16 else 1e-6, atol=1e-3 if t == F16 else 1e-6)


@pytest.mark.parametrize("t", [Q8, QS8])
@pytest.mark.parametrize("qin,qout", [((0.05, 100), (0.03, 50)), ((0.1, 128), (0.1, 128)),
                                      ((0.02, 10), (0.5, 200)), ((1 / 16, 64), (1 / 64, 0))])
def test_hard_swish_quant_within_one(t, qin, qout):
    shift = 128 if t == QS8 else 0
    qi = dict(scale=qin[0], zero_point=qin[1] - shift)
    qo = dict(scale=qout[0], zero_point=qout[1] - shift)
    info = np.iinfo(DT[t])
    x = np.arange(info.min, info.max + 1).astype(DT[t])
    m = one_op_model("HARD_SWISH", [tensor(t, [x.size], **qi)], [tensor(t, [x.size], **qo)])
    (y,) = run(m, [x])
    want = np.clip(np.round(_hard_swish(_real(t, x, qi)) / qo["scale"]) + qo["zero_point"],
                   info.min, info.max)
    assert np.abs(y.astype(np.int64) - want).max() <= 1


@pytest.mark.parametrize("t,zp", [(Q8, 128), (QS8, 0)])
@pytest.mark.parametrize("qin", [(0.05, 100), (1 / 32, 128), (0.2, 30)])
def test_tanh_quant_within_one(t, zp, qin):
    shift = 128 if t == QS8 else 0
    qi = dict(scale=qin[0], zero_point=qin[1] - shift)
    info = np.iinfo(DT[t])
    x = np.arange(info.min, info.max + 1).astype(DT[t])
    m = one_op_model("TANH", [tensor(t, [x.size], **qi)],
                     [tensor(t, [x.size], scale=1 / 128, zero_point=zp)])
    (y,) = run(m, [x])
    want = np.clip(np.round(np.tanh(_real(t, x, qi)) * 128) + zp, info.min, info.max)
    assert np.abs(y.astype(np.int64) - want).max() <= 1


def test_tanh_quant_rejects_wrong_output_quant():
    m = one_op_model("TANH", [tensor(Q8, [2], scale=0.1, zero_point=128)],
                     [tensor(Q8, [2], scale=1 / 256, zero_point=0)])
    assert "scale" in rejected(m)


# ------------------------------------------------------------------ RESIZE (1.3 flags)

def _resize_ref(op, img, out_h, out_w, align, half):
    """Per pixel, from the TensorFlow definitions the spec cites (NHWC, float64)."""
    n, h, w, c = img.shape
    out = np.zeros((n, out_h, out_w, c))

    def scale(i, o):
        return (i - 1) / (o - 1) if align and o > 1 else i / o

    sh, sw = scale(h, out_h), scale(w, out_w)
    for y in range(out_h):
        for x in range(out_w):
            if op == "RESIZE_NEAREST_NEIGHBOR":
                off = 0.5 if half else 0.0
                fy, fx = (y + off) * sh, (x + off) * sw
                iy = int(np.floor(fy + 0.5)) if align else int(np.floor(fy))
                ix = int(np.floor(fx + 0.5)) if align else int(np.floor(fx))
                iy, ix = min(iy, h - 1), min(ix, w - 1)
                out[:, y, x, :] = img[:, max(iy, 0), max(ix, 0), :]
                continue
            fy = (y + 0.5) * sh - 0.5 if half else y * sh
            fx = (x + 0.5) * sw - 0.5 if half else x * sw
            y0, x0 = max(int(np.floor(fy)), 0), max(int(np.floor(fx)), 0)
            y1, x1 = min(int(np.ceil(fy)), h - 1), min(int(np.ceil(fx)), w - 1)
            dy, dx = fy - y0, fx - x0
            out[:, y, x, :] = (img[:, y0, x0] * (1 - dy) * (1 - dx) + img[:, y1, x0] * dy * (1 - dx)
                               + img[:, y0, x1] * (1 - dy) * dx + img[:, y1, x1] * dy * dx)
    return out


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("size", [(3, 5), (7, 2), (1, 4)])
@pytest.mark.parametrize("t", [F32, F16, Q8, QS8])
@pytest.mark.parametrize("nchw", [False, True])
def test_resize_flags(op, align, half, size, t, nchw):
    h, w = size
    x = _values(t, (2, 4, 3, 2))
    q = _q(t, 0.25)
    img = x if not nchw else x.transpose(0, 3, 1, 2)
    shape_in = list(img.shape)
    oshape = [2, h, w, 2] if not nchw else [2, 2, h, w]
    m = one_op_model(op, [tensor(t, shape_in, **q), scalar("INT32", w), scalar("INT32", h),
                          scalar("BOOL", nchw), scalar("BOOL", align), scalar("BOOL", half)],
                     [tensor(t, oshape, **q)])
    (y,) = run(m, [img])
    want = _resize_ref(op, x.astype(np.float64), h, w, align, half)
    if nchw:
        y = y.transpose(0, 2, 3, 1)
    if t in (Q8, QS8):
        assert np.abs(y.astype(np.int64) - np.floor(want + 0.5)).max() <= 1
    else:
        np.testing.assert_allclose(y.astype(np.float64), want, atol=5e-3 if t == F16 else 1e-5,
                                   rtol=5e-3 if t == F16 else 1e-5)


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
def test_resize_by_scale_with_flags(op):
    x = _values(F32, (1, 2, 3, 1))
    m = one_op_model(op, [tensor(F32, [1, 2, 3, 1]), scalar("FLOAT32", 1.5),
                          scalar("FLOAT32", 2.0), scalar("BOOL", False), scalar("BOOL", False),
                          scalar("BOOL", True)], [tensor(F32, [1, 4, 4, 1])])
    (y,) = run(m, [x])
    np.testing.assert_allclose(y, _resize_ref(op, x.astype(np.float64), 4, 4, False, True),
                               atol=1e-5)


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
def test_resize_signed_is_unsigned_shifted(op, align, half):
    """Bug fixed: signed bilinear results rounded negative values up (trunc(x + 0.5)). The two
    types now take TFLite's two kernels (uint8: float weights; int8: 10-bit fixed point),
    which round apart by at most one step."""
    x = _values(Q8, (1, 3, 4, 2))
    outs = []
    for t, shift in ((Q8, 0), (QS8, 128)):
        q = dict(scale=0.5, zero_point=100 - shift)
        m = one_op_model(op, [tensor(t, [1, 3, 4, 2], **q), scalar("INT32", 7),
                              scalar("INT32", 5), scalar("BOOL", False), scalar("BOOL", align),
                              scalar("BOOL", half)], [tensor(t, [1, 5, 7, 2], **q)])
        (y,) = run(m, [(x.astype(np.int64) - shift).astype(DT[t])])
        outs.append(y.astype(np.int64) + shift)
    diff = np.abs(outs[0] - outs[1])
    assert diff.max() <= 1


def test_resize_rejects_align_and_half_pixel():
    m = one_op_model("RESIZE_BILINEAR", [tensor(F32, [1, 2, 2, 1]), scalar("INT32", 3),
                                         scalar("INT32", 3), scalar("BOOL", False),
                                         scalar("BOOL", True), scalar("BOOL", True)],
                     [tensor(F32, [1, 3, 3, 1])])
    assert "align_corners" in rejected(m)


# ------------------------------------------------------------------ BATCH_MATMUL

@pytest.mark.parametrize("t", [F32, F16, I32])
@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True),
                                         (True, True)])
@pytest.mark.parametrize("nflags", [0, 1, 2])
def test_batch_matmul(t, adj_x, adj_y, nflags):
    if nflags < 2 and adj_y or nflags < 1 and adj_x:
        return
    a, b = _values(t, (2, 3, 4)), _values(t, (2, 4, 5))
    ai = a.swapaxes(-1, -2) if adj_x else a
    bi = b.swapaxes(-1, -2) if adj_y else b
    flags = [scalar("BOOL", adj_x), scalar("BOOL", adj_y)][:nflags]
    m = one_op_model("BATCH_MATMUL", [tensor(t, ai.shape), tensor(t, bi.shape), *flags],
                     [tensor(t, [2, 3, 5])])
    (y,) = run(m, [ai, bi])
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    tol = 5e-3 if t == F16 else 1e-5
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=tol, atol=tol)


def test_batch_matmul_quant_signed_within_one():
    qa, qb, qo = dict(scale=0.05, zero_point=3), dict(scale=0.1, zero_point=-2), \
        dict(scale=0.4, zero_point=-10)
    a, b = _values(QS8, (3, 2, 6)), _values(QS8, (3, 6, 4))
    m = one_op_model("BATCH_MATMUL", [tensor(QS8, [3, 2, 6], **qa), tensor(QS8, [3, 6, 4], **qb)],
                     [tensor(QS8, [3, 2, 4], **qo)])
    (y,) = run(m, [a, b])
    real = np.matmul(_real(QS8, a, qa), _real(QS8, b, qb))
    want = np.clip(np.round(real / qo["scale"]) + qo["zero_point"], -128, 127)
    assert np.abs(y.astype(np.int64) - want).max() <= 1


def test_batch_matmul_omitted_flags():
    a, b = _values(F32, (3, 4)), _values(F32, (3, 5))
    m = one_op_model("BATCH_MATMUL", [tensor(F32, [3, 4]), tensor(F32, [3, 5]), omitted("BOOL"),
                                      scalar("BOOL", False)], [tensor(F32, [4, 5])])
    # an omitted adj_x is its default (false): [3, 4] x [3, 5] does not multiply
    assert "columns" in rejected(m)
    m = one_op_model("BATCH_MATMUL", [tensor(F32, [4, 3]), tensor(F32, [3, 5]), omitted("BOOL"),
                                      omitted("BOOL")], [tensor(F32, [4, 5])])
    (y,) = run(m, [a.T.copy(), b])
    np.testing.assert_allclose(y, a.T @ b, rtol=1e-5)


# ------------------------------------------------------------------ RANK, omitted inputs

@pytest.mark.parametrize("t,extra", [
    ("TENSOR_QUANT16_SYMM", dict(scale=0.5)), ("TENSOR_BOOL8", {}),
    ("TENSOR_QUANT16_ASYMM", dict(scale=0.5, zero_point=3)), ("TENSOR_QUANT8_SYMM",
                                                              dict(scale=0.5)),
    (F32, {}), (I32, {}), (QS8, dict(scale=0.5))])
def test_rank_types(t, extra):
    dt = {"TENSOR_QUANT16_SYMM": np.int16, "TENSOR_QUANT16_ASYMM": np.uint16,
          "TENSOR_QUANT8_SYMM": np.int8}.get(t, DT.get(t))
    x = np.zeros((2, 1, 3), dtype=dt)
    (y,) = run(one_op_model("RANK", [tensor(t, [2, 1, 3], **extra)], [scalar("INT32", None)]),
               [x])
    assert int(y) == 3


def test_rank_per_channel_constant():
    m = one_op_model("RANK", [tensor("TENSOR_QUANT8_SYMM_PER_CHANNEL", [2, 3],
                                     np.ones((2, 3), np.int8), channel_quant=([0.5, 0.25], 0))],
                     [scalar("INT32", None)])
    (y,) = run(m, [])
    assert int(y) == 2


@pytest.mark.parametrize("t", [F32, F16, Q8, QS8])
def test_squeeze_omitted_axes_squeezes_all_ones(t):
    x = _values(t, (1, 3, 1, 2))
    m = one_op_model("SQUEEZE", [tensor(t, [1, 3, 1, 2], **_q(t)), omitted(I32)],
                     [tensor(t, [3, 2], **_q(t))])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, x.reshape(3, 2))


@pytest.mark.parametrize("t", [F32, F16, Q8, QS8])
def test_transpose_omitted_perm_reverses(t):
    x = _values(t, (2, 3, 4))
    m = one_op_model("TRANSPOSE", [tensor(t, [2, 3, 4], **_q(t)), omitted(I32)],
                     [tensor(t, [4, 3, 2], **_q(t))])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, x.transpose(2, 1, 0))


def test_mul_int32():
    a, b = _values(I32, (2, 3)), _values(I32, (3,))
    m = one_op_model("MUL", [tensor(I32, [2, 3]), tensor(I32, [3]), scalar("INT32", 0)],
                     [tensor(I32, [2, 3])])
    (y,) = run(m, [a, b])
    np.testing.assert_array_equal(y, a * b)


def test_mul_int32_rejects_activation():
    m = one_op_model("MUL", [tensor(I32, [2]), tensor(I32, [2]), scalar("INT32", 1)],
                     [tensor(I32, [2])])
    assert "activation" in rejected(m).lower() or "NONE" in rejected(m)


@pytest.mark.parametrize("t", [Q8, QS8])
def test_reduce_max_quant(t):
    x = _values(t, (2, 3, 4))
    m = one_op_model("REDUCE_MAX", [tensor(t, [2, 3, 4], **_q(t)), tensor(I32, [2], [-1, 0]),
                                    scalar("BOOL", True)], [tensor(t, [1, 3, 1], **_q(t))])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, x.max(axis=(0, 2), keepdims=True))


# ------------------------------------------------------------------ GROUPED_CONV_2D (float)

def _grouped_conv_ref(x, w, b, groups, stride, pad):
    """The spec's formula, NHWC, explicit padding (left, right, top, bottom)."""
    n, h, wd, cin = x.shape
    cout, fh, fw, dg = w.shape
    xp = np.pad(x, ((0, 0), (pad[2], pad[3]), (pad[0], pad[1]), (0, 0)))
    oh = (h + pad[2] + pad[3] - fh) // stride + 1
    ow = (wd + pad[0] + pad[1] - fw) // stride + 1
    out = np.zeros((n, oh, ow, cout))
    mult = cout // groups
    for i in range(oh):
        for j in range(ow):
            win = xp[:, i * stride:i * stride + fh, j * stride:j * stride + fw, :]
            for oc in range(cout):
                g = oc // mult
                out[:, i, j, oc] = (win[..., g * dg:(g + 1) * dg] * w[oc]).sum(axis=(1, 2, 3))
    return out + b


@pytest.mark.parametrize("t", [F32, F16])
@pytest.mark.parametrize("nchw", [False, True])
def test_grouped_conv_float(t, nchw):
    x = _values(t, (2, 5, 4, 6))
    w = _values(t, (4, 2, 3, 3))  # 2 groups of depth 3, 2 filters each
    b = _values(t, (4,))
    pad = (1, 0, 0, 1)
    want = _grouped_conv_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64),
                             2, 2, pad)
    xi = x.transpose(0, 3, 1, 2) if nchw else x
    oshape = list(want.shape) if not nchw else [2, 4, want.shape[1], want.shape[2]]
    m = one_op_model("GROUPED_CONV_2D", [
        tensor(t, xi.shape), tensor(t, w.shape, w), tensor(t, [4], b),
        *[scalar("INT32", p) for p in pad], scalar("INT32", 2), scalar("INT32", 2),
        scalar("INT32", 2), scalar("INT32", 0), scalar("BOOL", nchw)], [tensor(t, oshape)])
    (y,) = run(m, [xi])
    if nchw:
        y = y.transpose(0, 2, 3, 1)
    tol = 2e-2 if t == F16 else 1e-5
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
@pytest.mark.parametrize("t", [F32, F16, Q8, QS8])
@pytest.mark.parametrize("by_scale", [False, True])
def test_resize_align_corners_without_half_pixel_input(op, t, by_scale):
    """The 5-input form: align_corners given, half_pixel_centers left out (false)."""
    x = _values(t, (1, 3, 4, 2))
    q = _q(t, 0.25)
    if by_scale:
        st = "FLOAT16" if t == F16 else "FLOAT32"
        size = [scalar(st, 1.75), scalar(st, 2.0)]  # width 4 * 1.75 = 7, height 3 * 2 = 6
    else:
        size = [scalar("INT32", 7), scalar("INT32", 6)]
    m = one_op_model(op, [tensor(t, [1, 3, 4, 2], **q), *size, scalar("BOOL", False),
                          scalar("BOOL", True)], [tensor(t, [1, 6, 7, 2], **q)])
    (y,) = run(m, [x])
    want = _resize_ref(op, x.astype(np.float64), 6, 7, True, False)
    if t in (Q8, QS8):
        assert np.abs(y.astype(np.int64) - np.floor(want + 0.5)).max() <= 1
    else:
        np.testing.assert_allclose(y.astype(np.float64), want, atol=2e-2 if t == F16 else 1e-5,
                                   rtol=5e-3 if t == F16 else 1e-5)
