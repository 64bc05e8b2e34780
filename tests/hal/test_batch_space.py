import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.one_op_models import execute, one_op_model, rejected, run, scalar, tensor

F32 = "TENSOR_FLOAT32"
TI = "TENSOR_INT32"


def _s2b(in_shape, out_shape, block, pads, nchw=None, type_=F32, q=None):
    q = q or {}
    ins = [tensor(type_, in_shape, **q), tensor(TI, [2], block), tensor(TI, [2, 2], pads)]
    if nchw is not None:
        ins.append(scalar("BOOL", nchw))
    return one_op_model("SPACE_TO_BATCH_ND", ins, [tensor(type_, out_shape, **q)])


def _b2s(in_shape, out_shape, block, nchw=None, type_=F32, q=None):
    q = q or {}
    ins = [tensor(type_, in_shape, **q), tensor(TI, [2], block)]
    if nchw is not None:
        ins.append(scalar("BOOL", nchw))
    return one_op_model("BATCH_TO_SPACE_ND", ins, [tensor(type_, out_shape, **q)])


def test_space_to_batch_tf_example():
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)
    (y,) = run(_s2b(x.shape, (4, 1, 1, 1), [2, 2], [[0, 0], [0, 0]]), [x])
    np.testing.assert_array_equal(y.reshape(-1), [1, 2, 3, 4])


def test_space_to_batch_pads_quant_with_zero_point():
    q = dict(scale=0.5, zero_point=7)
    x = np.array([[1, 2], [3, 4]], np.uint8).reshape(1, 2, 2, 1)
    (y,) = run(_s2b(x.shape, (4, 2, 1, 1), [2, 2], [[1, 1], [0, 0]], None,
                    "TENSOR_QUANT8_ASYMM", q), [x])
    # padded rows: [7 7] [1 2] [3 4] [7 7]; batch b = (by * 2 + bx)
    np.testing.assert_array_equal(y[:, :, 0, 0], [[7, 3], [7, 4], [1, 7], [2, 7]])


@pytest.mark.parametrize("nchw", [False, True])
def test_round_trip(nchw):
    x = np.arange(2 * 4 * 6 * 3, dtype=np.float32).reshape(2, 4, 6, 3)
    shape_b = (12, 2, 2, 3)
    if nchw:
        x = x.transpose(0, 3, 1, 2).copy()
        shape_b = (12, 3, 2, 2)
    (b,) = run(_s2b(x.shape, shape_b, [2, 3], [[0, 0], [0, 0]], nchw), [x])
    (back,) = run(_b2s(b.shape, x.shape, [2, 3], nchw), [b])
    np.testing.assert_array_equal(back, x)


def test_batch_to_space_known_values():
    x = np.arange(4, dtype=np.float32).reshape(4, 1, 1, 1)
    (y,) = run(_b2s(x.shape, (1, 2, 2, 1), [2, 2]), [x])
    np.testing.assert_array_equal(y.reshape(2, 2), [[0, 1], [2, 3]])


def test_rejects_negative_padding():
    assert "paddings" in rejected(_s2b((1, 2, 2, 1), (4, 1, 1, 1), [2, 2], [[0, -1], [0, 0]]))


def test_rejects_block_zero():
    assert "block sizes" in rejected(_b2s((4, 1, 1, 1), (1, 2, 2, 1), [2, 0]))


def test_rejects_block_shape_not_2():
    m = one_op_model("BATCH_TO_SPACE_ND", [tensor(F32, (4, 1, 1, 1)), tensor(TI, [3], [1, 2, 2])],
                     [tensor(F32, (1, 2, 2, 1))])
    assert "shape [2]" in rejected(m)


def test_rejects_bad_rank():
    assert "rank 4" in rejected(_b2s((4, 1, 1), (1, 2, 2), [2, 2]))


def test_indivisible_batch_fails_at_execution():
    m = one_op_model("BATCH_TO_SPACE_ND", [tensor(F32, (3, 1, 1, 1)), tensor(TI, [2])],
                     [tensor(F32, (0, 0, 0, 0))])
    status, _, _ = execute(m, [np.zeros((3, 1, 1, 1), np.float32), np.array([2, 2], np.int32)])
    assert status == ErrorStatus.GENERAL_FAILURE


def test_indivisible_padded_size_fails_at_execution():
    m = one_op_model("SPACE_TO_BATCH_ND", [tensor(F32, (1, 3, 2, 1)), tensor(TI, [2], [2, 2]),
                                           tensor(TI, [2, 2])], [tensor(F32, (0, 0, 0, 0))])
    status, _, _ = execute(m, [np.zeros((1, 3, 2, 1), np.float32),
                               np.zeros((2, 2), np.int32)])
    assert status == ErrorStatus.GENERAL_FAILURE
