"""CONV_2D on OpenCL, on the shared GEMM (templates/gemm.cl.mako, planned by _gemm.py).

C[m, o] = sum_k A[m, k] * B[k, o] with m = (batch, oy, ox), k = (ty, tx, channel): A is the
input itself for a 1x1, stride 1, unpadded NHWC convolution, read through each row's window
for other float32 NHWC ones where the device class takes it (the implicit GEMM,
:func:`taps_applies`), else its im2col packed by ``im2col_pack`` (padding taps read the input
zero point, so they add nothing); B is the filter,
transposed and packed once when the plan is made. Bias, the fused activation and (quantized)
the reference requantization per output channel run in the GEMM epilogue, which writes NHWC or
NCHW directly. :func:`plan_conv_gemm` is shared with GROUPED_CONV_2D (one GEMM batch per
group).

Types: FLOAT32, FLOAT16 (stored half, computed float), QUANT8_ASYMM and QUANT8_ASYMM_SIGNED
with per-tensor or per-channel filters (integer accumulation of (x - x_zp) * (w - w_zp)).
Every scalar parameter must be a constant. A constant filter is reordered when the plan is made;
a filter that is a model input is packed on the device (``pack_b``) at each execution.

Float NHWC convolutions with a constant filter take a direct kernel (conv2d.cl.mako) where the
GEMM wastes work: ``conv_cvec`` for fewer than CVEC_MAX_O output channels (vectors over the
input channels), ``conv_tile`` over at most DIRECT_MAX_C input channels with a window wider
than 1x1 (im2col would write fh * fw copies of a thin input; up to DIRECT_MAX_C_STRIDED when
strided, DIRECT_MAX_C_LARGE on large outputs: :func:`direct_max_c`). Every path honours the
fusions of clnn/fusion/: a PAD read through (``fused_pad``), an ADD, a RELU* / PRELU /
LOGISTIC / HARD_SWISH / SILU in the epilogue (:func:`epilogue`, :func:`post_fn`).
"""

from __future__ import annotations

import sys

import numpy as np

from clnn.kernels import _conv_quads, _dwpw, _gemm, _gemm_variants, _winograd
from clnn.kernels._tiles import tile_rows_group, tile_width
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    CLAMPS,
    EPILOGUE_FUNCTIONS,
    FLOAT_QUANT8,
    act_args,
    code,
    constant_inputs,
    f32,
    first,
    i32,
    types_in,
)
from hal.operations import conv2d as hal_conv2d
from hal.operations.common import activation_range_float
from hal.operations.conv2d import nhwc_shape, resolve_padding


def support_conv(ctx):
    return first(types_in(ctx, 0, FLOAT_QUANT8),
                 constant_inputs(ctx, range(3, ctx.num_inputs()), "scalar parameter"))


def layout_strides(shape, nchw: bool):
    """Element strides (batch, y, x, channel) of a rank-4 tensor in its layout."""
    if nchw:
        _, c, h, w = shape
        return (c * h * w, w, 1, h * w)
    _, h, w, c = shape
    return (h * w * c, w * c, c, 1)


def fused_pad(b, top: int, left: int, h: int, w: int):
    """(top, left, H, W) of the tensor the kernel reads: with a PAD fused into this
    convolution (clnn/fusion/) the unpadded one, with the PAD's rows and columns added to the
    padding (``b``: the builder, or the fused node)."""
    f = b.input_pad
    return f.adjust(top, left) if f is not None else (top, left, h, w)


def epilogue(ctx, b, p, out):
    """(lo, hi, res, alpha) of the epilogue: the clamp of the fused activation, or with an ADD
    fused into this convolution (clnn/fusion/) the ADD's activation and ``res`` the
    (buffer, element offset) of its other operand; with a fused RELU* its clamp; ``alpha`` the
    (buffer, element offset) of the per-channel alpha of a fused PRELU. None: no such
    fusion."""
    f, g = b.residual, b.activation
    alpha = b.tensor(g.alpha) if g is not None and g.alpha is not None else None
    if f is None and g is None or (f is not None and f.quant is not None):
        # (a quantized ADD: recomputed after the clamp, :func:`quant_residual`)
        return (*act_args(ctx, p.idx["fused activation"], out), None, alpha)
    # the convolution's and the ADD's own activations are NONE where an activation is fused;
    # an ADD after the convolution's own clamp has none (:func:`late_residual`)
    lo, hi = g.clamp if g is not None else activation_range_float(f.clamp or f.activation)
    return f32(lo), f32(hi), b.tensor(f.other) if f is not None else None, alpha


def late_residual(f) -> bool:
    """Whether the residual fused into this convolution (``f``: the builder or the fused node)
    is added after its own clamp (clamp then add, clnn/fusion/ AddFusion.clamp): the GEMM's
    epilogue does that (launch_gemm ``late``), not the direct and Winograd kernels."""
    return f.residual is not None and f.residual.clamp != 0


