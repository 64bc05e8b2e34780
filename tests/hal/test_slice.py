import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.direct_call import call, info
from tests.kits.one_op_models import execute, one_op_model, rejected, run, scalar, tensor

F32 = "TENSOR_FLOAT32"
TI = "TENSOR_INT32"


def _strided(x, begin, end, strides, bm=0, em=0, sm=0, out_shape=None, const=True):
    n = x.ndim
    vals = (begin, end, strides) if const else (None, None, None)
    ins = [tensor(F32, x.shape)] + [tensor(TI, [n], v) for v in vals] + \
        [scalar("INT32", bm), scalar("INT32", em), scalar("INT32", sm)]
    out_shape = out_shape or [0] * max(1, n - bin(sm).count("1"))
    return one_op_model("STRIDED_SLICE", ins, [tensor(F32, out_shape)])


X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("begin,end,strides,bm,em,sm,want", [
    ([0, 0, 0], [2, 3, 4], [1, 1, 1], 0, 0, 0, X),
    ([1, -1, 3], [-3, -4, 0], [-1, -1, -2], 0, 0, 0, X[1:-3:-1, -1:-4:-1, 3:0:-2]),
    ([0, 1, 0], [0, 2, 0], [1, 1, 1], 0b101, 0b101, 0, X[:, 1:2, :]),
    ([1, 0, -1], [2, 3, 4], [1, 2, 1], 0, 0, 0b101, X[1, 0:3:2, -1]),
    ([5, -10, 2], [10, 10, 3], [1, 1, 1], 0, 0, 0, X[5:10, -10:10, 2:3]),
    ([0, 0, 0], [2, 3, 4], [-1, -1, -1], 0b111, 0b111, 0, X[::-1, ::-1, ::-1]),
])
def test_strided_slice_matches_numpy(begin, end, strides, bm, em, sm, want):
    (y,) = run(_strided(X, begin, end, strides, bm, em, sm), [X])
    np.testing.assert_array_equal(y, want)


def test_strided_slice_non_constant_params():
    m = _strided(X, None, None, None, const=False)
    (y,) = run(m, [X, np.array([0, 2, 1], np.int32), np.array([2, 0, 4], np.int32),
                   np.array([1, -1, 2], np.int32)])
    np.testing.assert_array_equal(y, X[0:2, 2:0:-1, 1:4:2])


def test_strided_slice_shrink_all_gives_shape_1():
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    (y,) = run(_strided(x, [1, 0], [2, 1], [1, 1], sm=0b11, out_shape=[1]), [x])
    assert y.shape == (1,) and y[0] == 2


def test_strided_slice_rejects_shrink_of_wider_slice():
    assert "size 1" in rejected(_strided(X, [0, 0, 0], [2, 3, 4], [1, 1, 1], sm=1))


def test_strided_slice_rejects_shrink_with_negative_stride():
    assert "positive stride" in rejected(_strided(X, [1, 0, 0], [0, 3, 4], [-1, 1, 1], sm=1))


def test_strided_slice_rejects_zero_stride():
    assert "non-zero" in rejected(_strided(X, [0, 0, 0], [2, 3, 4], [1, 0, 1]))


def test_strided_slice_rejects_wrong_begin_length():
    m = one_op_model("STRIDED_SLICE", [tensor(F32, X.shape), tensor(TI, [2], [0, 0]),
                                       tensor(TI, [3], [1, 1, 1]), tensor(TI, [3], [1, 1, 1]),
                                       scalar("INT32", 0), scalar("INT32", 0),
                                       scalar("INT32", 0)], [tensor(F32, [1, 1, 1])])
    assert "3 values" in rejected(m)


def test_strided_slice_rejects_rank_5():
    x = np.zeros((1, 1, 1, 1, 2), np.float32)
    assert "rank" in rejected(_strided(x, [0] * 5, [1] * 5, [1] * 5))


# ----------------------------------------------------------------------------- SLICE

def _slice(shape, begin, size, type_=F32, q=None):
    q = q or {}
    out = [s if s >= 0 else d - b for d, b, s in zip(shape, begin, size)]
    return one_op_model("SLICE", [tensor(type_, shape, **q), tensor(TI, [len(shape)], begin),
                                  tensor(TI, [len(shape)], size)], [tensor(type_, out, **q)])


def test_slice_with_minus_one():
    (y,) = run(_slice(X.shape, [1, 1, 0], [1, -1, 3]), [X])
    np.testing.assert_array_equal(y, X[1:2, 1:, 0:3])


def test_slice_int32_and_quant():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    (y,) = run(_slice(x.shape, [2, 1], [1, 2], "TENSOR_INT32"), [x])
    np.testing.assert_array_equal(y, [[9, 10]])
    xq = x.astype(np.int8)
    (y,) = run(_slice(x.shape, [0, 3], [-1, 1], "TENSOR_QUANT8_ASYMM_SIGNED",
                      dict(scale=0.1, zero_point=1)), [xq])
    np.testing.assert_array_equal(y.reshape(-1), [3, 7, 11])


def test_slice_zero_sized_input_and_output():
    x = np.zeros((0, 3), np.float32)
    (y,) = call("SLICE", [info(F32, x), info(TI, [0, 1]), info(TI, [-1, 2])],
                [info(F32, shape=(0, 0))])
    assert y.shape == (0, 2)


def test_slice_rejects_out_of_range():
    assert "exceeds" in rejected(_slice((2, 3), [1, 2], [1, 2]))


def test_slice_rejects_negative_begin():
    assert "begin" in rejected(_slice((2, 3), [-1, 0], [1, 1]))


def test_slice_out_of_range_at_execution():
    m = one_op_model("SLICE", [tensor(F32, [2, 3]), tensor(TI, [2]), tensor(TI, [2])],
                     [tensor(F32, [0, 0])])
    status, _, _ = execute(m, [np.zeros((2, 3), np.float32), np.array([0, 2], np.int32),
                               np.array([1, 5], np.int32)])
    assert status == ErrorStatus.GENERAL_FAILURE


def test_slice_rejects_type_mismatch():
    m = one_op_model("SLICE", [tensor(F32, [2]), tensor(TI, [1], [0]), tensor(TI, [1], [1])],
                     [tensor("TENSOR_INT32", [1])])
    assert "match no signature" in rejected(m)
