"""A depthwise convolution and the 1x1 convolution reading it, in one kernel (gemm.cl.mako
``dwpw``; the fusion is found by clnn/fusion.py, DepthwiseFusion, where :func:`choose` says).

Not a kernel family itself: CONV_2D's plan (conv2d.py) calls :func:`plan_dwpw` when the
LaunchBuilder carries a depthwise fusion. The 1x1 filter is packed once as the GEMM's B
(``_gemm.pack_weights``); the depthwise filter ([1, fh, fw, C]) and bias are read as they are
from the constant buffer. A work-item computes the depthwise outputs of its pixels over every
channel into a private panel (at most KMAX[-1] channels), then the GEMM over every column
panel: the depthwise work is done once per pixel, whatever the outputs. The GEMM tile is the
1x1 convolution's heuristic one or, tuned, the same columns over 4 pixels; ``cv``, the
channels per depthwise chunk, is the widest vector (16 at most) that divides the channels.
CPUs only (:func:`fused_tiles`).
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


#: the longest depthwise panel row (channels) a work-item keeps in private memory, and the
#: row lengths kernels are built for (the smallest holding K: fewer kernels to compile)
KMAX = (64, 128, 256, 512)


def panel_length(c: int) -> int | None:
    return next((k for k in KMAX if c <= k), None)


def fused_tiles(traits, n: int, c: int, m: int = 0) -> list[tuple[int, int, int]]:
    """The GEMM tiles a fused layer may run, the first the default: the GEMM heuristic's
    tile for the 1x1 convolution, then the same columns over 4 pixels. None on a GPU (the
    private depthwise panel, mr x K floats, is no GPU thread's budget), for more than
    KMAX[-1] channels, or fewer than 4 output columns (conv_cvec's)."""
    if not traits.cpu or panel_length(c) is None or n < 4:
        return []
    mr, nv, vw = _gemm_variants.heuristic(traits, n, m, c)["tile"]
    return [(mr, nv, vw), *([(4, nv, vw)] if mr != 4 else [])]


def choose(planner, op_index: int, sig: dict) -> list | None:
    """The tile of a fused depthwise -> 1x1 layer (``sig``: its shapes, see clnn/fusion.py),
    or None where it runs as two launches. The tuner measures both ways (the two launches in
    the variants the unfused plan would run) and keeps the faster: fused, a launch and the
    depthwise output's round trip through memory are saved, but the depthwise work runs
    inside the GEMM's work-items, without the depthwise kernel's own tiling, so which wins
    depends on the layer and no simple rule held (PoCL / AVX-512, kernel time fused / two
    launches, the GEMM reading the depthwise output from the caches: 0.64 on [128x128,
    16 -> 8], 0.75 on [28x28, 144 -> 24], 0.82 on [64x64, 24 -> 24], 0.93-1.07 on most
    others, 1.3-1.8 on [96x96, 8..32 -> 8..32]). Measured by ``clnn tune`` and in
    CLNN_TUNE=full, not at a prepare in the default fast mode, which reuses what the cache
    holds. Without a measurement (no tuning entry, CLNN_TUNE=off, float16): two launches.
    $CLNN_DWPW=0: never fused; =all: fused wherever a tile fits (tests)."""
    from clnn import tuning

    device = planner.device
    cl_device = getattr(device, "cl_device", None)
    if _MODE == "0" or cl_device is None:
        return None
    m = sig["n"] * sig["oh"] * sig["ow"]
    tiles = fused_tiles(_gemm_variants.traits(cl_device), sig["N"], sig["c"], m)
    if not tiles:
        return None
    if _MODE == "all":
        return list(tiles[0])
    if sig["dt"] != "f32" or not hasattr(device, "platform"):
        return None
    default = {"fuse": False}
    cands = [default, *({"fuse": True, "tile": list(t)} for t in tiles)]
    flop = 2.0 * m * sig["c"] * (sig["fh"] * sig["fw"] + sig["N"])
    tuner = tuning.tuner_for(device)
    if tuner.mode == "fast" and not tuner.unbounded:
        # at prepare the cache only: measuring would compile the fused kernel's candidates
        # (1-2 s each on a cold PoCL cache, against the 5 s first result); clnn tune does
        flop = 0.0
    v = tuner.choose(op_index, "dwpw", sig, cands, default,
                     lambda v: scratch_layer(device, tuner, v, sig), flop=flop, owner=planner,
                     scratch_bytes=4 * (sig["n"] * sig["h"] * sig["w"] * sig["c"] +
                                        2 * m * max(sig["c"], sig["N"])))
    return v["tile"] if v.get("fuse") else None


def scratch_layer(device, tuner, v: dict, s: dict):
    """(kernels, release) of one float32 depthwise -> 1x1 layer on zeroed scratch buffers:
    fused in tile ``v["tile"]``, or (``v["fuse"]`` false) as the depthwise and GEMM launches
    in their cached (else heuristic) variants."""
    import numpy as np
    import pyopencl as cl

    from clnn.kernels import _depthwise_variants as dwv

    m = s["n"] * s["oh"] * s["ow"]
    n_out, c = s["N"], s["c"]
    traits = _gemm_variants.traits(device.cl_device)
    if not v["fuse"]:
        dsig = {k: s[k] for k in ("dt", "n", "h", "w", "c", "oh", "ow", "fh", "fw", "sh", "sw",
                                  "dh", "dw")}
        dv = _cached(tuner, "depthwise", dsig,
                     dwv.heuristic(traits.cpu, c, s["ow"], s["fw"], s["sw"], s["dw"]))
        gsig = {"dt": "f32", "amode": "rows", "M": m, "N": n_out, "K": c, "batches": 1}
        gv = _cached(tuner, "gemm", gsig, _gemm_variants.heuristic(traits, n_out, m, c))
        # the GEMM reads what the depthwise kernel wrote (in the caches, as in a model)
        mid = cl.Buffer(device.context, cl.mem_flags.READ_WRITE, max(4, 4 * m * c))
        k1, r1 = dwv.scratch_depthwise(device, dv, dsig, out=mid)
        k2, r2 = _gemm_variants.scratch_gemm(device, gv, "f32", "rows", m, n_out, c, 1, a=mid)

        def release_both():
            r1()
            r2()
            mid.release()

        return k1 + k2, release_both
    mr, nv, vw = v["tile"]
    nr = nv * vw
    sizes = (s["n"] * s["h"] * s["w"] * c, s["fh"] * s["fw"] * c, c,
             _gemm.ceil_to(n_out, nr) * c, m * n_out, n_out)
    q = device.timing_queue()
    bufs = []
    for n in sizes:
        buf = cl.Buffer(device.context, cl.mem_flags.READ_WRITE, max(4, 4 * n))
        cl.enqueue_fill_buffer(q, buf, np.float32(0), 0, max(4, 4 * n))
        bufs.append(buf)
    src, wd, bd, bpk, out, bias = bufs
    rec = _gemm_variants._Recorder(device, 2.0 * m * c * (s["fh"] * s["fw"] + n_out))
    gsize = (-(-m // mr), 1, 1)
    rec.launch("gemm", "dwpw", _key("f32", v["tile"], c, traits.cpu, s["fw"], s["sw"], s["dw"]),
               gsize, _args(src, wd, bd, bpk, out, bias, None, None, m, n_out, c, s["h"],
                            s["w"], s["oh"], s["ow"], s["fh"], (s["sh"], s["sw"]),
                            (s["dh"], s["dw"]), s["pt"], s["pl"], 0, -np.inf, np.inf, 1, n_out,
                            n_out),
               local_size=_local(traits, n_out, m, c, gsize), flexible=True)

    def release():
        for buf in bufs:
            buf.release()

    return rec.kernels, release


def _cached(tuner, family: str, sig: dict, default: dict) -> dict:
    entry = tuner.cache.get(family, sig) if tuner.cache is not None else None
    return entry["choice"] if entry and isinstance(entry.get("choice"), dict) else default


def _key(dt: str, tile, c: int, cpu: bool, fw: int, sx: int, dx: int) -> dict:
    mr, nv, vw = tile
    return {"dt": dt, "mr": mr, "nv": nv, "vw": vw, "cv": chunk_width(c, cpu), "fw": fw,
            "sx": sx, "dx": dx, "kmax": panel_length(c)}


def _local(traits, n_out: int, m: int, c: int, gsize):
    return _gemm.local_for(_gemm_variants.heuristic(traits, n_out, m, c)["wg"], gsize)


def _args(src, wd, bd, bpk, out, bias, res, alpha, m, n_out, c, h, w, oh, ow, fh, stride,
          dilation, top, left, act, lo, hi, post, res_ld, res_n) -> list:
    """The arguments of ``dwpw``: tensors as (buffer, element offset) pairs or In / Out
    (``res``, ``alpha``: None where the epilogue reads none); ``act`` the depthwise
    convolution's activation code."""
    none = [None, i32(0)]
    dlo, dhi = activation_range_float(act)
    return [*_pair(src), *_pair(wd), *_pair(bd), bpk, i32(0), *_pair(out), *_pair(bias),
            *(none if res is None else _pair(res)), *(none if alpha is None else _pair(alpha)),
            *[i32(v) for v in (m, n_out, c, h, w, ow, oh * ow, fh, *stride, *dilation, top,
                               left)],
            f32(dlo), f32(dhi), i32(n_out), f32(lo), f32(hi), i32(post), i32(res_ld),
            i32(res_n)]


def _pair(t) -> list:
    return _gemm.tensor_arg(t)


#: CLNN_DWPW: 0 turns the depthwise -> pointwise fusion off, "all" on wherever a tile fits
#: (tests, A/B measurements)
_MODE = os.environ.get("CLNN_DWPW", "1")


def plan_dwpw(ctx, b, epilogue, residual_columns, post_fn):
    """Launch ``dwpw`` for the CONV_2D of ``ctx`` and the depthwise convolution fused into it
    (``b.depthwise``, with the tile chosen at fusion); ``epilogue``, ``residual_columns``,
    ``post_fn``: conv2d's helpers for the convolution's own fusions (ADD, activation)."""
    import numpy as np

    from hal.operations import conv2d as hal_conv2d

    f = b.depthwise
    fi, out = ctx.inputs[1], ctx.outputs[0]
    n_out, _, _, k = (int(d) for d in fi.shape)
    bsz, oh, ow, _ = (int(d) for d in out.shape)
    m = bsz * oh * ow
    traits = _gemm_variants.traits(b.device.cl_device)
    mr, nv, vw = f.tile
    bt = np.asarray(fi.value, np.float32).reshape(1, n_out, k).transpose(0, 2, 1)
    bpk = _gemm.device_buffer(b, _gemm.pack_weights(bt, nv * vw, False))
    lo, hi, res, alpha = epilogue(ctx, b, hal_conv2d.conv_params(ctx), out)
    post = 1 | (res is not None) << 1 | (alpha is not None) << 2 | \
        _gemm.FLEX_FUNCTIONS.index(post_fn(b)) << 4
    res_ld, res_n = residual_columns(b) or (n_out, n_out)
    gsize = (-(-m // mr), 1, 1)
    key = _key(code(out), f.tile, k, traits.cpu, f.fw, f.stride[1], f.dilation[1])
    b.launch("gemm", "dwpw", key, gsize,
             _args(b.tensor(f.source), b.tensor(f.filter), b.tensor(f.bias), bpk, Out(0),
                   In(2), res, alpha, m, n_out, k, f.height, f.width, oh, ow, f.fh, f.stride,
                   f.dilation, f.top, f.left, f.activation, lo, hi, post, res_ld, res_n),
             local_size=_local(traits, n_out, m, k, gsize), flexible=True)
