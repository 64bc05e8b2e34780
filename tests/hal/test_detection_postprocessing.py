import numpy as np
import pytest

from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

OP = "DETECTION_POSTPROCESSING"
F32 = "TENSOR_FLOAT32"


def model(n=1, a=4, c=3, enc=4, regular=False, max_det=3, max_cls=1, max_per_cls=2,
          score_thr=0.1, iou=0.5, bg=False, scale=1.0, t=F32, f="FLOAT32"):
    return one_op_model(OP, [
        tensor(t, [n, a, c]), tensor(t, [n, a, enc]), tensor(t, [a, 4]),
        scalar(f, scale), scalar(f, scale), scalar(f, scale), scalar(f, scale),
        scalar("BOOL", regular), scalar("INT32", max_det), scalar("INT32", max_cls),
        scalar("INT32", max_per_cls), scalar(f, score_thr), scalar(f, iou), scalar("BOOL", bg)],
        [tensor(t, [n, max_det]), tensor(t, [n, max_det, 4]), tensor("TENSOR_INT32", [n, max_det]),
         tensor("TENSOR_INT32", [n])])


# anchors (ctr_y, ctr_x, h, w): 0 and 1 coincide, 2 and 3 are apart
ANCHORS = np.float32([[5, 5, 2, 2], [5, 5, 2, 2], [20, 20, 4, 2], [40, 5, 2, 2]])
SCORES = np.float32([[[0, 0.9, 0.2], [0, 0.8, 0.85], [0, 0.3, 0.6], [0, 0.05, 0.02]]])
BOX = {0: [4, 4, 6, 6], 1: [4, 4, 6, 6], 2: [18, 19, 22, 21], 3: [39, 4, 41, 6]}


def test_fast_nms_on_each_anchors_best_class():
    deltas = np.zeros((1, 4, 4), np.float32)
    scores, boxes, classes, count = run(model(), [SCORES, deltas, ANCHORS])
    # best classes: a0 0.9 (1), a1 0.85 (2), a2 0.6 (2), a3 0.05 (below threshold)
    # a1 coincides with a0 and is suppressed
    np.testing.assert_array_equal(count, [2])
    np.testing.assert_allclose(scores[0, :2], [0.9, 0.6])
    np.testing.assert_array_equal(classes[0, :2], [0, 1])  # background not in the label map
    np.testing.assert_array_equal(boxes[0, :2], [BOX[0], BOX[2]])
    assert scores[0, 2] == 0 and classes[0, 2] == 0 and not boxes[0, 2].any()


def test_regular_nms_per_class():
    deltas = np.zeros((1, 4, 4), np.float32)
    scores, boxes, classes, count = run(model(regular=True, max_det=4, bg=True),
                                        [SCORES, deltas, ANCHORS])
    # class 1: a0 0.9 suppresses a1 0.8; a2 0.3 stays. class 2: a1 0.85 suppresses a0 0.2,
    # a2 0.6 stays. Sorted by score, labels start at 1 with the background in the map.
    np.testing.assert_array_equal(count, [4])
    np.testing.assert_allclose(scores[0], [0.9, 0.85, 0.6, 0.3])
    np.testing.assert_array_equal(classes[0], [1, 2, 2, 1])
    np.testing.assert_array_equal(boxes[0], [BOX[0], BOX[1], BOX[2], BOX[2]])


def test_fast_nms_with_several_classes_per_detection():
    deltas = np.zeros((1, 4, 4), np.float32)
    scores, _, classes, count = run(model(max_det=5, max_cls=2), [SCORES, deltas, ANCHORS])
    np.testing.assert_array_equal(count, [4])
    np.testing.assert_allclose(scores[0, :4], [0.9, 0.2, 0.6, 0.3])
    np.testing.assert_array_equal(classes[0, :4], [0, 1, 1, 0])


def test_deltas_are_scaled_and_decoded():
    deltas = np.zeros((1, 4, 6), np.float32)  # extra encoding entries are ignored
    deltas[0, 2, :4] = [10, -10, 0, 10 * np.log(2)]  # scale 10: dy 1, dx -1, dh 0, dw log 2
    deltas[0, 2, 4:] = 99
    _, boxes, _, _ = run(model(enc=6, scale=10.0), [SCORES, deltas, ANCHORS])
    # centre (20 + 4, 20 - 2), size (4, 4)
    np.testing.assert_allclose(boxes[0, 1], [22, 16, 26, 20], rtol=1e-6)


def test_two_batches_and_float16():
    scores = np.concatenate([SCORES, SCORES[:, ::-1]])
    deltas = np.zeros((2, 4, 4), np.float32)
    a = run(model(n=2), [scores, deltas, ANCHORS])
    b = run(model(n=2, t="TENSOR_FLOAT16", f="FLOAT16"),
            [scores.astype(np.float16), deltas.astype(np.float16), ANCHORS.astype(np.float16)])
    np.testing.assert_array_equal(a[3], b[3])
    np.testing.assert_array_equal(a[2], b[2])
    np.testing.assert_allclose(a[0], b[0].astype(np.float32), atol=1e-3)


@pytest.mark.parametrize("kw,word", [(dict(max_det=0), "max detections"),
                                     (dict(scale=0.0), "scale"),
                                     (dict(regular=True, max_per_cls=0), "per class"),
                                     (dict(c=1), "background")])
def test_rejects_bad_scalars_and_shapes(kw, word):
    assert word in rejected(model(**kw))


def test_rejects_wrong_types():
    assert "match no signature" in rejected(model(f="FLOAT16"))
