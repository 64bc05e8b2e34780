import numpy as np
import pytest

from hal.operations.lsh_projection import fingerprint64
from tests.kits.one_op_models import omitted, one_op_model, rejected, run, scalar, tensor

T = "TENSOR_FLOAT32"


def test_fingerprint_empty_and_lengths():
    assert fingerprint64(b"") == 0x9AE16A3B2F90404F
    data = bytes(range(200))
    values = {fingerprint64(data[:n]) for n in (1, 3, 4, 8, 12, 16, 17, 32, 33, 64, 65, 128, 200)}
    assert len(values) == 13  # every length path produces its own hash
    assert all(0 <= v < 2**64 for v in values)


def _model(kind, n_hash=4, n_bits=2, rows=3, weight=True, in_type="TENSOR_INT32"):
    specs = [tensor(T, [n_hash, n_bits]), tensor(in_type, [rows, 2]),
             tensor(T, [rows]) if weight else omitted(), scalar("INT32", kind)]
    out = [n_hash * n_bits] if kind == 2 else [n_hash]
    return one_op_model("LSH_PROJECTION", specs, [tensor("TENSOR_INT32", out)])


SEEDS = np.array([[0.123, 0.456], [-0.789, 0.5], [1.5, -2.25], [3.0, 4.0]], np.float32)
DATA = np.array([[12345, 54321], [67890, 9876], [-987654321, 123456789]], np.int32)


def test_dense_sparse_agree():
    w = np.array([0.12, 0.34, 0.56], np.float32)
    (dense,) = run(_model(2), [SEEDS, DATA, w])
    (sparse,) = run(_model(3), [SEEDS, DATA, w])
    (old,) = run(_model(1), [SEEDS, DATA, w])
    bits = dense.reshape(4, 2)
    assert set(np.unique(dense)) <= {0, 1}
    sig = bits[:, 0] * 2 + bits[:, 1]
    np.testing.assert_array_equal(old, sig)
    np.testing.assert_array_equal(sparse, sig + np.arange(4) * 4)


def test_weight_sign_flips_bits():
    w = np.array([1.0, 1.0, 1.0], np.float32)
    (a,) = run(_model(2), [SEEDS, DATA, w])
    (b,) = run(_model(2), [SEEDS, DATA, -w])
    (c,) = run(_model(2, weight=False), [SEEDS, DATA])
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(a + b, np.ones_like(a))  # no score is exactly 0 here


@pytest.mark.parametrize("kind", [0, 4])
def test_rejects_bad_type(kind):
    assert "type" in rejected(_model(kind))


def test_rejects_too_many_sparse_bits_and_weight_size():
    assert "32" in rejected(_model(3, n_bits=33))
    specs = [tensor(T, [4, 2]), tensor("TENSOR_INT32", [3, 2]), tensor(T, [5]),
             scalar("INT32", 2)]
    assert "weight" in rejected(one_op_model("LSH_PROJECTION", specs,
                                             [tensor("TENSOR_INT32", [8])]))
