import math

import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.direct_call import call, info
from tests.kits.one_op_models import execute, one_op_model, rejected, run, scalar, tensor

OP = "BOX_WITH_NMS_LIMIT"


def model(n, classes, score_thr=0.1, max_det=-1, kernel=0, iou=0.5, sigma=0.5, nms_thr=0.1,
          t="TENSOR_FLOAT32", f="FLOAT32", box_t=None, qs=None, qb=None, out_q=None):
    qs = qs or {}
    qb = qb or {}
    box_t = box_t or t
    return one_op_model(OP, [tensor(t, [n, classes], **qs),
                             tensor(box_t, [n, classes * 4], **qb),
                             tensor("TENSOR_INT32", [n]), scalar(f, score_thr),
                             scalar("INT32", max_det), scalar("INT32", kernel), scalar(f, iou),
                             scalar(f, sigma), scalar(f, nms_thr)],
                        [tensor(t, [0], **(out_q if out_q is not None else qs)),
                         tensor(box_t, [0, 4], **qb), tensor("TENSOR_INT32", [0]),
                         tensor("TENSOR_INT32", [0])])


def boxes_for(per_roi):
    """Same box for every class of a roi: [n, classes * 4] from [n, 4]."""
    per_roi = np.asarray(per_roi, np.float32)
    return np.tile(per_roi, (1, 3))


# 4 rois of one image, 3 classes (class 0 background). Rois 0 and 1 overlap with IoU 0.6;
# roi 2 overlaps none; roi 3 equals roi 0.
BOXES = boxes_for([[0, 0, 10, 10], [0, 2, 10, 12], [20, 20, 30, 30], [0, 0, 10, 10]])
IOU_01 = 80 / 120
SCORES = np.array([[0.9, 0.9, 0.1], [0.9, 0.8, 0.7], [0.9, 0.6, 0.05], [0.9, 0.3, 0.65]],
                  np.float32)


def test_hard_nms_per_class_sorted_by_class_then_score():
    scores, boxes, classes, batches = run(model(4, 3), [SCORES, BOXES, np.int32([0] * 4)])
    # class 1: 0.9 (roi 0) suppresses roi 1 (IoU 0.67) and roi 3 (IoU 1); roi 2 stays
    # class 2: roi 1 (0.7) suppresses roi 3 (0.65, IoU 0.67); roi 0 (0.1) is not above 0.1
    np.testing.assert_allclose(scores, [0.9, 0.6, 0.7])
    np.testing.assert_array_equal(classes, [1, 1, 2])
    np.testing.assert_array_equal(batches, [0, 0, 0])
    np.testing.assert_array_equal(boxes, [[0, 0, 10, 10], [20, 20, 30, 30], [0, 2, 10, 12]])


def test_max_detections_keeps_the_best_scores():
    scores, _, classes, _ = run(model(4, 3, max_det=2), [SCORES, BOXES, np.int32([0] * 4)])
    np.testing.assert_allclose(scores, [0.9, 0.7])
    np.testing.assert_array_equal(classes, [1, 2])


def test_linear_kernel_rescales_overlapping_scores():
    scores, _, classes, _ = run(model(4, 3, kernel=1, nms_thr=0.0),
                                [SCORES, BOXES, np.int32([0] * 4)])
    got = {(c, round(float(s), 5)) for c, s in zip(classes, scores)}
    # class 1: roi 1 -> 0.8 * (1 - 0.667); roi 3 (IoU 1) -> 0; roi 2 untouched
    assert (1, round(0.8 * (1 - IOU_01), 5)) in got
    assert (1, 0.6) in got or (1, round(0.6, 5)) in got


def test_gaussian_kernel():
    sigma = 0.5
    scores, _, classes, _ = run(model(4, 3, kernel=2, sigma=sigma, nms_thr=0.05),
                                [SCORES, BOXES, np.int32([0] * 4)])
    class1 = sorted(float(s) for c, s in zip(classes, scores) if c == 1)
    expect = sorted([0.9, 0.6, 0.8 * math.exp(-IOU_01 ** 2 / sigma),
                     0.3 * math.exp(-1.0 / sigma)])
    expect = [e for e in expect if e >= 0.05]
    np.testing.assert_allclose(class1, expect, rtol=1e-5)


def test_equal_scores_keep_the_first_roi():
    scores = np.array([[0, 0.5], [0, 0.5]], np.float32)
    boxes = np.array([[0, 0, 0, 0, 0, 0, 10, 10], [0, 0, 0, 0, 0, 0, 10, 11]], np.float32)
    _, out_boxes, _, _ = run(model(2, 2), [scores, boxes, np.int32([0, 0])])
    np.testing.assert_array_equal(out_boxes, [[0, 0, 10, 10]])
    boxes[1] = [0, 0, 0, 0, 20, 20, 30, 30]  # no overlap: both kept, the first roi first
    _, out_boxes, _, _ = run(model(2, 2), [scores, boxes, np.int32([0, 0])])
    np.testing.assert_array_equal(out_boxes, [[0, 0, 10, 10], [20, 20, 30, 30]])


