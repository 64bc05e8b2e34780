"""A depthwise convolution and the 1x1 convolution reading it, in one kernel (gemm.cl.mako
``dwpw``; the fusion is found by clnn/fusion/, DepthwiseFusion, where
clnn/kernels/_dwpw_variants.py ``choose`` says).

Not a kernel family itself: CONV_2D's plan (conv2d.py) calls :func:`plan_dwpw` when the
LaunchBuilder carries a depthwise fusion. The 1x1 filter is packed once as the GEMM's B
(``_gemm.pack_weights``); the depthwise filter ([1, fh, fw, C]) and bias are read as they are
from the constant buffer. A work-item computes the depthwise outputs of its pixels over every
channel into a private panel (at most KMAX[-1] channels), then the GEMM over every column
panel: the depthwise work is done once per pixel, whatever the outputs. The GEMM tile is the
1x1 convolution's heuristic one or, tuned, the same columns over 4 pixels. Where the device
class has ``dwpw_px`` (:func:`row_pixels`), a work-item takes px pixels (several tiles) and,
where they lie in one output row, loads each channel chunk's fh x fw filter vectors once for
all of them (the tile's (mr, nv, vw, px) form; fh then in the key). ``cv``, the channels per
depthwise chunk, is the widest vector (16 at most) that divides the channels, or on a CPU 16
with the last chunk overlapping (:func:`chunk_width`). CPUs only (:func:`fused_tiles`).
"""

from __future__ import annotations

import numpy as np

from clnn.kernels import _defaults, _gemm, _gemm_variants
from clnn.kernels.registry import In, Out
from clnn.kernels.support import code, f32, i32
from hal.operations.common import activation_range_float


def chunk_width(c: int, cpu: bool) -> int:
    """Channels per depthwise chunk: the widest vector dividing ``c``; on a CPU, where that
    is narrower than 8 and ``c`` holds 16, 16 (the last chunk overlapping the one before it:
    its shared channels computed twice, the same values), as the depthwise kernels' class
    dw_overlap_vw does (28 or 42 channels ran 4 or 2 to a vector, 2.5-2.9x the two
    launches' time on stride-2 layers)."""
    v = next(v for v in ((16, 8, 4, 2, 1) if cpu else (4, 2, 1)) if c % v == 0)
    return 16 if cpu and v < 8 and c >= 16 else v


#: the longest depthwise panel row (channels) a work-item keeps in private memory, and the
#: row lengths kernels are built for (the smallest holding K: fewer kernels to compile)
KMAX = (64, 128, 256, 512)


def panel_length(c: int) -> int | None:
    return next((k for k in KMAX if c <= k), None)


#: fused tiles measured on every CPU besides the heuristic's (the same for every vector width,
#: so that a tuning entry stays a candidate when the heuristic changes): the tiles
#: ``clnn tune`` chooses over the benchmark models' fused layers, 4 x 16 on most
FUSED_TILES = ((4, 1, 16), (8, 1, 8), (4, 1, 8), (8, 1, 16))


#: the most floats of a work-item's depthwise panel (px pixels x kmax channels) where it
#: computes more than one tile's pixels: an L1 data cache's share (16 KiB)
PANEL_FLOATS = 4096


def row_pixels(traits, mr: int, c: int, taps: int) -> int:
    """The pixels a work-item computes along an output row (``px``, a multiple of ``mr``
    above it), each channel chunk's fh x fw filter vectors loaded once for all of them: the
    device class's ``dwpw_px``, halved until the panel fits :data:`PANEL_FLOATS`; 0 where the
    class has none, the filter has more than ``dwpw_px_taps`` taps (its vectors would not stay
    in the registers) or no more than one tile fits."""
    d = _defaults.defaults(traits)
    k = panel_length(c)
    px = d.dwpw_px
    if not px or not taps or taps > d.dwpw_px_taps or k is None:
        return 0
    while px > mr and px * k > PANEL_FLOATS:
        px //= 2
    return px if px > mr and px % mr == 0 else 0


def fused_tiles(traits, n: int, c: int, m: int = 0, taps: int = 0) -> list[tuple]:
    """The GEMM tiles a fused layer may run, the first the default: the GEMM heuristic's
    tile for the 1x1 convolution (where :func:`row_pixels` gives a row of pixels for a
    filter of ``taps`` taps, first that tile over the row, as (mr, nv, vw, px)), then the
    same columns over 4 pixels, then :data:`FUSED_TILES` no wider than the output. None (an
    empty list) on a GPU (the private depthwise panel, mr x K floats, is no GPU thread's
    budget), for more than KMAX[-1] channels, or fewer than 4 output columns (conv_cvec's)."""
    if not _defaults.defaults(traits).dwpw or panel_length(c) is None or n < 4:
        return []
    mr, nv, vw = _gemm_variants.heuristic(traits, n, m, c)["tile"]
    px = row_pixels(traits, mr, c, taps)
    out = [(mr, nv, vw, px)] if px and m > px else []
    out.append((mr, nv, vw))
    for t in ((4, nv, vw), *FUSED_TILES):
        if t not in out and _gemm_variants.fits_n(t, n):
            out.append(t)
    return out


