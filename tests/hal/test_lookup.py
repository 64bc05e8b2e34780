import numpy as np

from hal.errors import ErrorStatus
from tests.kits.one_op_models import execute, one_op_model, rejected, run, tensor

F32 = "TENSOR_FLOAT32"
TI = "TENSOR_INT32"
Q8 = "TENSOR_QUANT8_ASYMM"


def test_embedding_lookup():
    values = np.arange(4 * 2 * 3, dtype=np.float32).reshape(4, 2, 3)
    m = one_op_model("EMBEDDING_LOOKUP", [tensor(TI, [3]), tensor(F32, values.shape)],
                     [tensor(F32, [3, 2, 3])])
    (y,) = run(m, [np.array([3, 0, 3], np.int32), values])
    np.testing.assert_array_equal(y, values[[3, 0, 3]])


def test_embedding_lookup_out_of_bounds_fails():
    m = one_op_model("EMBEDDING_LOOKUP", [tensor(TI, [1]), tensor(F32, [2, 2])],
                     [tensor(F32, [1, 2])])
    status, _, _ = execute(m, [np.array([2], np.int32), np.zeros((2, 2), np.float32)])
    assert status == ErrorStatus.GENERAL_FAILURE


def test_embedding_lookup_rejects_rank_1_values():
    m = one_op_model("EMBEDDING_LOOKUP", [tensor(TI, [1]), tensor(F32, [4])],
                     [tensor(F32, [1])])
    assert "rank" in rejected(m)


def test_embedding_lookup_rejects_quant_change():
    m = one_op_model("EMBEDDING_LOOKUP", [tensor(TI, [1]), tensor(Q8, [2, 2], scale=0.5)],
                     [tensor(Q8, [1, 2], scale=1.0)])
    assert "same scale" in rejected(m)


def test_hashtable_lookup_hits_and_misses():
    keys = np.array([-3, 2, 10, 40], np.int32)
    values = np.arange(8, dtype=np.int32).reshape(4, 2) + 1
    m = one_op_model("HASHTABLE_LOOKUP", [tensor(TI, [4]), tensor(TI, [4]), tensor(TI, [4, 2])],
                     [tensor(TI, [4, 2]), tensor(Q8, [4], scale=1.0, zero_point=0)])
    out, hits = run(m, [np.array([10, 5, -3, 41], np.int32), keys, values])
    np.testing.assert_array_equal(out, [[5, 6], [0, 0], [1, 2], [0, 0]])
    np.testing.assert_array_equal(hits, [1, 0, 1, 0])


def test_hashtable_lookup_rejects_key_value_count_mismatch():
    m = one_op_model("HASHTABLE_LOOKUP", [tensor(TI, [1]), tensor(TI, [3]), tensor(F32, [4, 2])],
                     [tensor(F32, [1, 2]), tensor(Q8, [1], scale=1.0)])
    assert "rows" in rejected(m)


def test_hashtable_lookup_rejects_float_hits():
    m = one_op_model("HASHTABLE_LOOKUP", [tensor(TI, [1]), tensor(TI, [4]), tensor(F32, [4, 2])],
                     [tensor(F32, [1, 2]), tensor(F32, [1])])
    assert "match no signature" in rejected(m)
