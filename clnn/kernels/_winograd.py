"""Winograd F(2x2, 3x3) and F(4x4, 3x3) for float32 NHWC CONV_2D layers with a constant 3x3
filter, stride and dilation 1 (Lavin and Gray, "Fast Algorithms for Convolutional Neural
Networks", 2016), and the choice per layer between them and the im2col GEMM.

Not a kernel family itself: CONV_2D's plan (conv2d.py) calls :func:`plan_winograd`. A layer
runs in three launches (templates/conv2d.cl.mako): ``wino_in`` turns each (m + 2)^2 input tile
d (tiles of m x m outputs, T of them) into V = B^T d B; the shared GEMM (templates/gemm.cl.mako,
one batch per element e of the (m + 2)^2) multiplies V_e [T, C] by U_e [C, O], the filter
transformed once here (U = G g G^T per output and input channel, in float64, then float32);
``wino_out`` turns each tile's products M back into Y = A^T M A and applies the epilogue of
every CONV_2D path (bias, a fused ADD, the activation clamp, PRELU, LOGISTIC / HARD_SWISH).

F(m, 3) does 9 m^2 / (m + 2)^2 times fewer multiplies in its GEMM than the direct convolution
(2.25x for m = 2, 4x for m = 4) and sums C products per output instead of 9 C, but writes V
and M through memory ((m + 2)^2 / m^2 times the input and output sizes). Accuracy, float32
against the reference's float64 (1 x 14 x 14 x 256 -> 256, |y| up to 76): the im2col GEMM
1.0e-4, F(2x2) 4.7e-5, F(4x4) 7.2e-4 (its larger transform coefficients): F(4x4, 3x3) is only
a choice where the model relaxes float32 to float16 precision. Which path a layer runs is
measured per layer shape by the tuner (clnn/tuning.py, family "winograd") against the im2col
GEMM (:func:`scratch_layer`), in ``clnn tune`` and tune "full"; without a tuning entry
:func:`heuristic` decides. The device's ``winograd`` option (clnn.options.DeviceOptions): 0
never, 2 or 4 that F(m, 3) wherever it applies, relaxed or not (tests, A/B measurements).
"""

from __future__ import annotations

import numpy as np

from clnn.kernels import _gemm, _gemm_variants
from clnn.kernels._tiles import tile_rows_group
from clnn.kernels.registry import In, Out
from clnn.kernels.support import code, f32, i32

#: the filter transforms G of F(2x2, 3x3) and F(4x4, 3x3) (their B^T and A^T are in
#: templates/conv2d.cl.mako, which applies them)
G = {2: np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]]),
     4: np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
                  [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]])}
#: the output tile sizes m, and 0 for the im2col GEMM
CHOICES = (0, 2, 4)


def transform_filter(w: np.ndarray, m: int) -> np.ndarray:
    """U [(m + 2)^2, C, O] float32 of an [O, 3, 3, C] filter: U_e[c, o] = (G g G^T)[e] of the
    3x3 filter g of output o and input channel c."""
    g = G[m]
    u = np.einsum("ik,okjc,lj->ilco", g, w.astype(np.float64), g)
    a = m + 2
    return np.ascontiguousarray(u.reshape(a * a, w.shape[3], w.shape[0]).astype(np.float32))


def vector_width(n: int, traits) -> int:
    """Channels per work-item of the transforms: the widest vector of at most 8 floats (4 on
    a GPU; the CPU's native width where narrower) dividing ``n``: F(4x4, 3x3) holds 36
    vectors of them."""
    cap = min(8, traits.vec) if traits.cpu else 4
    return next(v for v in (8, 4, 2, 1) if v <= cap and n % v == 0)


