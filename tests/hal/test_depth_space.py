import numpy as np
import pytest

from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

F32 = "TENSOR_FLOAT32"


def _model(op, in_shape, out_shape, block, nchw=None, type_=F32, q=None):
    q = q or {}
    ins = [tensor(type_, in_shape, **q), scalar("INT32", block)]
    if nchw is not None:
        ins.append(scalar("BOOL", nchw))
    return one_op_model(op, ins, [tensor(type_, out_shape, **q)])


def test_depth_to_space_tf_example():
    # TensorFlow's documented example: [1, 1, 1, 4] block 2 -> [1, 2, 2, 1]
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 1, 4)
    (y,) = run(_model("DEPTH_TO_SPACE", x.shape, (1, 2, 2, 1), 2), [x])
    np.testing.assert_array_equal(y.reshape(2, 2), [[1, 2], [3, 4]])


def test_space_to_depth_channel_order():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    (y,) = run(_model("SPACE_TO_DEPTH", x.shape, (1, 2, 2, 4), 2), [x])
    np.testing.assert_array_equal(y[0, 0, 0], [0, 1, 4, 5])
    np.testing.assert_array_equal(y[0, 1, 1], [10, 11, 14, 15])


@pytest.mark.parametrize("nchw", [False, True])
def test_round_trip_quant_signed(nchw):
    rng = np.random.default_rng(0)
    t, q = "TENSOR_QUANT8_ASYMM_SIGNED", dict(scale=0.5, zero_point=-3)
    x = rng.integers(-128, 128, (2, 6, 4, 3)).astype(np.int8)
    mid_shape = (2, 3, 2, 12)
    if nchw:
        x = x.transpose(0, 3, 1, 2)
        mid_shape = (2, 12, 3, 2)
    (mid,) = run(_model("SPACE_TO_DEPTH", x.shape, mid_shape, 2, nchw, t, q), [x])
    (back,) = run(_model("DEPTH_TO_SPACE", mid.shape, x.shape, 2, nchw, t, q), [mid])
    assert back.dtype == np.int8
    np.testing.assert_array_equal(back, x)


def test_nchw_matches_nhwc():
    x = np.arange(2 * 2 * 2 * 8, dtype=np.float32).reshape(2, 2, 2, 8)
    (a,) = run(_model("DEPTH_TO_SPACE", x.shape, (2, 4, 4, 2), 2, False), [x])
    xc = x.transpose(0, 3, 1, 2)
    (b,) = run(_model("DEPTH_TO_SPACE", xc.shape, (2, 2, 4, 4), 2, True), [xc])
    np.testing.assert_array_equal(b, a.transpose(0, 3, 1, 2))


def test_rejects_block_size_zero():
    assert "block_size" in rejected(_model("DEPTH_TO_SPACE", (1, 1, 1, 4), (1, 2, 2, 1), 0))


def test_rejects_depth_not_divisible():
    assert "multiple of block_size^2" in rejected(
        _model("DEPTH_TO_SPACE", (1, 1, 1, 6), (1, 2, 2, 1), 2))


def test_rejects_spatial_not_divisible():
    assert "multiples of block_size" in rejected(
        _model("SPACE_TO_DEPTH", (1, 3, 4, 1), (1, 1, 2, 4), 2))


def test_rejects_bad_rank():
    assert "rank 4" in rejected(_model("SPACE_TO_DEPTH", (4, 4, 1), (2, 2, 4), 2))


def test_rejects_wrong_layout_type():
    m = one_op_model("DEPTH_TO_SPACE", [tensor(F32, (1, 1, 1, 4)), scalar("INT32", 2),
                                        scalar("INT32", 1)], [tensor(F32, (1, 2, 2, 1))])
    assert "match no signature" in rejected(m)
