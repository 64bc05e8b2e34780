import numpy as np
import pytest

from hal.errors import ErrorStatus
from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import OperandLifeTime, OperandType, OperationType
from tests.kits.one_op_models import execute, one_op_model, rejected, run, scalar, tensor

F32, F16, Q8, QS8 = ("TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM",
                     "TENSOR_QUANT8_ASYMM_SIGNED")


def reduce_model(op, t, in_shape, axes, keep, out_shape, q=(0.0, 0), qo=None, tout=None):
    qo = qo or q
    keep_s = scalar("INT32", int(keep)) if op == "MEAN" else scalar("BOOL", bool(keep))
    return one_op_model(op, [tensor(t, in_shape, scale=q[0], zero_point=q[1]),
                             tensor("TENSOR_INT32", [len(axes)], axes), keep_s],
                        [tensor(tout or t, out_shape, scale=qo[0], zero_point=qo[1])])


NUMPY = {"REDUCE_SUM": np.sum, "REDUCE_PROD": np.prod, "REDUCE_MAX": np.max,
         "REDUCE_MIN": np.min, "MEAN": np.mean}


@pytest.mark.parametrize("op", list(NUMPY))
@pytest.mark.parametrize("t", [F32, F16])
def test_float_negative_and_duplicate_axes(op, t):
    x = np.random.default_rng(0).uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    (y,) = run(reduce_model(op, t, [2, 3, 4], [-1, 0, 2], False, [3]), [x])
    ref = NUMPY[op](x.astype(np.float64), axis=(0, 2))
    np.testing.assert_allclose(y, ref, rtol=1e-5 if t == F32 else 2e-3)
    assert y.dtype == (np.float32 if t == F32 else np.float16)


def test_keep_dims_and_all_axes_shape():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = run(reduce_model("REDUCE_SUM", F32, [2, 3], [1], True, [2, 1]), [x])
    np.testing.assert_array_equal(y, [[3], [12]])
    (y,) = run(reduce_model("REDUCE_SUM", F32, [2, 3], [0, 1], False, [1]), [x])
    np.testing.assert_array_equal(y, [15])


def test_dynamic_output_shape_is_deduced():
    x = np.ones((2, 3, 4), np.float32)
    status, shapes, (y,) = execute(reduce_model("REDUCE_MAX", F32, [2, 3, 4], [1], True,
                                                [0, 0, 0]), [x])
    assert status == ErrorStatus.NONE
    assert list(shapes[0].dimensions) == [2, 1, 4]


def test_all_any():
    x = np.array([[True, False], [True, True]])
    (y,) = run(reduce_model("REDUCE_ALL", "TENSOR_BOOL8", [2, 2], [1], False, [2]), [x])
    np.testing.assert_array_equal(y, [False, True])
    (y,) = run(reduce_model("REDUCE_ANY", "TENSOR_BOOL8", [2, 2], [0], False, [2]), [x])
    np.testing.assert_array_equal(y, [True, True])


def test_quant_mean_rounds_as_tflite():
    # TFLite's QuantizedMeanOrSum (litert gives these): 3/2 -> 2 and 9/2 -> 5, half-way up
    x = np.array([[1, 2], [4, 5]], np.uint8)
    (y,) = run(reduce_model("MEAN", Q8, [2, 2], [1], False, [2], q=(0.5, 0)), [x])
    np.testing.assert_array_equal(y, [2, 5])


def test_quant_signed_mean_rounds_as_tflite():
    # -3/2 -> -1 and 7/2 -> 4 (litert's results)
    x = np.array([[-1, -2], [3, 4]], np.int8)
    (y,) = run(reduce_model("MEAN", QS8, [2, 2], [1], False, [2], q=(0.5, 0)), [x])
    np.testing.assert_array_equal(y, [-1, 4])


def test_quant_mean_requantizes_to_other_output_params():
    x = np.array([[10, 30], [100, 200]], np.uint8)
    (y,) = run(reduce_model("MEAN", Q8, [2, 2], [1], False, [2], q=(0.5, 10), qo=(0.25, 3)),
               [x])
    # real means: ((10+30)/2 - 10) * 0.5 = 5.0 -> 5/0.25 + 3 = 23; (150-10)*0.5 = 70 -> 283 -> 255
    np.testing.assert_array_equal(y, [23, 255])