def test_batches_are_handled_separately():
    batch = np.int32([0, 0, 3, 3])
    scores, _, classes, batches = run(model(4, 3), [SCORES, BOXES, batch])
    np.testing.assert_array_equal(batches, [0, 0, 3, 3, 3])
    np.testing.assert_array_equal(classes, [1, 2, 1, 1, 2])


def test_no_detections_give_zero_sized_outputs():
    status, shapes, outs = execute(model(4, 3, score_thr=0.95),
                                   [SCORES, BOXES, np.int32([0] * 4)])
    assert status == ErrorStatus.NONE
    assert [tuple(s.dimensions) for s in shapes] == [(0,), (0, 4), (0,), (0,)]


def test_zero_rois():
    outs = call(OP, [info("TENSOR_FLOAT32", np.zeros((0, 3))),
                     info("TENSOR_FLOAT32", np.zeros((0, 12))), info("TENSOR_INT32", []),
                     info("FLOAT32", 0.1), info("INT32", -1), info("INT32", 0),
                     info("FLOAT32", 0.5), info("FLOAT32", 0.5), info("FLOAT32", 0.1)],
                [info("TENSOR_FLOAT32", shape=[0]), info("TENSOR_FLOAT32", shape=[0, 4]),
                 info("TENSOR_INT32", shape=[0]), info("TENSOR_INT32", shape=[0])])
    assert [o.shape for o in outs] == [(0,), (0, 4), (0,), (0,)]


@pytest.mark.parametrize("t,zp", [("TENSOR_QUANT8_ASYMM", 128), ("TENSOR_QUANT8_ASYMM_SIGNED", 0)])
def test_quantized_scores_and_boxes(t, zp):
    qs = dict(scale=0.01, zero_point=zp)
    qb = dict(scale=0.125, zero_point=0)
    m = model(4, 3, t=t, box_t="TENSOR_QUANT16_ASYMM", qs=qs, qb=qb)
    q = np.round(SCORES / 0.01) + zp
    scores, boxes, classes, _ = run(m, [q, BOXES * 8, np.int32([0] * 4)])
    np.testing.assert_array_equal(classes, [1, 1, 2])
    np.testing.assert_allclose((scores.astype(np.float32) - zp) * 0.01, [0.9, 0.6, 0.7],
                               atol=0.011)
    np.testing.assert_array_equal(boxes / 8, [[0, 0, 10, 10], [20, 20, 30, 30], [0, 2, 10, 12]])


def test_float16():
    scores, _, classes, _ = run(model(4, 3, t="TENSOR_FLOAT16", f="FLOAT16"),
                                [SCORES, BOXES, np.int32([0] * 4)])
    np.testing.assert_array_equal(classes, [1, 1, 2])
    np.testing.assert_allclose(scores.astype(np.float32), [0.9, 0.6, 0.7], atol=1e-3)


def test_rejects_bad_kernel():
    assert "kernel" in rejected(model(4, 3, kernel=3))


def test_rejects_zero_sigma_for_the_gaussian_kernel():
    assert "sigma" in rejected(model(4, 3, kernel=2, sigma=0.0))


def test_rejects_wrong_scalar_type():
    assert "match no signature" in rejected(model(4, 3, f="FLOAT16"))


def test_rejects_box_columns_mismatch():
    m = one_op_model(OP, [tensor("TENSOR_FLOAT32", [4, 3]), tensor("TENSOR_FLOAT32", [4, 8]),
                          tensor("TENSOR_INT32", [4]), scalar("FLOAT32", 0.1),
                          scalar("INT32", -1), scalar("INT32", 0), scalar("FLOAT32", 0.5),
                          scalar("FLOAT32", 0.5), scalar("FLOAT32", 0.1)],
                     [tensor("TENSOR_FLOAT32", [0]), tensor("TENSOR_FLOAT32", [0, 4]),
                      tensor("TENSOR_INT32", [0]), tensor("TENSOR_INT32", [0])])
    assert "num_classes * 4" in rejected(m)


def test_rejects_quantized_output_scale_change():
    qs = dict(scale=0.01, zero_point=128)
    qb = dict(scale=0.125, zero_point=0)
    m = model(4, 3, t="TENSOR_QUANT8_ASYMM", box_t="TENSOR_QUANT16_ASYMM", qs=qs, qb=qb,
              out_q=dict(scale=0.02, zero_point=128))
    assert "scale" in rejected(m)


def test_inverted_box_fails_the_execution():
    boxes = BOXES.copy()
    boxes[0, 0] = 20
    status, _, _ = execute(model(4, 3), [SCORES, boxes, np.int32([0] * 4)])
    assert status == ErrorStatus.GENERAL_FAILURE
