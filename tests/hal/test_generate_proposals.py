import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.one_op_models import execute, one_op_model, rejected, run, scalar, tensor

OP = "GENERATE_PROPOSALS"
F32 = "TENSOR_FLOAT32"


def model(n=1, h=2, w=2, a=1, stride=4.0, pre=-1, post=-1, iou=0.5, min_size=0.0, nchw=False,
          t=F32, f="FLOAT32", anchor_t=None, info_t=None, q=None, dq=None, aq=None, iq=None,
          anchors_shape=None):
    s_shape = [n, a, h, w] if nchw else [n, h, w, a]
    d_shape = [n, a * 4, h, w] if nchw else [n, h, w, a * 4]
    return one_op_model(OP, [
        tensor(t, s_shape, **(q or {})), tensor(t, d_shape, **(dq or {})),
        tensor(anchor_t or t, anchors_shape or [a, 4], **(aq or {})),
        tensor(info_t or t, [n, 2], **(iq or {})), scalar(f, stride), scalar(f, stride),
        scalar("INT32", pre), scalar("INT32", post), scalar(f, iou), scalar(f, min_size),
        scalar("BOOL", nchw)],
        [tensor(t, [0], **(q or {})), tensor(info_t or t, [0, 4], **(iq or {})),
         tensor("TENSOR_INT32", [0])])


ANCHOR = np.float32([[0, 0, 4, 4]])
SCORES = np.float32([0.2, 0.9, 0.5, 0.7]).reshape(1, 2, 2, 1)  # (h, w) = (0,0) (0,1) (1,0) (1,1)
TILES = np.float32([[4, 0, 8, 4], [4, 4, 8, 8], [0, 4, 4, 8], [0, 0, 4, 4]])  # by score
INFO = np.float32([[8, 8]])


def test_tiles_sorted_by_score():
    deltas = np.zeros((1, 2, 2, 4), np.float32)
    scores, boxes, batch = run(model(), [SCORES, deltas, ANCHOR, INFO])
    np.testing.assert_allclose(scores, [0.9, 0.7, 0.5, 0.2])
    np.testing.assert_array_equal(boxes, TILES)
    np.testing.assert_array_equal(batch, [0, 0, 0, 0])


def test_pre_and_post_limits_and_min_size():
    deltas = np.zeros((1, 2, 2, 4), np.float32)
    scores, _, _ = run(model(pre=3, post=2), [SCORES, deltas, ANCHOR, INFO])
    np.testing.assert_allclose(scores, [0.9, 0.7])
    deltas[0, 0, 1, 2] = np.log(0.25)  # the best tile shrinks to width 1
    scores, _, _ = run(model(min_size=2.0), [SCORES, deltas, ANCHOR, INFO])
    np.testing.assert_allclose(scores, [0.7, 0.5, 0.2])


def test_overlapping_proposals_are_suppressed():
    deltas = np.zeros((1, 2, 2, 4), np.float32)
    deltas[0, 1, 0, 0] = 0.9  # the 0.5 tile moves right by 3.6: IoU 0.82 with the 0.7 tile
    scores, boxes, _ = run(model(iou=0.5), [SCORES, deltas, ANCHOR, INFO])
    np.testing.assert_allclose(scores, [0.9, 0.7, 0.2])
    scores, boxes, _ = run(model(iou=0.9), [SCORES, deltas, ANCHOR, INFO])
    np.testing.assert_allclose(scores, [0.9, 0.7, 0.5, 0.2])
    np.testing.assert_allclose(boxes[2], [3.6, 4, 7.6, 8], rtol=1e-6)


def test_nchw_and_two_batches():
    deltas = np.zeros((2, 2, 2, 4), np.float32)
    scores = np.concatenate([SCORES, SCORES[:, ::-1]])
    info = np.float32([[8, 8], [8, 8]])
    a = run(model(n=2), [scores, deltas, ANCHOR, info])
    b = run(model(n=2, nchw=True), [scores.transpose(0, 3, 1, 2).copy(),
                                    deltas.transpose(0, 3, 1, 2).copy(), ANCHOR, info])
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a[2], [0] * 4 + [1] * 4)


def test_boxes_are_clipped_to_the_image():
    deltas = np.zeros((1, 2, 2, 4), np.float32)
    deltas[..., 2] = np.log(3.0)
    _, boxes, _ = run(model(iou=1.0), [SCORES, deltas, ANCHOR, INFO])
    assert boxes.min() >= 0 and boxes.max() <= 8


@pytest.mark.parametrize("t,zp", [("TENSOR_QUANT8_ASYMM", 128), ("TENSOR_QUANT8_ASYMM_SIGNED", 0)])
def test_quantized(t, zp):
    q = dict(scale=0.01, zero_point=zp)
    b8 = dict(scale=0.125)
    m = model(t=t, anchor_t="TENSOR_QUANT16_SYMM", info_t="TENSOR_QUANT16_ASYMM", q=q,
              dq=dict(scale=0.05, zero_point=zp), aq=b8, iq=b8)
    qs = np.round(SCORES / 0.01) + zp
    deltas = np.full((1, 2, 2, 4), zp)
    scores, boxes, _ = run(m, [qs, deltas, ANCHOR * 8, INFO * 8])
    np.testing.assert_allclose((scores.astype(np.float32) - zp) * 0.01, [0.9, 0.7, 0.5, 0.2],
                               atol=1e-6)
    np.testing.assert_array_equal(boxes / 8, TILES)


def test_float16():
    deltas = np.zeros((1, 2, 2, 4), np.float16)
    scores, boxes, _ = run(model(t="TENSOR_FLOAT16", f="FLOAT16"),
                           [SCORES.astype(np.float16), deltas, ANCHOR, INFO])
    np.testing.assert_array_equal(boxes, TILES)


def test_no_proposals_give_zero_sized_outputs():
    deltas = np.zeros((1, 2, 2, 4), np.float32)
    status, shapes, _ = execute(model(min_size=100.0), [SCORES, deltas, ANCHOR, INFO])
    assert status == ErrorStatus.NONE
    assert [tuple(s.dimensions) for s in shapes] == [(0,), (0, 4), (0,)]


def test_rejects_bad_strides_anchor_shape_and_types():
    assert "stride" in rejected(model(stride=0.0))
    assert "anchors" in rejected(model(anchors_shape=[1, 3]))
    assert "match no signature" in rejected(model(f="FLOAT16"))
    q = dict(scale=0.01, zero_point=128)
    m = model(t="TENSOR_QUANT8_ASYMM", anchor_t="TENSOR_QUANT16_SYMM",
              info_t="TENSOR_QUANT16_ASYMM", q=q, dq=q, aq=dict(scale=0.25),
              iq=dict(scale=0.125))
    assert "0.125" in rejected(m)
