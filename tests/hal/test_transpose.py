import numpy as np
import pytest

from tests.kits.direct_call import call, info
from tests.kits.one_op_models import omitted, one_op_model, rejected, run, tensor

F32 = "TENSOR_FLOAT32"
TI = "TENSOR_INT32"


@pytest.mark.parametrize("perm", [[0, 2, 1, 3], [3, 2, 1, 0], [1, 0, 3, 2]])
def test_transpose_perm(perm):
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    out = [x.shape[p] for p in perm]
    m = one_op_model("TRANSPOSE", [tensor(F32, x.shape), tensor(TI, [4], perm)],
                     [tensor(F32, out)])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, x.transpose(perm))


def test_transpose_omitted_perm_reverses():
    x = np.arange(6, dtype=np.uint8).reshape(2, 3)
    q = dict(scale=0.5, zero_point=2)
    m = one_op_model("TRANSPOSE", [tensor("TENSOR_QUANT8_ASYMM", [2, 3], **q), omitted(TI)],
                     [tensor("TENSOR_QUANT8_ASYMM", [3, 2], **q)])
    (y,) = run(m, [x])
    np.testing.assert_array_equal(y, x.T)


def test_transpose_zero_sized():
    x = np.zeros((2, 0, 3), np.float32)
    (y,) = call("TRANSPOSE", [info(F32, x), info(TI, [2, 0, 1])], [info(F32, shape=(0, 0, 0))])
    assert y.shape == (3, 2, 0)


@pytest.mark.parametrize("perm", [[0, 0], [0, 2], [1]])
def test_transpose_rejects_bad_perm(perm):
    m = one_op_model("TRANSPOSE", [tensor(F32, [2, 3]), tensor(TI, [len(perm)], perm)],
                     [tensor(F32, [3, 2])])
    assert "permutation" in rejected(m)


def test_transpose_rejects_rank_5():
    m = one_op_model("TRANSPOSE", [tensor(F32, [1, 1, 1, 1, 2]), omitted(TI)],
                     [tensor(F32, [2, 1, 1, 1, 1])])
    assert "rank" in rejected(m)


def test_transpose_rejects_int32_data():
    m = one_op_model("TRANSPOSE", [tensor(TI, [2, 3]), omitted(TI)], [tensor(TI, [3, 2])])
    assert "match no signature" in rejected(m)