def pooled_residual(b, out) -> int | None:
    """The output width where the residual fused into this convolution is the 2x2 maxima of a
    MAX_POOL_2D's input (clnn/fusion/ AddFusion.pool_op; launch_gemm ``res_pool``), else
    None: the GEMM's epilogue reads those, not the direct and Winograd kernels."""
    f = b.residual
    return int(out.shape[2]) if f is not None and f.pool_op is not None else None


def gemm_residual(f) -> bool:
    """Whether only the GEMM's epilogue adds the residual fused into this convolution: one of
    fewer channels, one added after the clamp, or a pooled one."""
    r = f.residual
    return r is not None and bool(r.channels or r.clamp or r.pool_op is not None)


def quant_residual(b, out):
    """``qres`` of clnn.kernels._gemm.launch_gemm where a quantized ADD is fused into this
    convolution (clnn/fusion/ AddFusion.quant): its other operand and its integer
    parameters on the device; else None."""
    f = b.residual
    if f is None or f.quant is None:
        return None
    return list(b.tensor(f.other)), _gemm.device_buffer(b, f.quant)


def residual_columns(b) -> tuple[int, int] | None:
    """(row stride, channels) of a fused residual with fewer channels than the output (a
    channel PAD fused in, clnn/fusion/), else None."""
    f = b.residual
    return (f.channels, f.channels) if f is not None and f.channels else None


def post_fn(b) -> str | None:
    """LOGISTIC / HARD_SWISH of an activation fused into this convolution (clnn/fusion/)."""
    f = b.activation
    return f.fn if f is not None else None


def input_strides(shape, nchw: bool, h: int, w: int):
    """layout_strides of the input as read: ``shape`` with height and width ``h``, ``w``."""
    n, _, _, c = nhwc_shape(shape, nchw)
    return layout_strides((n, c, h, w) if nchw else (n, h, w, c), nchw)


def gemm_signature(ctx, f, p, groups: int = 1, device=None) -> dict:
    """The signature of the layer's GEMM (``f``: the builder or the fused node): A the input
    itself for a 1x1, stride 1, unpadded convolution ("rows"; NCHW: "cols", the input's
    [C, HW] plane read by columns, one GEMM batch per image), read through each row's window
    ("taps", the implicit GEMM: :func:`taps_applies` on ``device``), else im2col panels."""
    inp, fi = ctx.inputs[0], ctx.inputs[1]
    n, h, w, c = nhwc_shape(inp.shape, p.nchw)
    o, fh, fw, cg = fi.shape
    (top, _, left, _), (oh, ow) = resolve_padding(p, h, w, fh, fw)
    top, left, h, w = fused_pad(f, top, left, h, w)
    K = fh * fw * cg
    pointwise = _pointwise(p, fh, fw, top, left, h, w, oh, ow)
    if pointwise and groups == 1 and planes_gemm(ctx, f, p):
        return _gemm_variants.signature(dt=code(inp), amode="planes", M=o, N=oh * ow, K=K,
                                        batches=n)
    if pointwise and p.nchw and groups == 1:
        return _gemm_variants.signature(dt=code(inp), amode="cols", M=oh * ow, N=o // groups,
                                        K=K, batches=n)
    rows = pointwise and not p.nchw or whole_rows(ctx, p, (fh, fw, top, left, h, w, oh, ow),
                                                  groups, device)
    facc = float_filter(ctx, groups)
    taps = not rows and taps_type(code(inp), facc) and not p.nchw and \
        groups == 1 and taps_device(device)
    quant = None
    if code(inp) in _gemm_variants.QUANT:  # what of the quantization changes the source
        geo = _gemm.taps_args(h, w, c, oh, ow, fw, fh * fw, (p.stride_h, p.stride_w),
                              (p.dil_h, p.dil_w), (top, left)) if taps else None
        up = hal_conv2d.UPWARD if ctx.name == "CONV_2D" else False
        ip = _gemm.tuned_pairs(device, (rows or taps) and _gemm.int_pairs(device, facc, cg),
                               _filter_bt(fi, groups), _gemm.zero_of(fi), cg)
        quant = _gemm_variants.quant_keys(
            facc=facc, rq=_gemm.requant_form(ctx, o, inp, fi, up), taps=geo, ip=ip)
    return _gemm_variants.signature(dt=code(inp),
                                    amode="rows" if rows else "taps" if taps else "packed",
                                    M=n * oh * ow, N=o // groups, K=K, batches=groups,
                                    quant=quant)


