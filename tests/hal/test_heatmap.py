import numpy as np
import pytest

from tests.kits.direct_call import call, info
from tests.kits.one_op_models import one_op_model, rejected, run, scalar, tensor

OP = "HEATMAP_MAX_KEYPOINT"
F32 = "TENSOR_FLOAT32"


def model(shape, t=F32, box_t=None, nchw=False, q=None, box_q=None, out_q=None, kp_q=None):
    n = shape[0]
    k = shape[1] if nchw else shape[3]
    return one_op_model(OP, [tensor(t, shape, **(q or {})),
                             tensor(box_t or t, [n, 4], **(box_q or {})),
                             scalar("BOOL", nchw)],
                        [tensor(t, [n, k], **(out_q or q or {})),
                         tensor(box_t or t, [n, k, 2], **(kp_q or box_q or {}))])


def quadratic(size, peaks):
    """[1, size, size, k] heatmaps -((x - px)^2 + (y - py)^2): the Taylor fit is exact."""
    y, x = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    maps = [-((x - px) ** 2 + (y - py) ** 2) for px, py in peaks]
    return np.stack(maps, -1)[None].astype(np.float32)


def test_quadratic_peaks_are_located_exactly():
    peaks = [(2.3, 1.6), (1.0, 3.0)]
    hm = quadratic(5, peaks)
    box = np.float32([[10, 20, 60, 45]])
    scores, kps = run(model(hm.shape), [hm, box])
    np.testing.assert_allclose(scores, [[0.0, 0.0]], atol=1e-5)
    for k, (px, py) in enumerate(peaks):
        want = [(px + 0.5) / 5 * 50 + 10, (py + 0.5) / 5 * 25 + 20]
        np.testing.assert_allclose(kps[0, k], want, rtol=1e-5)


def test_far_corrections_are_clipped_to_one_and_a_half_cells():
    hm = quadratic(4, [(0.0, 0.0)])
    hm[0, 0, 0, 0] = 5.0  # a lone spike at the corner: the fit wants to move far away
    box = np.float32([[0, 0, 4, 4]])
    _, kps = run(model(hm.shape), [hm, box])
    assert np.all(np.abs(kps[0, 0] - 0.5) <= 1.5 + 1e-6)


def test_flat_grid_keeps_the_maximum():
    flat = np.ones((1, 3, 3, 1), np.float32)
    scores, kps = run(model(flat.shape), [flat, np.float32([[0, 0, 3, 3]])])
    np.testing.assert_allclose(scores, [[1.0]])
    np.testing.assert_allclose(kps, [[[0.5, 0.5]]])  # first maximum, no correction


def test_nchw_matches_nhwc():
    rng = np.random.default_rng(3)
    hm = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    boxes = np.float32([[0, 0, 12, 12], [5, 5, 7, 9]])
    a = run(model(hm.shape), [hm, boxes])
    nchw = hm.transpose(0, 3, 1, 2).copy()
    b = run(model(nchw.shape, nchw=True), [nchw, boxes])
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-6)


@pytest.mark.parametrize("t,zp", [("TENSOR_QUANT8_ASYMM", 128), ("TENSOR_QUANT8_ASYMM_SIGNED", 0)])
def test_quantized_close_to_float(t, zp):
    hm = quadratic(5, [(2.3, 1.6)]) / 4
    q = np.round(hm / 0.1) + zp
    boxes = np.float32([[8, 8, 48, 28]])
    m = model(hm.shape, t=t, box_t="TENSOR_QUANT16_ASYMM", q=dict(scale=0.1, zero_point=zp),
              box_q=dict(scale=0.125), out_q=dict(scale=0.05, zero_point=zp))
    scores, kps = run(m, [q, boxes * 8])
    fs, fk = run(model(hm.shape), [((q - zp) * 0.1).astype(np.float32), boxes])
    assert abs((float(scores[0, 0]) - zp) * 0.05 - fs[0, 0]) <= 0.05
    assert np.abs(kps / 8 - fk).max() <= 0.125


def test_float16():
    hm = quadratic(5, [(2.3, 1.6)])
    boxes = np.float32([[10, 20, 60, 45]])
    s16, k16 = run(model(hm.shape, t="TENSOR_FLOAT16"), [hm.astype(np.float16), boxes])
    s32, k32 = run(model(hm.shape), [hm, boxes])
    np.testing.assert_allclose(s16.astype(np.float32), s32, atol=5e-3)
    np.testing.assert_allclose(k16.astype(np.float32), k32, rtol=2e-3)


def test_zero_boxes():
    scores, kps = call(OP, [info(F32, np.zeros((0, 4, 4, 2))), info(F32, np.zeros((0, 4))),
                            info("BOOL", False)], [info(F32, shape=[0, 2]),
                                                   info(F32, shape=[0, 2, 2])])
    assert scores.shape == (0, 2) and kps.shape == (0, 2, 2)


def test_rejects_non_square_or_tiny_heatmaps():
    assert "square" in rejected(model((1, 4, 5, 2)))
    assert ">= 2" in rejected(model((1, 1, 1, 2)))


def test_rejects_wrong_types_rank_and_box_quant():
    assert "match no signature" in rejected(model((1, 4, 4, 2), box_t="TENSOR_INT32"))
    assert "rank" in rejected(one_op_model(OP, [tensor(F32, [1, 4, 4]), tensor(F32, [1, 4]),
                                                scalar("BOOL", False)],
                                           [tensor(F32, [1, 4]), tensor(F32, [1, 4, 2])]))
    q = dict(scale=0.1, zero_point=128)
    assert "0.125" in rejected(model((1, 4, 4, 2), t="TENSOR_QUANT8_ASYMM",
                                     box_t="TENSOR_QUANT16_ASYMM", q=q,
                                     box_q=dict(scale=0.25)))
