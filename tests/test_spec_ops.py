"""Spec formulas for the operations and forms the public corpus does not exercise (held-back
CTS specs: LESS/LESS_EQUAL beyond INT32, LOG, SLICE, TILE, CHANNEL_SHUFFLE, HARD_SWISH,
quantized TANH, RESIZE with align_corners / half_pixel_centers, BATCH_MATMUL, RANK, omitted
optional inputs). Expected values are computed here from the spec's definitions."""

from __future__ import annotations

import numpy as np
import pytest

from tests.opkit import one_op_model, rejected, run, scalar, tensor

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
