"""The float GEMM's epilogue (templates/gemm.cl.mako): every combination of the run-time
``post`` flags (bias, residual, PRELU, function), on full tiles (the compiled blocks of
FAST_POSTS, and the general epilogue for the others) and on partial ones (rows past M, columns
past N, a residual of fewer columns), against NumPy; kernels compiled for some ``post`` values
only (``fp``: clnn.passes.realize.fast_posts, the values of the plan's launches of the kernel)
run each of those values alike on every tile."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from clnn.kernels import _gemm
from clnn.launch import LaunchBuilder

FUNCTIONS = {None: lambda x: x, "LOGISTIC": lambda x: 1.0 / (1.0 + np.exp(-x)),
             "HARD_SWISH": lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0}


def _buffer(device, arr):
    import pyopencl as cl

    arr = np.ascontiguousarray(arr, np.float32)
    return cl.Buffer(device.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=arr if arr.size else np.zeros(1, np.float32))


def _run(device, a, w, tile, bias, res, res_cols, alpha, fn, lo, hi, fp=None):
    """C = fn(prelu(clamp(a @ w + bias + res, lo, hi))) through launch_gemm (``fp``: the
    kernel compiled for those ``post`` values only, and without the general full-tile block
    where it ends in "-": clnn.passes.realize.fast_posts), and the launch's ``post``; None
    where ``fp`` leaves the launch's ``post`` out (no plan launches such a kernel with it)."""
    import pyopencl as cl

    M, K = a.shape
    N = w.shape[1]
    bpk = _gemm.pack_weights(w[None], tile[1] * tile[2], False)
    bufs = {"a": _buffer(device, a), "b": _buffer(device, bpk),
            "c": _buffer(device, np.full((M, N), np.nan, np.float32))}
    kw = {}
    if bias is not None:
        kw["bias"] = (_buffer(device, bias), 0)
    if res is not None:
        kw["res"] = (_buffer(device, res), np.int32(0))
        if res_cols is not None:
            kw["res_cols"] = res_cols
    if alpha is not None:
        kw["prelu"] = (_buffer(device, alpha), np.int32(0))
    rec = LaunchBuilder.scratch_layer(device, 2.0 * M * N * K)
    _gemm.launch_gemm(rec, dt="f32", a=bufs["a"], bpk=bufs["b"], c=bufs["c"], M=M, N=N, K=K,
                      tile=tile, sam=K, sak=1, lo=np.float32(lo), hi=np.float32(hi), fn=fn,
                      **kw)
    if fp is not None:
        if rec.launches[-1].post not in fp:
            return None
        rec.launches[-1].pending[2]["fp"] = tuple(p for p in fp if p != "-")
        if "-" in fp:
            rec.launches[-1].pending[2]["general"] = False
    q = device.timing_queue()
    for k, gs, ls in rec.kernels():
        cl.enqueue_nd_range_kernel(q, k, gs, ls)
    out = np.empty((M, N), np.float32)
    cl.enqueue_copy(q, out, bufs["c"])
    return out, rec.launches[-1].post


@pytest.mark.parametrize("tile,M,N,fp", [((4, 1, 16), 32, 32, None), ((4, 1, 16), 30, 24, None),
                                         ((2, 2, 8), 8, 32, None), ((2, 2, 8), 7, 40, None),
                                         # the last panel's last vector half past N (the
                                         # kernel's ``half``: its epilogue in vectors)
                                         ((8, 2, 16), 11, 24, None), ((8, 1, 8), 9, 28, None),
                                         ((4, 1, 16), 13, 56, None),
                                         ((4, 1, 16), 32, 32, (0, 1, 17)),
                                         ((2, 2, 8), 8, 32, (3, 5)),
                                         ((4, 1, 16), 32, 32, (1, "-")),
                                         ((2, 2, 8), 7, 40, (3, 7, "-")),
                                         ((8, 1, 8), 9, 28, (3, 7, "-")),
                                         # the half vector in the blocks of the fp values
                                         ((8, 2, 16), 11, 24, (1, 3, 17, "-")),
                                         ((4, 1, 16), 13, 56, (0, 3, 7, 35, "-")),
                                         # values with and without the residual in one block
                                         ((4, 1, 16), 30, 24, (5, 7, "-"))])
def test_every_post_combination(cl_device, tile, M, N, fp):
    rng = np.random.default_rng(M * 100 + N)
    K = 12
    a = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((K, N)).astype(np.float32)
    posts = set()
    for has_bias, res_kind, has_prelu, fn in itertools.product(
            (False, True), (None, "full", "fewer", "fewer4"), (False, True), FUNCTIONS):
        bias = rng.standard_normal(N).astype(np.float32) if has_bias else None
        alpha = rng.uniform(0.1, 0.5, N).astype(np.float32) if has_prelu else None
        res = res_cols = None
        want = a.astype(np.float64) @ w
        if bias is not None:
            want = want + bias
        if res_kind == "full":
            res = rng.standard_normal((M, N)).astype(np.float32)
            want = want + res
        elif res_kind in ("fewer", "fewer4"):  # a residual of N - 8 (4) columns, rows of as
            rn = N - (8 if res_kind == "fewer" else 4)  # many
            res = rng.standard_normal((M, rn)).astype(np.float32)
            res_cols = (rn, rn)
            want[:, :rn] += res
        lo, hi = (-2.0, 6.0) if fn is None else (-np.inf, np.inf)
        want = np.clip(want, lo, hi)
        if alpha is not None:
            want = np.where(want < 0, want * alpha, want)
        want = FUNCTIONS[fn](want)
        got = _run(cl_device, a, w, tile, bias, res, res_cols, alpha, fn, lo, hi, fp)
        if got is None:
            continue
        got, post = got
        posts.add(post)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=(
            f"tile {tile}, M {M}, N {N}, blocks {fp}: bias {has_bias}, residual {res_kind}, "
            f"PRELU {has_prelu}, function {fn}"))
    # every value of the kernel's was launched (fp), or every value (2 x 2 x 2 x 3)
    assert posts == {p for p in fp if p != "-"} if fp is not None else len(posts) == 24


def test_half_vector_key():
    """launch_gemm keys ``half`` where the last panel's last vector is half past N (float
    NHWC epilogues): 24 columns in one panel of 2 x 16, 28 in panels of 8, 56 in panels of
    16; not where the columns fill their vectors or leave another part of one."""
    from tests.kits.devices import open_or_skip

    device = open_or_skip("opencl", fallback=False)
    for tile, n, half in (((8, 2, 16), 24, True), ((8, 1, 8), 28, True),
                          ((4, 1, 16), 56, True), ((8, 2, 16), 32, False),
                          ((8, 2, 16), 40, False), ((4, 3, 8), 24, False)):
        rec = LaunchBuilder.scratch_layer(device, 1.0)
        _gemm.launch_gemm(rec, dt="f32", a=None, bpk=None, c=None, M=8, N=n, K=4, tile=tile,
                          sam=4, sak=1)
        (launch,) = rec.launches
        assert bool(dict(launch.pending[2]).get("half")) == half, (tile, n)