def tile_pixels(tile) -> int:
    """The pixels of a work-item of a fused tile: (mr, nv, vw) mr, (mr, nv, vw, px) px."""
    return tile[3] if len(tile) > 3 else tile[0]


def _key(dt: str, tile, c: int, cpu: bool, fw: int, sx: int, dx: int, fh: int) -> dict:
    """``fh``: the filter's rows, in the key (unrolled) only where a work-item runs a row of
    pixels (``px``: :func:`tile_pixels`)."""
    mr, nv, vw = tile[:3]
    px = tile_pixels(tile)
    return {"dt": dt, "mr": mr, "nv": nv, "vw": vw, "cv": chunk_width(c, cpu), "fw": fw,
            "sx": sx, "dx": dx, "kmax": panel_length(c),
            **({"px": px, "fh": fh} if px != mr else {})}


def _local(traits, n_out: int, m: int, c: int, gsize):
    return _gemm.local_for(_gemm_variants.heuristic(traits, n_out, m, c)["wg"], gsize)


def _args(src, wd, bd, bpk, out, bias, res, alpha, m, n_out, c, h, w, oh, ow, fh, stride_h,
          dil_h, top, left, act, lo, hi, post, res_ld, res_n) -> list:
    """The arguments of ``dwpw``: tensors as (buffer, element offset) pairs, buffers or
    In / Out (``res``, ``alpha``: None where the epilogue reads none); ``act`` the depthwise
    convolution's activation code (the horizontal stride and dilation are in the key)."""
    none = [None, i32(0)]
    dlo, dhi = activation_range_float(act)
    arg = _gemm.tensor_arg
    return [*arg(src), *arg(wd), *arg(bd), bpk, i32(0), *arg(out), *arg(bias),
            *(none if res is None else arg(res)), *(none if alpha is None else arg(alpha)),
            *[i32(v) for v in (m, n_out, c, h, w, ow, oh * ow, fh, stride_h, dil_h, top,
                               left)],
            f32(dlo), f32(dhi), i32(n_out), f32(lo), f32(hi), i32(post), i32(res_ld),
            i32(res_n)]


def plan_dwpw(ctx, b, epilogue, residual_columns, post_fn):
    """Launch ``dwpw`` for the CONV_2D of ``ctx`` and the depthwise convolution fused into it
    (``b.depthwise``, with the tile chosen at fusion); ``epilogue``, ``residual_columns``,
    ``post_fn``: conv2d's helpers for the convolution's own fusions (ADD, activation)."""
    from hal.operations import conv2d as hal_conv2d

    f = b.depthwise
    fi, out = ctx.inputs[1], ctx.outputs[0]
    n_out, _, _, k = (int(d) for d in fi.shape)
    bsz, oh, ow, _ = (int(d) for d in out.shape)
    m = bsz * oh * ow
    traits = _gemm_variants.traits(b.device.limits)
    mr, nv, vw = f.tile[:3]
    bt = np.asarray(fi.value, np.float32).reshape(1, n_out, k).transpose(0, 2, 1)
    bpk = _gemm.device_buffer(b, _gemm.pack_weights(bt, nv * vw, False))
    lo, hi, res, alpha = epilogue(ctx, b, hal_conv2d.conv_params(ctx), out)
    # (bit 3: the residual after the convolution's own clamp, clnn/fusion/ AddFusion.clamp)
    post = 1 | (res is not None) << 1 | (alpha is not None) << 2 | \
        (res is not None and b.residual.clamp != 0) << 3 | \
        _gemm.FLEX_FUNCTIONS.index(post_fn(b)) << 4
    res_ld, res_n = residual_columns(b) or (n_out, n_out)
    gsize = (-(-m // tile_pixels(f.tile)), 1, 1)
    key = _key(code(out), f.tile, k, traits.cpu, f.fw, f.stride[1], f.dilation[1], f.fh)
    b.launch("gemm", "dwpw", key, gsize,
             _args(b.tensor(f.source), b.tensor(f.filter), b.tensor(f.bias), bpk, Out(0),
                   In(2), res, alpha, m, n_out, k, f.height, f.width, oh, ow, f.fh, f.stride[0],
                   f.dilation[0], f.top, f.left, f.activation, lo, hi, post, res_ld, res_n),
             local_size=_local(traits, n_out, m, k, gsize), flexible=True)
