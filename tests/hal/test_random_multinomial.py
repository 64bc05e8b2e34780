import numpy as np
import pytest

from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

OP = "RANDOM_MULTINOMIAL"


def model(batches=2, classes=3, samples=4000, t="TENSOR_FLOAT32", seeds=2):
    return one_op_model(OP, [tensor(t, [batches, classes]), scalar("INT32", samples),
                             tensor("TENSOR_INT32", [seeds])],
                        [tensor("TENSOR_INT32", [batches, samples])])


LOGITS = np.float32([[0.0, np.log(2), np.log(5)], [3.0, 3.0, -np.inf]])


@pytest.mark.parametrize("t", ["TENSOR_FLOAT32", "TENSOR_FLOAT16"])
def test_frequencies_follow_softmax(t):
    (y,) = run(model(t=t), [LOGITS, np.int32([7, 11])])
    assert y.shape == (2, 4000) and y.dtype == np.int32
    f0 = np.bincount(y[0], minlength=3) / 4000
    np.testing.assert_allclose(f0, [0.125, 0.25, 0.625], atol=0.03)
    f1 = np.bincount(y[1], minlength=3) / 4000
    assert f1[2] == 0  # a -inf logit is never drawn
    np.testing.assert_allclose(f1[:2], [0.5, 0.5], atol=0.03)


def test_same_seeds_repeat_other_seeds_differ():
    m = model(samples=64)
    a = run(m, [LOGITS, np.int32([1, 2])])[0]
    b = run(m, [LOGITS, np.int32([1, 2])])[0]
    c = run(m, [LOGITS, np.int32([2, 1])])[0]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_zero_seeds_still_sample_valid_classes():
    (y,) = run(model(samples=100), [LOGITS, np.int32([0, 0])])
    assert y.min() >= 0 and y.max() <= 2


def test_rejects_bad_sample_count_seed_shape_and_rank():
    assert "number of samples" in rejected(model(samples=0))
    assert "seeds" in rejected(model(seeds=3))
    m = one_op_model(OP, [tensor("TENSOR_FLOAT32", [3]), scalar("INT32", 4),
                          tensor("TENSOR_INT32", [2])], [tensor("TENSOR_INT32", [1, 4])])
    assert "rank" in rejected(m)
    m = one_op_model(OP, [tensor("TENSOR_INT32", [1, 3]), scalar("INT32", 4),
                          tensor("TENSOR_INT32", [2])], [tensor("TENSOR_INT32", [1, 4])])
    assert "match no signature" in rejected(m)


def test_philox_known_answers():
    """Random123's known-answer vectors for Philox4x32-10."""
    from hal.operations.random_multinomial import philox4x32

    cases = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
             ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2,
              (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
             ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
              (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for ctr, key, want in cases:
        got = philox4x32(np.array([ctr], np.uint32), key)[0]
        assert tuple(int(v) for v in got) == want
