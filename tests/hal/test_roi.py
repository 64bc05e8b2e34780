import numpy as np
import pytest

from hal.errors import ErrorStatus
from tests.kits.direct_call import call, info
from tests.kits.one_op_models import execute, one_op_model, rejected, run, scalar, tensor

F32 = "TENSOR_FLOAT32"


def align_model(shape, n_rois, oh, ow, hs=1.0, ws=1.0, hr=2, wr=2, nchw=False, t=F32,
                roi_t=None, f="FLOAT32", q=None, roi_q=None, out_q=None):
    q = q or {}
    depth = shape[1] if nchw else shape[3]
    out = [n_rois, depth, oh, ow] if nchw else [n_rois, oh, ow, depth]
    return one_op_model("ROI_ALIGN", [
        tensor(t, shape, **q), tensor(roi_t or t, [n_rois, 4], **(roi_q or {})),
        tensor("TENSOR_INT32", [n_rois]), scalar("INT32", oh), scalar("INT32", ow),
        scalar(f, hs), scalar(f, ws), scalar("INT32", hr), scalar("INT32", wr),
        scalar("BOOL", nchw)], [tensor(t, out, **(out_q if out_q is not None else q))])


def pool_model(shape, n_rois, oh, ow, hs=1.0, ws=1.0, nchw=False, t=F32, roi_t=None,
               f="FLOAT32", q=None, roi_q=None, out_q=None):
    q = q or {}
    depth = shape[1] if nchw else shape[3]
    out = [n_rois, depth, oh, ow] if nchw else [n_rois, oh, ow, depth]
    return one_op_model("ROI_POOLING", [
        tensor(t, shape, **q), tensor(roi_t or t, [n_rois, 4], **(roi_q or {})),
        tensor("TENSOR_INT32", [n_rois]), scalar("INT32", oh), scalar("INT32", ow),
        scalar(f, hs), scalar(f, ws), scalar("BOOL", nchw)],
        [tensor(t, out, **(out_q if out_q is not None else q))])


def linear_map(n=2, h=6, w=8, c=2):
    y, x = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    base = (x + 10 * y).astype(np.float32)
    return np.stack([np.stack([base + 100 * b + 1000 * k for k in range(c)], -1)
                     for b in range(n)]).astype(np.float32)


def test_align_of_a_linear_map_samples_bin_centres():
    fm = linear_map()
    rois = np.array([[1, 1, 5, 3], [0.5, 0.5, 4.5, 4.5]], np.float32)
    (y,) = run(align_model(fm.shape, 2, 2, 2), [fm, rois, np.int32([0, 1])])
    for k, (x1, y1, x2, y2) in enumerate(rois):
        b = [0, 1][k]
        cy = y1 + (np.arange(2) + 0.5) * (y2 - y1) / 2
        cx = x1 + (np.arange(2) + 0.5) * (x2 - x1) / 2
        want = cx[None, :, None] + 10 * cy[:, None, None] + 100 * b + 1000 * np.arange(2)
        np.testing.assert_allclose(y[k], want, rtol=1e-6)


def test_align_nchw_matches_nhwc_and_strides_scale_rois():
    fm = linear_map()
    rois = np.array([[2, 2, 10, 6]], np.float32)  # in image coordinates, stride 2
    (a,) = run(align_model(fm.shape, 1, 2, 3, hs=2.0, ws=2.0, hr=0, wr=0),
               [fm, rois, np.int32([1])])
    nchw = fm.transpose(0, 3, 1, 2).copy()
    (b,) = run(align_model(nchw.shape, 1, 2, 3, hs=2.0, ws=2.0, hr=0, wr=0, nchw=True),
               [nchw, rois, np.int32([1])])
    np.testing.assert_allclose(b.transpose(0, 2, 3, 1), a, rtol=1e-6)


def test_align_samples_past_the_edge_clamp():
    fm = np.arange(4, dtype=np.float32).reshape(1, 2, 2, 1)
    (y,) = run(align_model(fm.shape, 1, 1, 1, hr=1, wr=1), [fm, np.float32([[1, 1, 2, 2]]),
                                                             np.int32([0])])
    np.testing.assert_allclose(y.reshape(-1), [3.0])  # sample (1.5, 1.5) clamps to (1, 1)


@pytest.mark.parametrize("t,zp", [("TENSOR_QUANT8_ASYMM", 128), ("TENSOR_QUANT8_ASYMM_SIGNED", 0)])
def test_align_quantized_with_another_output_scale(t, zp):
    fm = linear_map(n=1, h=4, w=4, c=1) / 4
    q = np.round(fm / 0.25) + zp
    rois = np.float32([[0, 0, 3, 3]])
    m = align_model(fm.shape, 1, 2, 2, t=t, roi_t="TENSOR_QUANT16_ASYMM",
                    q=dict(scale=0.25, zero_point=zp), roi_q=dict(scale=0.125),
                    out_q=dict(scale=0.5, zero_point=zp))
    (y,) = run(m, [q, rois * 8, np.int32([0])])
    (ref,) = run(align_model(fm.shape, 1, 2, 2), [fm, rois, np.int32([0])])
    assert np.abs((y.astype(np.float32) - zp) * 0.5 - ref).max() <= 0.5