def _filter_bt(fi, groups: int):
    """A constant filter as the GEMM's B, [groups, K, N]; None for a filter that is a model
    input."""
    if fi.value is None:
        return None
    return fi.value.reshape(groups, fi.shape[0] // groups, -1).transpose(0, 2, 1)


def _pointwise(p, fh, fw, top, left, h, w, oh, ow) -> bool:
    """A 1x1, stride 1, unpadded convolution: the GEMM's A is the input itself (NHWC: its
    rows, each group's channels at an offset of their own; NCHW: its [C, HW] planes)."""
    pads = (top, left) != (0, 0) or (oh, ow) != (h, w)
    return fh == fw == 1 and p.stride_h == p.stride_w == 1 and not pads


def whole_rows(ctx, p, geometry, groups: int, device) -> bool:
    """Whether a convolution's GEMM reads the input's rows as a FULLY_CONNECTED does (amode
    "rows", each row H x W x C): float32 NHWC of one group whose window is its whole input
    (``geometry``: fh, fw, top, left, h, w, oh, ow; no padding read, one output pixel), on a
    device class that takes it (clnn/kernels/_defaults.py ``gemm_whole_rows``)."""
    from clnn.kernels import _defaults

    fh, fw, top, left, h, w, oh, ow = geometry
    limits = getattr(device, "limits", None)
    return (code(ctx.inputs[0]) == "f32" and not p.nchw and groups == 1 and limits is not None
            and (oh, ow) == (1, 1) and (fh, fw) == (h, w) and (top, left) == (0, 0)
            and _defaults.defaults(_defaults.traits(limits)).gemm_whole_rows)


def planes_gemm(ctx, f, p) -> bool:
    """Whether a 1x1, stride 1, unpadded convolution of one group (``f``: the builder or the
    fused node) runs :func:`plan_conv_planes`: float NCHW with a constant filter and no
    residual of fewer channels."""
    inp, fi = ctx.inputs[0], ctx.inputs[1]
    return (p.nchw and code(inp) in ("f32", "f16") and fi.value is not None
            and residual_columns(f) is None)


def plan_conv_planes(ctx, b, p):
    """An NCHW 1x1 convolution as C = A.B per image: A the filter as stored ([O, C], packed
    into row panels once), B the input's [C, HW] plane (packed into column panels on the
    device, no transpose, no im2col), C the output's [O, HW] plane, the bias and PRELU alpha
    per row of C."""
    inp, fi, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    n, h, w, c = nhwc_shape(inp.shape, True)
    o = fi.shape[0]
    hw = h * w
    variant = _gemm_variants.choose(b, **gemm_signature(ctx, b, p))
    tile = tuple(variant["tile"])
    mr = tile[0]
    # A = W [O, C] packed as pack_weights packs a B of N = O columns: [ceil(O/mr), C, mr]
    packed = _gemm.pack_weights(fi.value.reshape(1, o, c).transpose(0, 2, 1), mr, False)
    apk = _gemm.device_buffer(b, packed.astype(np.float16 if code(inp) == "f16" else np.float32))
    # B: each image's plane packed into column panels (pack_b, by vectors along its rows);
    # read in place instead, B's rows HW apart cost the GEMM 1.1-1.15x the pack and the GEMM
    # together on PoCL (benchmarks/layout_families.py)
    bpk, b_grp = _gemm.launch_pack_b(b, dt=code(inp), y=In(0), N=hw, K=c, nr=tile[1] * tile[2],
                                     sk=hw, sn=1, batch=(n, 1), s_b=(c * hw, 0))
    lo, hi, res, alpha = epilogue(ctx, b, p, out)
    _gemm.launch_gemm(b, dt=code(inp), a=apk, bpk=bpk, c=Out(0), M=o, N=hw, K=c, tile=tile,
                      amode="packed", ldc=hw, bias=In(2), batch=(n, 1), b_b=(b_grp, 0),
                      c_b=(o * hw, 0), lo=lo, hi=hi, res=res, prelu=alpha, fn=post_fn(b),
                      wg=variant["wg"], chrow=True, late=late_residual(b))


def plan_conv_gemm(ctx, b, p, groups: int = 1):
    inp, fi, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    n, h, w, c = nhwc_shape(inp.shape, p.nchw)
    o, fh, fw, cg = fi.shape
    (top, _, left, _), (oh, ow) = resolve_padding(p, h, w, fh, fw)
    top, left, h, w = fused_pad(b, top, left, h, w)
    if (groups == 1 and _pointwise(p, fh, fw, top, left, h, w, oh, ow)
            and planes_gemm(ctx, b, p)):
        return plan_conv_planes(ctx, b, p)
    og = o // groups
    dt = code(inp)
    quant = dt in ("u8", "i8")
    K, M = fh * fw * cg, n * oh * ow
    pointwise = _pointwise(p, fh, fw, top, left, h, w, oh, ow)
    # NHWC: A is the input's rows of C channels, group g's K = cg of them from channel g * cg
    direct_a = pointwise and not p.nchw
    # NCHW: A of image z is the input's [C, HW] plane read by columns (A[q, c] at
    # c * HW + q), one GEMM batch per image: no im2col either
    cols_a = pointwise and p.nchw and groups == 1
    # the tile and work-group shape of this layer: the select and tune passes'
    variant = _gemm_variants.choose(b, **gemm_signature(ctx, b, p, groups, b.device))
    tile = tuple(variant["tile"])
    mr, nr = tile[0], tile[1] * tile[2]
    facc = pairs = False
    if fi.value is not None:  # reordered once, here
        bt = fi.value.reshape(groups, og, K).transpose(0, 2, 1)
        facc = quant and _gemm.float_exact(bt, _gemm.zero_of(fi))
        # int16 pairs (_gemm.int_pairs) where A is the input's rows or taps, bytes by quads
        # where the device runs them (_gemm.pair_form)
        pairs = _gemm.pair_form(b.device, (direct_a or not cols_a and taps_applies(
            b, dt, p, groups, facc)) and _gemm.int_pairs(b.device, facc, cg), bt, fi, cg, tile)
        bpk = _gemm.packed_weights(b, _gemm.pack_weights(
            bt, nr, quant, _gemm.zero_of(fi), facc, pairs, _gemm.unsigned_zero(dt, inp)))
        # (quads: each panel's K rows and a row of the zero point's shares)
        b_grp = _gemm.ceil_to(max(og, 1), nr) * (K + 4 * (pairs == "quads"))
    else:  # a filter that is a model input: packed on the device at each execution
        bpk, b_grp = _gemm.launch_pack_b(b, dt=code(fi), y=In(1), N=og, K=K, nr=nr, sk=1,
                                         sn=K, batch=(groups, 1), s_b=(og * K, 0),
                                         zb=_gemm.zero_of(fi))
    za = _gemm.zero_of(inp)
    if p.nchw:
        cmode, ldc, ohw, c_grp = "nchw", o * oh * ow, oh * ow, og * oh * ow
    else:  # rows of o channels, or of a concatenation's channels where the output is its slot
        # (clnn.passes.memory.Slot; a fused residual is read in rows of o: no slot then)
        ldc = (b.out_stride(0) if b.residual is None else None) or o
        cmode, ohw, c_grp = "nhwc", 1, og
    # the GEMM's batches: the groups, each with its own filter and output channels, or (cols)
    # the images, sharing the filter
    batch, sam, sak, b_b, ch_b = (groups, 1), c, 1, (b_grp, 0), (og, 0)
    if cols_a:
        M, a, amode, a_grp, c_grp = oh * ow, In(0), "rows", c * oh * ow, o * oh * ow
        batch, sam, sak, b_b, ch_b = (n, 1), 1, oh * ow, (0, 0), (0, 0)
    elif direct_a or whole_rows(ctx, p, (fh, fw, top, left, h, w, oh, ow), groups, b.device):
        a, amode, a_grp, sam = In(0), "rows", cg, sam if direct_a else K  # (whole: K a row)
    elif taps_applies(b, dt, p, groups, facc):  # the implicit GEMM: no im2col panel
        a, amode, a_grp = In(0), "taps", 0
    else:
        a_grp = _gemm.ceil_to(max(M, 1), mr) * K
        a = _gemm.scratch(b, groups * a_grp * inp.dtype.itemsize)
        _gemm.launch_im2col(b, dt=dt, x=In(0), dst=a, mr=mr, M=M, K=K, oh=oh, ow=ow, H=h,
                            W=w, cg=cg, fw=fw, stride=(p.stride_h, p.stride_w),
                            dil=(p.dil_h, p.dil_w), pad=(top, left),
                            strides_nyxc=input_strides(inp.shape, p.nchw, h, w), groups=groups,
                            padv=za)
        amode = "packed"
    lo, hi, res, alpha = epilogue(ctx, b, p, out)
    # TFLite's CONV_2D rounds as its GEMM; GROUPED_CONV_2D (this builder too) as the reference
    up = hal_conv2d.UPWARD if ctx.name == "CONV_2D" else False
    requant = _gemm.requant_buffers(b, ctx, o, inp, fi, up) if quant else ()
    _gemm.launch_gemm(b, dt=dt, a=a, bpk=bpk, c=Out(0), M=M, N=og, K=K, tile=tile,
                      amode=amode, sam=sam, sak=sak, cmode=cmode, ldc=ldc, ohw=ohw,
                      bias=In(2), requant=requant, batch=batch, a_b=(a_grp, 0), b_b=b_b,
                      c_b=(c_grp, 0), ch_b=ch_b, za=za, zo=_gemm.zero_of(out), lo=lo,
                      hi=hi, res=res, prelu=alpha, fn=post_fn(b), wg=variant["wg"],
                      res_cols=residual_columns(b), facc=facc, qres=quant_residual(b, out),
                      ip=pairs, late=late_residual(b), res_pool=pooled_residual(b, out),
                      taps=_gemm.taps_args(h, w, c, oh, ow, fw, fh * fw,
                                           (p.stride_h, p.stride_w), (p.dil_h, p.dil_w),
                                           (top, left)) if amode == "taps" else None)


def taps_applies(b, dt: str, p, groups: int, facc: bool = False) -> bool:
    """Whether a convolution that would pack an im2col panel runs the implicit GEMM on its
    input instead (amode "taps"): float32 NHWC, or quantized accumulating exactly in float
    (``facc``, :func:`float_filter`), one group, on a device class that takes it
    (clnn/kernels/_defaults.py gemm_taps)."""
    return taps_type(dt, facc) and not p.nchw and groups == 1 and taps_device(b.device)


def taps_type(dt: str, facc: bool) -> bool:
    """The input types the implicit GEMM reads: float32, and 8-bit quantized ones whose
    products sum exactly in float (``facc``)."""
    return dt == "f32" or (facc and dt in ("u8", "i8"))


def float_filter(ctx, groups: int = 1) -> bool:
    """Whether a quantized convolution's GEMM accumulates in float (the ``facc`` knob): a
    constant filter whose every partial sum stays exact in float32 (_gemm.float_exact)."""
    inp, fi = ctx.inputs[0], ctx.inputs[1]
    if code(inp) not in ("u8", "i8") or fi.value is None:
        return False
    o = fi.shape[0]
    bt = fi.value.reshape(groups, o // groups, -1).transpose(0, 2, 1)
    return _gemm.float_exact(bt, _gemm.zero_of(fi))


def taps_device(device) -> bool:
    """Whether the device's class runs the implicit GEMM (gemm_taps)."""
    from clnn.kernels import _defaults

    limits = getattr(device, "limits", None)
    return limits is not None and _defaults.defaults(_defaults.traits(limits)).gemm_taps

#: the direct kernel runs convolutions whose input has at most this many channels
DIRECT_MAX_C = 8
#: and strided ones (stride 2 or more) of up to this many: their im2col panel copies each
#: input pixel fh * fw / (sh * sw) times and the Winograd path does not apply, where the
#: direct kernel reads the input once (benchmarks/conv_paths.py: 1.7-2.1x faster at 16-32
#: channels from 104 x 104 pixels, even at 28 x 28; common_det's 208 x 208 x 24 -> 48 layer)
DIRECT_MAX_C_STRIDED = 32
#: and stride-1 ones of up to this many channels with at least DIRECT_LARGE_OUT output pixels,
#: whose Winograd transforms outgrow the caches (common_det's 208 x 208 x 12 -> 24: 1.7x;
#: squeezenet's 55 x 55 x 16 -> 64 Fire expands inside the model, writing their slot of the
#: Concat: 0.17 ms against 0.26 ms for wino_in + GEMM + wino_out, launch minima; a lone layer
#: with warm caches (benchmarks/conv_paths.py) puts the two about even there; from 20 x 20 down
#: the Winograd path is ahead on 64 output channels)
DIRECT_MAX_C_LARGE = 16
DIRECT_LARGE_OUT = 48 * 48
#: strided layers the implicit GEMM can run instead (:func:`taps_applies`: no im2col panel)
#: take the direct kernel up to this many channels: the implicit GEMM 0.42-0.86x its kernel
#: time from 16 channels (112 x 112 x 16 -> 32 ... 28 x 28 x 32 -> 64, common_det's 208 x 208
#: x 24 -> 48), even at 8 and 12 (benchmarks/results/issue41_implicit_gemm-20261129.json)
DIRECT_MAX_C_STRIDED_TAPS = 12


def direct_max_c(p, oh: int, ow: int, taps: bool = False) -> int:
    """The most input channels the direct kernel takes for a layer of parameters ``p`` and
    an output of oh x ow pixels (``taps``: the implicit GEMM can run it)."""
    if p.stride_h > 1 or p.stride_w > 1:
        return DIRECT_MAX_C_STRIDED_TAPS if taps else DIRECT_MAX_C_STRIDED
    return DIRECT_MAX_C_LARGE if oh * ow >= DIRECT_LARGE_OUT else DIRECT_MAX_C
#: below this many output channels (and 4 | input channels) conv_cvec vectorizes over the
#: input channels instead of the output channels
CVEC_MAX_O = 4


def direct_kind(ctx, f, p, device=None) -> str | None:
    """Which direct kernel a float NHWC convolution with a constant filter takes (``f``: the
    builder or the fused node; ``device``: the device, for whether the implicit GEMM runs
    the layer): "cvec" for fewer than CVEC_MAX_O output channels (4 | input channels),
    "tile" (``conv_tile``) over at most :func:`direct_max_c` input channels and a window
    wider than 1x1 (im2col would cost more than the GEMM); None when neither applies."""
    inp, fi = ctx.inputs[0], ctx.inputs[1]
    if p.nchw or fi.value is None:
        return None
    if code(inp) in ("u8", "i8"):  # conv_tile alone, summing exactly in float
        return "tile" if _quant_tile(ctx, f, p, device) else None
    if code(inp) not in ("f32", "f16") or code(fi) != code(inp):
        return None
    if gemm_residual(f):
        return None  # the GEMM epilogue adds those
    n, h, w, c = inp.shape
    o, fh, fw, _ = fi.shape
    (top, _, left, _), (oh, ow) = resolve_padding(p, h, w, fh, fw)
    cvec = o < CVEC_MAX_O and c % 4 == 0  # a GEMM would compute 8 columns for these
    if cvec and whole_rows(ctx, p, (fh, fw, *fused_pad(f, top, left, h, w), oh, ow), 1,
                           device):
        return None  # (the GEMM of a FULLY_CONNECTED: a tile the plan has)
    taps = code(inp) == "f32" and taps_device(device)
    if not cvec and (c > direct_max_c(p, oh, ow, taps) or
                     (fh, fw, p.stride_h, p.stride_w) == (1, 1, 1, 1)):
        return None
    if tile_width(ow, fw, p.stride_w, p.dil_w) is None:
        return None
    return "cvec" if cvec else "tile"


def cvec_width(device, dt: str, c: int) -> int:
    """The input-channel vector of ``conv_cvec`` on ``c`` channels (4 | c): the device
    class's cvec_overlap_vw for float32 where c reaches it (the last vector overlapping the
    one before it: :func:`cvec_filter`), else the widest of 16, 8, 4 dividing c."""
    from clnn.kernels import _defaults

    limits = getattr(device, "limits", None)
    vw = _defaults.defaults(_defaults.traits(limits)).cvec_overlap_vw if limits else 0
    if dt == "f32" and 0 < vw <= c:
        return vw
    return next(v for v in (16, 8, 4) if c % v == 0)


def cvec_filter(value: np.ndarray, cw: int) -> np.ndarray:
    """The [O, fh, fw, C] filter ``value`` as ``conv_cvec`` reads it with vectors of ``cw``
    channels where cw does not divide C: C rounded up to cw, the last vector holding the
    last cw channels (the input vector at C - cw) with the lanes of those the vector before
    it covers zero."""
    o, fh, fw, c = value.shape
    nv = -(-c // cw)
    out = np.zeros((o, fh, fw, nv * cw), value.dtype)
    out[..., :(nv - 1) * cw] = value[..., :(nv - 1) * cw]
    k = nv * cw - c  # the lanes of the last vector that the one before it covers
    out[..., (nv - 1) * cw + k:] = value[..., (nv - 1) * cw:]
    return out


def _quant_tile(ctx, f, p, device) -> bool:
    """Whether an 8-bit quantized convolution takes ``conv_tile`` (its quantized form): the
    window and channel rule of the float layers (:func:`direct_max_c`), nothing fused into its
    epilogue beyond its own activation, and a filter whose sums are exact in float
    (:func:`float_filter`); those layers' im2col GEMM ran at 20-35 GFLOP/s (the 3-channel
    first layers of the tinyml models: issue #36)."""
    inp, fi = ctx.inputs[0], ctx.inputs[1]
    n, h, w, c = inp.shape
    o, fh, fw, _ = fi.shape
    _, (oh, ow) = resolve_padding(p, h, w, fh, fw)
    fused = (f.residual, getattr(f, "activation", None), getattr(f, "input_layout", None))
    if any(x is not None for x in fused) or not float_filter(ctx):
        return False
    taps = taps_device(device)
    return c <= direct_max_c(p, oh, ow, taps) and (fh, fw, p.stride_h, p.stride_w) != \
        (1, 1, 1, 1) and \
        tile_width(ow, fw, p.stride_w, p.dil_w) is not None


def conv_tile_signature(ctx, f, p) -> dict:
    """The tuning signature of a ``conv_tile`` layer (clnn/kernels/_conv_variants.py)."""
    from clnn.kernels import _conv_variants

    inp, fi = ctx.inputs[0], ctx.inputs[1]
    n, h, w, c = inp.shape
    o, fh, fw, _ = fi.shape
    (top, _, left, _), (oh, ow) = resolve_padding(p, h, w, fh, fw)
    top, left, h, w = fused_pad(f, top, left, h, w)
    return _conv_variants.signature(dt=code(inp), n=n, h=h, w=w, c=c, o=o, oh=oh, ow=ow, fh=fh,
                                    fw=fw, sh=p.stride_h, sw=p.stride_w, dh=p.dil_h,
                                    dw=p.dil_w)


def plan_conv_direct(ctx, b, p) -> bool:
    """A direct kernel (:func:`direct_kind`) for a float NHWC convolution with a constant
    filter; False when none applies."""
    inp, fi, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    kind = direct_kind(ctx, b, p, b.device)
    if kind is None:
        return False
    n, h, w, c = inp.shape
    o, fh, fw, _ = fi.shape
    cvec = kind == "cvec"
    (top, _, left, _), (oh, ow) = resolve_padding(p, h, w, fh, fw)
    top, left, h, w = fused_pad(b, top, left, h, w)
    tx = tile_width(ow, fw, p.stride_w, p.dil_w)
    lo, hi, res, alpha = epilogue(ctx, b, p, out)
    if cvec:  # vectors over the input channels
        cw = cvec_width(b.device, code(inp), c)
        key = {"dt": code(inp), "cw": cw, "tx": tx, "fw": fw, "sw": p.stride_w,
               "dw": p.dil_w}
        if res is not None:
            key["res"] = True
        if alpha is not None:
            key["prelu"] = True
        if post_fn(b):
            key["fn"] = post_fn(b)
        gsize = (o, -(-ow // tx), n * oh)
        filt = (In(1),) if c % cw == 0 else \
            (_gemm.device_buffer(b, cvec_filter(fi.value, cw)), i32(0))
        b.launch("conv2d", "conv_cvec", key, gsize, local_size=tile_rows_group(gsize), args=[
                 In(0), *filt, In(2), Out(0), *(res or ()), *(alpha or ()),
                 *[i32(v) for v in (h, w, c, o, oh, ow, fh, p.stride_h, p.dil_h, top, left)],
                 lo, hi])
        return True
    from clnn.kernels import _conv_variants, _depthwise_variants

    # vector width, tile and work-group rows: the select and tune passes'
    v = _conv_variants.choose(b, **conv_tile_signature(ctx, b, p))
    quant = code(inp) in ("u8", "i8")
    wz = _gemm.zero_of(fi) if quant else 0  # (quantized: w - w_zero_point, exact in float)
    packed = _conv_variants.pack_filter(v, fi.value.astype(np.float32) - wz)
    key = _conv_variants.key(code(inp), v, fw, p.stride_w, p.dil_w, c)
    if quant:
        key["flex"] = False
        plan_quant_tile(ctx, b, p, v, key, packed, (top, left, h, w))
        return True
    if b.input_layout is not None:  # In(0) is the NCHW tensor a TRANSPOSE read (clnn/fusion/)
        key["xnchw"] = True
    if res is not None:
        key["res"] = True
    if post_fn(b):
        key["fn"] = post_fn(b)
    gsize = _conv_variants.global_size(v, n, o, oh, ow)
    local = _depthwise_variants.local_for(v["rows"], gsize,
                                          b.device.limits.max_work_group_size)
    # pixels o channels apart, or a concatenation's where the output is its slot (not with a
    # fused residual, read in rows of o)
    ldy = (b.out_stride(0) if res is None else None) or o
    b.launch("conv2d", "conv_tile", key, gsize, local_size=local, flexible=True, args=[
             In(0), _gemm.device_buffer(b, packed), In(2), Out(0), *(res or ()),
             *(alpha or (None, i32(0))),  # (flex: a null alpha where no PRELU is fused)
             *[i32(q) for q in (h, w, c, o, oh, ow, fh, p.stride_h, p.dil_h, top, left, ldy)],
             lo, hi, i32(_conv_variants.post(alpha is not None))])
    return True


def plan_quant_tile(ctx, b, p, v, key, packed, window):
    """The launch of a quantized ``conv_tile`` (:func:`_quant_tile`): the filter ``packed``
    as float, the reference requantization per output channel."""
    from clnn.kernels import _conv_variants, _depthwise_variants

    inp, fi, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    n, _, _, c = inp.shape
    o = fi.shape[0]
    top, left, h, w = window
    _, (oh, ow) = resolve_padding(p, inp.shape[1], inp.shape[2], fi.shape[1], fi.shape[2])
    lo, hi, _, _ = epilogue(ctx, b, p, out)
    requant = _gemm.requant_buffers(b, ctx, o, inp, fi, hal_conv2d.UPWARD)
    if requant.rq and v["vw"] > 1:  # (the right-shift form: vectors only)
        key["rq"] = _gemm.rq_key(b.device.limits, requant.rq, v["vw"])
    mult, shift = requant
    scalars = (h, w, c, o, oh, ow, fi.shape[1], p.stride_h, p.dil_h, top, left,
               b.out_stride(0) or o)
    wz = _gemm.zero_of(fi)
    centred = _conv_quads.filter_for(b.device, fi, wz, c, o, fi.shape[2], p.dil_w)
    if centred is not None:
        if requant.rq:  # (conv_quads: vectors of 16 lanes)
            key["rq"] = _gemm.rq_key(b.device.limits, requant.rq, _conv_quads.LANES)
        packed = _conv_quads.pack(centred, _gemm.unsigned_zero(code(inp), inp))
        _conv_quads.launch(b, key, (n, o, oh, ow), [
            In(0), _gemm.device_buffer(b, packed), In(2), Out(0), mult, shift,
            *[i32(q) for q in scalars], lo, hi, i32(_gemm.zero_of(inp)),
            i32(_gemm.zero_of(out))])
        return
    gsize = _conv_variants.global_size(v, n, o, oh, ow)
    local = _depthwise_variants.local_for(v["rows"], gsize,
                                          b.device.limits.max_work_group_size)
    b.launch("conv2d", "conv_tile", key, gsize, local_size=local, flexible=True, args=[
             In(0), _gemm.device_buffer(b, packed), In(2), Out(0), mult, shift,
             *[i32(q) for q in scalars],
             lo, hi, i32(_gemm.zero_of(inp)), i32(_gemm.zero_of(out))])


def plan_conv(ctx, b):
    if b.depthwise is not None:  # a depthwise convolution fused in (clnn/fusion/)
        _dwpw.plan_dwpw(ctx, b, epilogue, residual_columns, post_fn)
        return
    p = hal_conv2d.conv_params(ctx)
    if not plan_conv_direct(ctx, b, p) and \
            not _winograd.plan_winograd(ctx, b, p, sys.modules[__name__]):
        plan_conv_gemm(ctx, b, p)


def select(ctx, node, device, decided) -> list:
    """The select pass's choices of a CONV_2D (clnn.passes.select): the path's tuned
    families as :func:`plan_conv` takes them (a fused depthwise prologue: chosen by the
    fusion; ``conv_cvec``: none; ``conv_tile``; the Winograd path and, where it is taken, its
    GEMM; else the GEMM)."""
    from clnn.kernels import _conv_variants
    from clnn.passes.fusion import FusedNode

    f = node if node is not None else FusedNode(-1)
    if f.depthwise is not None:
        return []
    p = hal_conv2d.conv_params(ctx)
    kind = direct_kind(ctx, f, p, device)
    if kind is not None:
        return [] if kind == "cvec" else [_conv_variants.select(device,
                                                               conv_tile_signature(ctx, f, p))]
    s = _winograd.layer_signature(ctx, f, p, DIRECT_MAX_C)
    if s is not None:
        wc = _winograd.select(device, s)
        m = _winograd.path(decided.get(wc.key, wc).variant)
        if m in (2, 4):
            return [wc, _gemm_variants.select(device, _winograd.gemm_signature(s, m))]
        return [wc, _gemm_variants.select(device, gemm_signature(ctx, f, p, 1, device))]
    return [_gemm_variants.select(device, gemm_signature(ctx, f, p, 1, device))]


def epilogue_activations(ctx) -> tuple[str, ...]:
    return (*CLAMPS, "PRELU", *EPILOGUE_FUNCTIONS)


def epilogue_residual(ctx, channels: bool = False, clamped: bool = False,
                      pooled: bool = False) -> bool:
    """Every float convolution path adds a residual (clnn/fusion/ checks the rest); one of
    fewer channels (a channel PAD fused in) the NHWC GEMM path adds (plan_conv_direct leaves
    such a convolution to it); one after the convolution's clamp (``clamped``) the GEMM paths
    add, a pooled one (``pooled``) the NHWC GEMM, taken where the layer would run a GEMM
    anyway (not a direct or Winograd kernel)."""
    try:
        p = hal_conv2d.conv_params(ctx)
        if pooled and p.nchw:
            return False
        if clamped or pooled:
            return code(ctx.inputs[0]) in ("f32", "f16") and not channels and \
                direct_kind(ctx, _UNFUSED, p) is None and \
                not _winograd.applies(ctx, _UNFUSED, p, DIRECT_MAX_C)
        return not channels or not p.nchw
    except Exception:  # an unusual form: no fusion
        return False


class _Unfused:
    """A node without fusions (direct_kind and the Winograd rule asked of the layer alone)."""
    residual = activation = input_layout = input_pad = None


_UNFUSED = _Unfused()


def input_nchw(ctx, node) -> bool:
    """conv_tile reads an NCHW input (its ``xnchw`` form): the layers it runs can take a
    TRANSPOSE to NHWC fused away (clnn/fusion/)."""
    return code(ctx.inputs[0]) in ("f32", "f16") and \
        direct_kind(ctx, node, hal_conv2d.conv_params(ctx)) == "tile"


register_kernel("CONV_2D", family="conv2d", support=support_conv, plan=plan_conv,
                epilogue_activations=epilogue_activations, epilogue_residual=epilogue_residual,
                select=select, input_nchw=input_nchw)
