"""A depthwise convolution and the 1x1 convolution reading it, in one kernel (gemm.cl.mako
``dwpw``; the fusion is found by clnn/fusion.py, DepthwiseFusion).

Not a kernel family itself: CONV_2D's plan (conv2d.py) calls :func:`plan_dwpw` when the
LaunchBuilder carries a depthwise fusion. The 1x1 filter is packed once as the GEMM's B
(``_gemm.pack_weights``); the depthwise filter ([1, fh, fw, C]) and bias are read as they are
from the constant buffer. The GEMM tile is the device heuristic of _gemm_variants (its tuned
variants are measured on plain GEMMs); ``cv``, the channels per depthwise chunk, is the widest
vector (16 at most on a CPU, 4 elsewhere) that divides the channels.
"""

from __future__ import annotations

import os

from clnn.kernels import _gemm, _gemm_variants
from clnn.kernels.registry import In, Out
from clnn.kernels.support import code, f32, i32
from hal.operations.common import activation_range_float


def chunk_width(c: int, cpu: bool) -> int:
    """Channels per depthwise chunk: the widest vector dividing ``c``."""
    return next(v for v in ((16, 8, 4, 2, 1) if cpu else (4, 2, 1)) if c % v == 0)


def pick_tile(traits, n: int, m: int, k: int) -> tuple[int, int, int]:
    """The GEMM tile of a fused layer (or $CLNN_DWPW_TILE mr,nv,vw). On a CPU every output
    column of a pixel in one work-item where that takes at most 32 (vectors of 8) or 48
    (vectors of 16) accumulators per row, else 32-column panels: each column panel computes
    the depthwise window again, so wide panels; 4 pixels per work-item (the depthwise vectors
    of the chunk stay in registers too). Elsewhere the GEMM heuristic's tile."""
    forced = os.environ.get("CLNN_DWPW_TILE")
    if forced:
        return tuple(int(v) for v in forced.split(","))
    if not traits.cpu:
        return tuple(_gemm_variants.heuristic(traits, n, m, k)["tile"])
    mr = int(os.environ.get("CLNN_DWPW_MR", "4"))
    if n % 16 == 0:
        return (mr, min(n // 16, 3) if n <= 48 else 2, 16)
    return (mr, -(-n // 8) if n <= 32 else 4, 8)


def plan_dwpw(ctx, b, epilogue, residual_columns, post_fn):
    """Launch ``dwpw`` for the CONV_2D of ``ctx`` and the depthwise convolution fused into it
    (``b.depthwise``); ``epilogue``, ``residual_columns``, ``post_fn``: conv2d's helpers for
    the convolution's own fusions (ADD, activation)."""
    import numpy as np

    from hal.operations import conv2d as hal_conv2d

    f = b.depthwise
    fi, out = ctx.inputs[1], ctx.outputs[0]
    n_out, _, _, k = (int(d) for d in fi.shape)
    bsz, oh, ow, _ = (int(d) for d in out.shape)
    m = bsz * oh * ow
    dt = code(out)
    traits = _gemm_variants.traits(b.device.cl_device)
    mr, nv, vw = pick_tile(traits, n_out, m, k)
    nr = nv * vw
    cv = chunk_width(k, traits.cpu)
    bt = np.asarray(fi.value, np.float32).reshape(1, n_out, k).transpose(0, 2, 1)
    bpk = _gemm.device_buffer(b, _gemm.pack_weights(bt, nr, False))
    p = hal_conv2d.conv_params(ctx)
    lo, hi, res, alpha = epilogue(ctx, b, p, out)
    dlo, dhi = activation_range_float(f.activation)
    post = 1 | (res is not None) << 1 | (alpha is not None) << 2 | \
        _gemm.FLEX_FUNCTIONS.index(post_fn(b)) << 4
    none = [None, i32(0)]
    res_ld, res_n = residual_columns(b) or (n_out, n_out)
    gsize = (-(-m // mr), -(-n_out // nr), 1)
    variant_wg = _gemm_variants.heuristic(traits, n_out, m, k)["wg"]
    b.launch("gemm", "dwpw", {"dt": dt, "mr": mr, "nv": nv, "vw": vw, "cv": cv, "fw": f.fw},
             gsize, local_size=_gemm.local_for(variant_wg, gsize), flexible=True, args=[
                 *b.tensor(f.source), *b.tensor(f.filter), *b.tensor(f.bias), bpk, i32(0),
                 Out(0), In(2), *(none if res is None else res),
                 *(none if alpha is None else alpha),
                 *[i32(v) for v in (m, n_out, k, f.height, f.width, ow, oh * ow, f.fh,
                                    *f.stride, *f.dilation, f.top, f.left)],
                 f32(dlo), f32(dhi), i32(n_out), lo, hi, i32(post), i32(res_ld), i32(res_n)])