def tiles(n: int, oh: int, ow: int, m: int) -> tuple[int, int, int]:
    """(tile rows, tile columns, tiles in all) of an output in m x m tiles."""
    th, tw = -(-oh // m), -(-ow // m)
    return th, tw, n * th * tw


def heuristic(traits, s: dict) -> int:
    """The path without a tuning entry, the same on every device (Winograd is the usual choice
    of GPU libraries too): F(2x2, 3x3) for outputs of at least 4 x 4 (of a smaller one most
    of a tile's outputs are waste), F(4x4, 3x3) from 8 x 8 where the model allows relaxed
    float32; in NCHW (scalar transforms) only from 64 input and output channels. The rule
    the kernel time of the whole layer against the im2col GEMM in its heuristic tile backs
    (benchmarks/op_kernels.py, ``clnn tune`` over 3x3 layers of 4 to 224 pixels square):
    either Winograd path well ahead from 8 x 8 outputs, F(2x2) about even at 4 x 4, F(4x4)
    behind there; in NCHW behind on narrow layers."""
    if s["oh"] < 4 or s["ow"] < 4 or (s.get("nchw") and min(s["c"], s["o"]) < 64):
        return 0
    return 4 if s.get("relaxed") and s["oh"] >= 8 and s["ow"] >= 8 else 2


def select(device, s: dict, op: int = -1):
    """The select pass's path of one layer (``s``: its signature; a clnn.tuning.Choice of
    ``{"m": m}``): 0 (the im2col GEMM) or the m of F(m x m, 3 x 3), forced (the device's
    ``winograd`` option, clnn.options.DeviceOptions) or the heuristic, which the tune pass may
    replace (cached, or measured in clnn tune and tune "full")."""
    from clnn import tuning
    from clnn.options import options_of

    forced = options_of(device).winograd
    if forced is not None:
        return tuning.fixed_choice("winograd", s, {"m": forced}, "the winograd option", op)
    if getattr(device, "limits", None) is None or not hasattr(device, "platform"):
        return tuning.fixed_choice("winograd", s, {"m": 0}, "no tuning on this device", op)
    return tuning.default_choice(FAMILY, _gemm_variants.traits(device.limits), s, op)


def path(v) -> int:
    """The m of a winograd variant (0: the im2col GEMM)."""
    return int(v.get("m", 0)) if isinstance(v, dict) else 0


def choose(b, s: dict) -> int:
    """The path of one layer planned by ``b``: the select and tune passes' (:func:`select`,
    clnn.tuning.chosen)."""
    from clnn import tuning

    return path(tuning.chosen(b, select(b.device, s, getattr(b, "op_index", -1))))


def gemm_signature(s: dict, m: int) -> dict:
    """The signature of the batched GEMM of F(m x m, 3 x 3) over a layer of signature ``s``."""
    a = m + 2
    return _gemm_variants.signature(dt="f32", amode="rows", M=tiles(s["n"], s["oh"], s["ow"],
                                                                    m)[2],
                                    N=s["o"], K=s["c"], batches=a * a)


def layer_signature(ctx, f, p, direct_max_c: int) -> dict | None:
    """The signature of a layer the Winograd path applies to (``f``: its fused node or
    builder, for the fused PAD and ADD), else None."""
    from hal.operations.conv2d import nhwc_shape, resolve_padding

    if not applies(ctx, f, p, direct_max_c):
        return None
    inp, fi = ctx.inputs[0], ctx.inputs[1]
    n, h, w, c = nhwc_shape(inp.shape, p.nchw)
    (top, _, left, _), (oh, ow) = resolve_padding(p, h, w, 3, 3)
    f_pad = f.input_pad
    top, left, h, w = f_pad.adjust(top, left) if f_pad is not None else (top, left, h, w)
    return signature(n, h, w, c, fi.shape[0], oh, ow, top, left, ctx.relaxed, p.nchw)


def _scratch_bytes(s: dict) -> int:
    n, c, o = s["n"], s["c"], s["o"]
    t = tiles(n, s["oh"], s["ow"], 2)[2]
    return 4 * (n * s["h"] * s["w"] * c + 16 * t * (c + o) + n * s["oh"] * s["ow"] * 9 * c)


def signature(n, h, w, c, o, oh, ow, top, left, relaxed: bool = False,
              nchw: bool = False) -> dict:
    """A layer's tuning signature (``relaxed``: the model allows float32 computed at float16
    precision, which admits F(4x4, 3x3); ``nchw``: the layout of its input and output)."""
    return {"dt": "f32", "n": n, "h": h, "w": w, "c": c, "o": o, "oh": oh, "ow": ow,
            "pt": top, "pl": left, "relaxed": bool(relaxed), "nchw": bool(nchw)}


def applies(ctx, b, p, direct_max_c: int) -> bool:
    """A float32 CONV_2D with a constant 3x3 filter, stride and dilation 1 and more input
    channels than the direct kernel takes (``direct_max_c``; a residual of fewer channels,
    one added after the convolution's clamp or a pooled one is the GEMM's)."""
    inp, fi = ctx.inputs[0], ctx.inputs[1]
    if fi.value is None or code(inp) != "f32" or code(fi) != "f32":
        return False
    r = b.residual  # (the GEMM's: fewer channels, added after the clamp, pooled)
    if r is not None and (r.channels or r.clamp or r.pool_op is not None):
        return False
    o, fh, fw, c = fi.shape
    return (fh, fw, p.stride_h, p.stride_w, p.dil_h, p.dil_w) == (3, 3, 1, 1, 1, 1) and \
        c > direct_max_c and len(inp.shape) == 4


def plan_winograd(ctx, b, p, conv) -> bool:
    """Plan the layer as F(m x m, 3 x 3) where it applies and :func:`choose` says; False to
    leave it to the im2col GEMM. ``conv``: the conv2d module (its epilogue, post_fn, fused_pad
    and DIRECT_MAX_C; passed in, not imported: conv2d imports this module)."""
    from hal.operations.conv2d import nhwc_shape, resolve_padding

    s = layer_signature(ctx, b, p, conv.DIRECT_MAX_C)
    if s is None:
        return False
    inp, fi, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    n, h, w, c = nhwc_shape(inp.shape, p.nchw)
    o = fi.shape[0]
    (top, _, left, _), (oh, ow) = resolve_padding(p, h, w, 3, 3)
    top, left, h, w = conv.fused_pad(b, top, left, h, w)
    m = choose(b, s)
    if m not in (2, 4):
        return False
    a = m + 2
    t = tiles(n, oh, ow, m)[2]
    traits = _gemm_variants.traits(b.device.limits)
    from clnn import tuning

    gv = tuning.chosen(b, _gemm_variants.select(b.device, gemm_signature(s, m), b.op_index))
    tile = tuple(gv["tile"])
    nr = tile[1] * tile[2]
    bpk = _gemm.device_buffer(b, _gemm.pack_weights(transform_filter(fi.value, m), nr, False))
    vbuf = _gemm.scratch(b, 4 * a * a * t * c)
    mbuf = _gemm.scratch(b, 4 * a * a * t * o)
    lo, hi, res, alpha = conv.epilogue(ctx, b, p, out)
    shape = {"n": n, "h": h, "w": w, "c": c, "o": o, "oh": oh, "ow": ow, "pt": top, "pl": left,
             "nchw": p.nchw}
    launch_in(b, traits, m, shape, In(0), vbuf)
    b_grp = _gemm.ceil_to(o, nr) * c
    _gemm.launch_gemm(b, dt="f32", a=vbuf, bpk=bpk, c=mbuf, M=t, N=o, K=c, tile=tile,
                      amode="rows", sam=c, sak=1, ldc=o, batch=(a * a, 1), a_b=(t * c, 0),
                      b_b=(b_grp, 0), c_b=(t * o, 0), wg=gv["wg"])
    # rows of o channels, or of a concatenation's where the output is its slot (not with a
    # fused residual, read in rows of o)
    ldy = b.out_stride(0) if res is None and not p.nchw else None
    launch_out(b, traits, m, shape, mbuf, In(2), Out(0), res, alpha, conv.post_fn(b), lo, hi,
               ldy)
    return True


def launch_in(b, traits, m: int, s: dict, x, vbuf):
    """``wino_in`` of a layer of shape ``s`` (a signature's fields) on ``b`` (a LaunchBuilder
    or the tuner's recorder): ``x`` In(0) or a buffer, into ``vbuf``."""
    th, tw, t = tiles(s["n"], s["oh"], s["ow"], m)
    c = s["c"]
    cw = 1 if s["nchw"] else vector_width(c, traits)
    key = {"m": m, "vw": cw, **({"nchw": True} if s["nchw"] else {})}
    gsize = (c // cw, tw, s["n"] * th)
    b.launch("conv2d", "wino_in", key, gsize,
             [*_gemm.tensor_arg(x), vbuf, i32(0),
              *[i32(q) for q in (s["h"], s["w"], c, tw, th, s["pt"], s["pl"], t)]],
             local_size=tile_rows_group(gsize), flexible=True)


def launch_out(b, traits, m: int, s: dict, mbuf, bias, y, res, alpha, fn, lo, hi,
               ldy: int | None = None):
    """``wino_out`` of a layer of shape ``s``: ``bias``, ``y`` In / Out or buffers; ``res``,
    ``alpha`` (buffer, offset) pairs of a fused ADD / PRELU or None; ``fn`` a fused
    function; ``ldy``: elements between two pixels of ``y`` (NHWC; None: its channels)."""
    th, tw, t = tiles(s["n"], s["oh"], s["ow"], m)
    o = s["o"]
    ov = 1 if s["nchw"] else vector_width(o, traits)
    key = {"m": m, "vw": ov, **({"nchw": True} if s["nchw"] else {}),
           **({"res": True} if res is not None else {}),
           **({"prelu": True} if alpha is not None else {}), **({"fn": fn} if fn else {})}
    gsize = (o // ov, tw, s["n"] * th)
    b.launch("conv2d", "wino_out", key, gsize,
             [mbuf, i32(0), *_gemm.tensor_arg(bias), *_gemm.tensor_arg(y), *(res or ()),
              *(alpha or ()), *[i32(q) for q in (o, s["oh"], s["ow"], tw, th, t, ldy or o)],
              lo, hi],
             local_size=tile_rows_group(gsize), flexible=True)


def scratch_layer(device, tuner, v: dict, s: dict):
    """(kernels, release) of one layer on zeroed scratch buffers: F(m x m, 3 x 3) (``v["m"]``
    2 or 4) with its GEMM in the cached (else heuristic) variant, or (0) the im2col GEMM in
    the variant the GEMM path would run."""
    from clnn.kernels._dwpw_variants import _cached

    traits = _gemm_variants.traits(device.limits)
    n, h, w, c, o, oh, ow = (s[k] for k in ("n", "h", "w", "c", "o", "oh", "ow"))
    nchw = bool(s.get("nchw"))
    m = v["m"]
    if m == 0:
        mm, kk = n * oh * ow, 9 * c
        gsig = {"dt": "f32", "amode": "packed", "M": mm, "N": o, "K": kk, "batches": 1}
        gv = _cached(tuner, "gemm", gsig, _gemm_variants.heuristic(traits, o, mm, kk, True))
        mr = gv["tile"][0]
        x, packed = _gemm_variants.zeroed(device, (n * h * w * c, _gemm.ceil_to(mm, mr) * kk))
        rec = _gemm_variants.scratch_builder(device, 2.0 * mm * o * kk)
        _gemm.launch_im2col(rec, dt="f32", x=x, dst=packed, mr=mr, M=mm, K=kk, oh=oh, ow=ow,
                            H=h, W=w, cg=c, fw=3, pad=(s["pt"], s["pl"]),
                            strides_nyxc=(h * w * c, w, 1, h * w) if nchw else
                            (h * w * c, w * c, c, 1))
        k2, r2 = _gemm_variants.scratch_gemm(device, gv, "f32", "packed", mm, o, kk, 1,
                                             a=packed, cmode="nchw" if nchw else "nhwc",
                                             ohw=oh * ow if nchw else 1)
        mine = _gemm_variants.releaser([x, packed])
        return rec.kernels() + k2, lambda: (r2(), mine())
    a = m + 2
    t = tiles(n, oh, ow, m)[2]
    gsig = {"dt": "f32", "amode": "rows", "M": t, "N": o, "K": c, "batches": a * a}
    gv = _cached(tuner, "gemm", gsig, _gemm_variants.heuristic(traits, o, t, c))
    x, vbuf, mbuf, bias, y = _gemm_variants.zeroed(device, (
        n * h * w * c, a * a * t * c, a * a * t * o, o, n * oh * ow * o))
    rec = _gemm_variants.scratch_builder(device, 2.0 * n * oh * ow * o * 9 * c)
    shape = dict(s, nchw=nchw)
    launch_in(rec, traits, m, shape, x, vbuf)
    k2, r2 = _gemm_variants.scratch_gemm(device, gv, "f32", "rows", t, o, c, a * a, a=vbuf,
                                         c=mbuf)
    launch_out(rec, traits, m, shape, mbuf, bias, y, None, None, None, f32(-np.inf),
               f32(np.inf))
    mine = _gemm_variants.releaser([x, vbuf, mbuf, bias, y])
    # in execution order: the input transform, the GEMM, the output transform
    ks = rec.kernels()
    return ks[:1] + k2 + ks[1:], lambda: (r2(), mine())


def _space(traits, s: dict, full: bool) -> list[dict]:
    """The default path first, then the others: F(4x4, 3x3)'s float32 error is ~7x the
    GEMM's (F(2x2)'s at most the GEMM's): not within the float32 tolerance, a candidate where
    the model relaxes float32 to float16 precision."""
    default = {"m": heuristic(traits, s)}
    allowed = CHOICES if s.get("relaxed") else (0, 2)
    return [default, *({"m": m} for m in allowed if m != default["m"])]


def _family():
    from clnn import tuning

    # measured by clnn tune and in "full" mode only: the transforms and the batched GEMM's
    # tiles compile for seconds on a cold PoCL cache
    return tuning.Family(
        "winograd", default=lambda t, s: {"m": heuristic(t, s)}, space=_space,
        scratch=scratch_layer,
        flop=lambda s: 2.0 * s["n"] * s["oh"] * s["ow"] * s["o"] * 9 * s["c"],
        scratch_bytes=_scratch_bytes, fast_measure=False)


#: the Winograd path's tuning declaration (clnn.tuning.Family)
FAMILY = _family()