def test_quant_max_min_keep_stored_values():
    x = np.array([[-128, 5, 127], [0, -3, 2]], np.int8)
    (y,) = run(reduce_model("REDUCE_MAX", QS8, [2, 3], [1], False, [2], q=(0.1, -4)), [x])
    np.testing.assert_array_equal(y, [127, 2])
    (y,) = run(reduce_model("REDUCE_MIN", QS8, [2, 3], [0], False, [3], q=(0.1, -4)), [x])
    np.testing.assert_array_equal(y, [-128, -3, 2])


def direct(op, x, axes, keep, ttype=OperandType.TENSOR_FLOAT32, out_type=None):
    keep_t = OperandType.INT32 if op == "MEAN" else OperandType.BOOL
    keep_v = np.array(keep, np.int32 if op == "MEAN" else np.bool_)
    ins = [OperandInfo(ttype, x.shape, value=x),
           OperandInfo(OperandType.TENSOR_INT32, (len(axes),), value=np.array(axes, np.int32)),
           OperandInfo(keep_t, (), value=keep_v)]
    outs = [OperandInfo(out_type or ttype, ())]
    ctx = OperationContext(OperationType[op], ins, outs)
    return lookup(OperationType[op]).run(ctx)[0]


def test_zero_sized_input():
    x = np.zeros((0, 3), np.float32)
    assert direct("REDUCE_SUM", x, [1], False).shape == (0,)
    np.testing.assert_array_equal(direct("REDUCE_SUM", x, [0], False), [0, 0, 0])
    np.testing.assert_array_equal(direct("REDUCE_PROD", x, [0], False), [1, 1, 1])
    # an empty max gives the reference's initial value, numeric_limits<float>::lowest()
    np.testing.assert_array_equal(direct("REDUCE_MAX", x, [0], True),
                                  np.full((1, 3), np.finfo(np.float32).min))
    b = np.zeros((2, 0), np.bool_)
    np.testing.assert_array_equal(direct("REDUCE_ALL", b, [1], False, OperandType.TENSOR_BOOL8),
                                  [True, True])


def test_quant_mean_over_empty_axis_is_an_error_not_a_crash():
    with pytest.raises(ValueError):
        direct("MEAN", np.zeros((0, 3), np.uint8), [0], 0, OperandType.TENSOR_QUANT8_ASYMM)


# ---------------------------------------------------------------- validation mutations

def test_rejects_axis_out_of_range():
    m = reduce_model("REDUCE_SUM", F32, [2, 3], [2], False, [2])
    assert "axes" in rejected(m)
    m = reduce_model("MEAN", F32, [2, 3], [-3], 0, [2])
    assert "axes" in rejected(m)


def test_rejects_rank_5():
    m = reduce_model("REDUCE_SUM", F32, [1, 1, 1, 1, 2], [0], False, [1, 1, 1, 2])
    assert "rank" in rejected(m)


def test_rejects_wrong_keep_dims_type():
    m = one_op_model("REDUCE_SUM", [tensor(F32, [2]), tensor("TENSOR_INT32", [1], [0]),
                                    scalar("INT32", 0)], [tensor(F32, [1])])
    assert "match no signature" in rejected(m)


def test_rejects_wrong_input_count():
    m = one_op_model("MEAN", [tensor(F32, [2]), tensor("TENSOR_INT32", [1], [0])],
                     [tensor(F32, [1])])
    assert "match no signature" in rejected(m)


def test_rejects_prod_on_quant_and_max_quant_mismatch():
    m = reduce_model("REDUCE_PROD", Q8, [2], [0], False, [1], q=(1.0, 0))
    assert "match no signature" in rejected(m)
    m = reduce_model("REDUCE_MAX", Q8, [2], [0], False, [1], q=(1.0, 0), qo=(0.5, 0))
    assert "same scale" in rejected(m)


def test_rejects_axes_of_rank_2():
    m = one_op_model("REDUCE_SUM", [tensor(F32, [2, 2]),
                                    tensor("TENSOR_INT32", [1, 1], [[0]]),
                                    scalar("BOOL", False)], [tensor(F32, [2])])
    assert "rank" in rejected(m)


def test_constant_lifetime_not_required_for_axes():
    m = one_op_model("REDUCE_SUM", [tensor(F32, [2, 2]), tensor("TENSOR_INT32", [1]),
                                    scalar("BOOL", False)], [tensor(F32, [2])])
    (y,) = run(m, [np.ones((2, 2), np.float32), np.array([1], np.int32)])
    np.testing.assert_array_equal(y, [2, 2])
    assert OperandLifeTime.SUBGRAPH_INPUT == m.main.operands[1].lifetime