def brute_pool(fm, roi, b, oh, ow):
    x1, y1, x2, y2 = (int(np.floor(v + 0.5)) for v in roi)
    rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
    out = np.zeros((oh, ow, fm.shape[3]), fm.dtype)
    for i in range(oh):
        for j in range(ow):
            hs, he = int(np.floor(i * rh / oh)) + y1, int(np.ceil((i + 1) * rh / oh)) + y1
            ws, we = int(np.floor(j * rw / ow)) + x1, int(np.ceil((j + 1) * rw / ow)) + x1
            he, we = min(he, fm.shape[1]), min(we, fm.shape[2])
            out[i, j] = fm[b, hs:he, ws:we].max(axis=(0, 1)) if hs < he and ws < we else 0
    return out


def test_pooling_matches_a_brute_force_max():
    rng = np.random.default_rng(1)
    fm = rng.standard_normal((2, 7, 9, 3)).astype(np.float32)
    rois = np.float32([[0, 0, 8, 6], [1.4, 2.6, 5.5, 4.2], [3, 3, 3, 3]])
    batch = np.int32([0, 1, 1])
    (y,) = run(pool_model(fm.shape, 3, 3, 2), [fm, rois, batch])
    for k in range(3):
        np.testing.assert_array_equal(y[k], brute_pool(fm, rois[k], batch[k], 3, 2))


def test_pooling_nchw_and_quantized():
    rng = np.random.default_rng(2)
    q = rng.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8)
    rois = np.float32([[0, 0, 4, 4]])
    m = pool_model(q.shape, 1, 2, 2, nchw=True, t="TENSOR_QUANT8_ASYMM",
                   roi_t="TENSOR_QUANT16_ASYMM", q=dict(scale=0.5, zero_point=3),
                   roi_q=dict(scale=0.125))
    (y,) = run(m, [q, rois * 8, np.int32([0])])
    want = brute_pool(q.transpose(0, 2, 3, 1), rois[0], 0, 2, 2)
    np.testing.assert_array_equal(y[0].transpose(1, 2, 0), want)


@pytest.mark.parametrize("op", ["ROI_ALIGN", "ROI_POOLING"])
def test_zero_rois(op):
    fm = info(F32, linear_map())
    extra = [info("INT32", 2), info("INT32", 2)] if op == "ROI_ALIGN" else []
    (y,) = call(op, [fm, info(F32, np.zeros((0, 4))), info("TENSOR_INT32", []),
                     info("INT32", 3), info("INT32", 4), info("FLOAT32", 1.0),
                     info("FLOAT32", 1.0), *extra, info("BOOL", False)],
                [info(F32, shape=[0, 3, 4, 2])])
    assert y.shape == (0, 3, 4, 2)


@pytest.mark.parametrize("roi,batch", [([0, 0, 20, 2], 0), ([3, 0, 2, 2], 0), ([0, 0, 2, 2], 5),
                                       ([-1, 0, 2, 2], 0)])
def test_malformed_rois_fail_the_execution(roi, batch):
    fm = linear_map()
    for m in (align_model(fm.shape, 1, 2, 2), pool_model(fm.shape, 1, 2, 2)):
        status, _, _ = execute(m, [fm, np.float32([roi]), np.int32([batch])])
        assert status == ErrorStatus.GENERAL_FAILURE


def test_float16():
    fm = linear_map()
    rois = np.float32([[1, 1, 5, 3]])
    (a,) = run(align_model(fm.shape, 1, 2, 2, t="TENSOR_FLOAT16", f="FLOAT16"),
               [fm.astype(np.float16), rois, np.int32([0])])
    (b,) = run(align_model(fm.shape, 1, 2, 2), [fm, rois, np.int32([0])])
    np.testing.assert_allclose(a.astype(np.float32), b, rtol=2e-3)


@pytest.mark.parametrize("kw,word", [(dict(oh=0), "output height"), (dict(ws=0.0), "stride"),
                                     (dict(hr=-1), "sampling ratio")])
def test_align_rejects_bad_scalars(kw, word):
    args = dict(oh=2, ow=2) | kw
    oh, ow = args.pop("oh"), args.pop("ow")
    assert word in rejected(align_model((1, 4, 4, 1), 1, oh, ow, **args))


def test_rejects_wrong_types_and_ranks():
    assert "match no signature" in rejected(align_model((1, 4, 4, 1), 1, 2, 2, f="FLOAT16"))
    assert "rank" in rejected(pool_model((1, 4, 4, 1, 1), 1, 2, 2))


def test_rejects_quant_roi_scale_and_pooling_output_scale():
    q = dict(scale=0.5, zero_point=3)
    m = pool_model((1, 4, 4, 1), 1, 2, 2, t="TENSOR_QUANT8_ASYMM", roi_t="TENSOR_QUANT16_ASYMM",
                   q=q, roi_q=dict(scale=0.25))
    assert "0.125" in rejected(m)
    m = pool_model((1, 4, 4, 1), 1, 2, 2, t="TENSOR_QUANT8_ASYMM", roi_t="TENSOR_QUANT16_ASYMM",
                   q=q, roi_q=dict(scale=0.125), out_q=dict(scale=0.25, zero_point=3))
    assert "same scale" in rejected(m)
