import numpy as np
import pytest

from tests.kits.direct_call import call, info
from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

F32 = "TENSOR_FLOAT32"
TI = "TENSOR_INT32"
PADS = [[1, 0], [0, 2]]


def test_pad_float_with_zero():
    x = np.array([[1, 2], [3, 4]], np.float32)
    m = one_op_model("PAD", [tensor(F32, [2, 2]), tensor(TI, [2, 2], PADS)],
                     [tensor(F32, [3, 4])])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, [[0, 0, 0, 0], [1, 2, 0, 0], [3, 4, 0, 0]])


@pytest.mark.parametrize("t,dtype,zp", [("TENSOR_QUANT8_ASYMM", np.uint8, 9),
                                        ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8, -5)])
def test_pad_quant_uses_zero_point(t, dtype, zp):
    q = dict(scale=0.5, zero_point=zp)
    x = np.array([1, 2], dtype)
    m = one_op_model("PAD", [tensor(t, [2], **q), tensor(TI, [1, 2], [[2, 1]])],
                     [tensor(t, [5], **q)])
    (y,) = run(m, [x])
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, [zp, zp, 1, 2, zp])


@pytest.mark.parametrize("t,st,value", [(F32, "FLOAT32", -1.5), ("TENSOR_FLOAT16", "FLOAT16", 2.5),
                                        ("TENSOR_QUANT8_ASYMM", "INT32", 200)])
def test_pad_v2_value(t, st, value):
    q = dict(scale=0.5, zero_point=3) if "QUANT" in t else {}
    x = np.array([[1, 2]], dtype=np.float32).astype({F32: np.float32, "TENSOR_FLOAT16": np.float16,
                                                       "TENSOR_QUANT8_ASYMM": np.uint8}[t])
    m = one_op_model("PAD_V2", [tensor(t, [1, 2], **q), tensor(TI, [2, 2], [[0, 1], [1, 0]]),
                                scalar(st, value)], [tensor(t, [2, 3], **q)])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, np.array([[value, 1, 2], [value] * 3]).astype(x.dtype))


def test_pad_zero_sized_input():
    x = np.zeros((0, 2), np.float32)
    (y,) = call("PAD_V2", [info(F32, x), info(TI, [[1, 1], [0, 1]]), info("FLOAT32", 7.0)],
                [info(F32, shape=(0, 0))])
    np.testing.assert_array_equal(y, np.full((2, 3), 7.0))


def test_pad_rejects_negative_padding():
    m = one_op_model("PAD", [tensor(F32, [2]), tensor(TI, [1, 2], [[-1, 0]])],
                     [tensor(F32, [1])])
    assert ">= 0" in rejected(m)


def test_pad_rejects_wrong_paddings_shape():
    m = one_op_model("PAD", [tensor(F32, [2, 2]), tensor(TI, [1, 2], [[1, 1]])],
                     [tensor(F32, [4, 2])])
    assert "paddings" in rejected(m)


def test_pad_v2_rejects_quant_value_out_of_range():
    q = dict(scale=0.5, zero_point=0)
    m = one_op_model("PAD_V2", [tensor("TENSOR_QUANT8_ASYMM", [2], **q),
                                tensor(TI, [1, 2], [[1, 1]]), scalar("INT32", 256)],
                     [tensor("TENSOR_QUANT8_ASYMM", [4], **q)])
    assert "pad value" in rejected(m)


def test_pad_v2_rejects_float_value_for_quant():
    q = dict(scale=0.5, zero_point=0)
    m = one_op_model("PAD_V2", [tensor("TENSOR_QUANT8_ASYMM", [2], **q),
                                tensor(TI, [1, 2], [[1, 1]]), scalar("FLOAT32", 1.0)],
                     [tensor("TENSOR_QUANT8_ASYMM", [4], **q)])
    assert "match no signature" in rejected(m)


def test_pad_rejects_rank_5():
    m = one_op_model("PAD", [tensor(F32, [1, 1, 1, 1, 1]), tensor(TI, [5, 2], [[0, 0]] * 5)],
                     [tensor(F32, [1, 1, 1, 1, 1])])
    assert "rank" in rejected(m)
