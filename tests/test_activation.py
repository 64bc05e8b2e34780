import numpy as np
import pytest

from tests.opkit import one_op_model, rejected, run, tensor


@pytest.mark.parametrize("op,lo,hi", [("RELU", 0, np.inf), ("RELU1", -1, 1), ("RELU6", 0, 6)])
def test_float(op, lo, hi):
    x = np.array([-3.0, -0.5, 0.0, 0.5, 2.0, 7.0], dtype=np.float32)
    m = one_op_model(op, [tensor("TENSOR_FLOAT32", [6])], [tensor("TENSOR_FLOAT32", [6])])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, np.clip(x, lo, hi))


def test_quant8_clamps_at_zero_point():
    x = np.array([0, 100, 128, 200, 255], dtype=np.uint8)
    q = dict(scale=0.5, zero_point=128)
    m = one_op_model("RELU6", [tensor("TENSOR_QUANT8_ASYMM", [5], **q)],
                     [tensor("TENSOR_QUANT8_ASYMM", [5], **q)])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, [128, 128, 128, 140, 140])


def test_rejects_wrong_output_type():
    m = one_op_model("RELU", [tensor("TENSOR_FLOAT32", [2])], [tensor("TENSOR_INT32", [2])])
    assert "match no signature" in rejected(m)


def test_rejects_quant_mismatch():
    m = one_op_model("RELU", [tensor("TENSOR_QUANT8_ASYMM", [2], scale=0.5, zero_point=1)],
                     [tensor("TENSOR_QUANT8_ASYMM", [2], scale=0.25, zero_point=1)])
    assert "same scale" in rejected(m)
