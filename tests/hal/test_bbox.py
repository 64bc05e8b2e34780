import math

import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.direct_call import call, info
from tests.kits.one_op_models import execute, one_op_model, rejected, run, tensor

OP = "AXIS_ALIGNED_BBOX_TRANSFORM"


def float_model(n=2, classes=2, t="TENSOR_FLOAT32", out=None):
    return one_op_model(OP, [tensor(t, [n, 4]), tensor(t, [n, classes * 4]),
                             tensor("TENSOR_INT32", [n]), tensor(t, [2, 2])],
                        [tensor(out or t, [n, classes * 4])])


ROIS = np.array([[0, 0, 10, 10], [2, 4, 6, 8]], np.float32)
DELTAS = np.array([[0, 0, 0, 0, 0.1, 0.2, math.log(2), 0],
                   [0, 0, 0, 0, -1.0, 0, 0, math.log(4)]], np.float32)
INFO = np.array([[20, 30], [9, 9]], np.float32)  # (height, width) per image


def expected():
    # roi 0 (image 0): identity, then centre (6, 7) size 20x10 -> x1 -4 clipped to 0
    # roi 1 (image 1): identity, then centre (0, 6) size 4x16 -> clipped to [0, 9]
    return np.array([[0, 0, 10, 10, 0, 2, 16, 12],
                     [2, 4, 6, 8, 0, 0, 2, 9]], np.float32)


@pytest.mark.parametrize("t", ["TENSOR_FLOAT32", "TENSOR_FLOAT16"])
def test_float_transform_and_clip(t):
    (y,) = run(float_model(t=t), [ROIS, DELTAS, np.int32([0, 1]), INFO])
    np.testing.assert_allclose(y.astype(np.float32), expected(), atol=1e-2 if "16" in t else 1e-5)


@pytest.mark.parametrize("dt,dz", [("TENSOR_QUANT8_ASYMM", 128),
                                   ("TENSOR_QUANT8_ASYMM_SIGNED", 0)])
def test_quantized_matches_float(dt, dz):
    q16 = dict(scale=0.125, zero_point=0)
    m = one_op_model(OP, [tensor("TENSOR_QUANT16_ASYMM", [2, 4], **q16),
                          tensor(dt, [2, 8], scale=0.05, zero_point=dz),
                          tensor("TENSOR_INT32", [2]),
                          tensor("TENSOR_QUANT16_ASYMM", [2, 2], **q16)],
                     [tensor("TENSOR_QUANT16_ASYMM", [2, 8], **q16)])
    qd = np.round(DELTAS / 0.05) + dz
    (y,) = run(m, [ROIS * 8, qd, np.int32([0, 1]), INFO * 8])
    deq = (qd - dz) * 0.05
    (ref,) = call(OP, [info("TENSOR_FLOAT32", ROIS), info("TENSOR_FLOAT32", deq),
                       info("TENSOR_INT32", [0, 1]), info("TENSOR_FLOAT32", INFO)],
                  [info("TENSOR_FLOAT32", shape=[2, 8])])
    assert np.abs(y / 8.0 - ref).max() <= 0.125


def test_zero_rois_give_an_empty_output():
    (y,) = call(OP, [info("TENSOR_FLOAT32", np.zeros((0, 4))),
                     info("TENSOR_FLOAT32", np.zeros((0, 8))),
                     info("TENSOR_INT32", np.zeros(0)), info("TENSOR_FLOAT32", INFO)],
                [info("TENSOR_FLOAT32", shape=[0, 8])])
    assert y.shape == (0, 8)


def test_inverted_roi_fails_the_execution():
    rois = ROIS.copy()
    rois[0, 0] = 11  # x1 > x2
    status, _, _ = execute(float_model(), [rois, DELTAS, np.int32([0, 1]), INFO])
    assert status == ErrorStatus.GENERAL_FAILURE


def test_batch_index_out_of_range_fails_the_execution():
    status, _, _ = execute(float_model(), [ROIS, DELTAS, np.int32([0, 2]), INFO])
    assert status == ErrorStatus.GENERAL_FAILURE


def test_rejects_wrong_output_type():
    assert "match no signature" in rejected(float_model(out="TENSOR_INT32"))


def test_rejects_wrong_input_count():
    m = one_op_model(OP, [tensor("TENSOR_FLOAT32", [2, 4]), tensor("TENSOR_FLOAT32", [2, 8]),
                          tensor("TENSOR_INT32", [2])], [tensor("TENSOR_FLOAT32", [2, 8])])
    assert "match no signature" in rejected(m)


def test_rejects_bad_rank_and_shapes():
    m = one_op_model(OP, [tensor("TENSOR_FLOAT32", [2, 4, 1]), tensor("TENSOR_FLOAT32", [2, 8]),
                          tensor("TENSOR_INT32", [2]), tensor("TENSOR_FLOAT32", [2, 2])],
                     [tensor("TENSOR_FLOAT32", [2, 8])])
    assert "rank" in rejected(m)
    m = one_op_model(OP, [tensor("TENSOR_FLOAT32", [2, 4]), tensor("TENSOR_FLOAT32", [2, 6]),
                          tensor("TENSOR_INT32", [2]), tensor("TENSOR_FLOAT32", [2, 2])],
                     [tensor("TENSOR_FLOAT32", [2, 6])])
    assert "multiple of 4" in rejected(m)


def test_rejects_quant16_rois_with_another_scale():
    m = one_op_model(OP, [tensor("TENSOR_QUANT16_ASYMM", [2, 4], scale=0.25),
                          tensor("TENSOR_QUANT8_ASYMM", [2, 8], scale=0.05, zero_point=128),
                          tensor("TENSOR_INT32", [2]),
                          tensor("TENSOR_QUANT16_ASYMM", [2, 2], scale=0.125)],
                     [tensor("TENSOR_QUANT16_ASYMM", [2, 8], scale=0.125)])
    assert "0.125" in rejected(m)
