"""DEPTHWISE_CONV_2D on OpenCL (depthwise_conv2d.cl.mako). A GEMM does not pay here: each
output channel has only fh * fw products per pixel.

NHWC with depth multiplier 1 (the common case) runs ``depthwise_tile``: one work-item
computes one vector of channels for up to 8 neighbouring output pixels of a row, reusing each
loaded input vector across the filter taps that read it (far faster on PoCL than one
work-item per output element: benchmarks/op_kernels.py), or its row sweep
``depthwise_sweep``: one work-item per channel vector and output row, the tile in a loop along
the row, or ``depthwise_slide``: one work-item per channel vector and output row, one output
pixel a step with the filter held in registers and each input vector loaded once per output
row (the CPU default for strided, 3x3 and, on 16-float vectors, 5x5 filters; the sweep for
the other filters that unroll), or ``depthwise_slide_rows``: the sliding window over bands of
output rows, each input vector loaded once for the band (the CPU default where the registers
hold the band's accumulators: 3x3 filters), or ``depthwise_pairs``: two pixels of an
8-channel layer a 16-float vector (the CPU default there on 16-float vectors), or
``depthwise_flat``: a row of 8 m channels (m odd) as one flat array of 16-float vectors (the
CPU default for 8-channel 3x3 layers), or
``depthwise_row``: the sweep with the row's geometry
compiled in, loading only the input columns inside the row (a tuner candidate, and the CPU
default for rows of at most 8 pixels of 5x5 filters at stride 1; the tuner picks per layer,
clnn/kernels/_depthwise_variants.py). Other layouts and
multipliers run the direct ``depthwise`` kernel, one work-item per output element. Bias, fused
activation and the reference requantization (per-tensor or per-channel multipliers) are fused
in all. FLOAT32, FLOAT16 (stored half), QUANT8_ASYMM, QUANT8_ASYMM_SIGNED; NCHW through
strides; dilation.
"""

from __future__ import annotations

from clnn.kernels import _defaults, _depthwise_variants, _gemm
from clnn.kernels._tiles import tile_width
from clnn.kernels.conv2d import fused_pad, input_strides, layout_strides, support_conv
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import CLAMPS, EPILOGUE_FUNCTIONS, act_args, code, f32, i32
from hal.operations import depthwise_conv2d as hal_dw
from hal.operations.conv2d import depthwise_upward, nhwc_shape, resolve_padding


def tiled(ctx, p=None) -> bool:
    """Whether the plan runs one of the tiled kernels (``depthwise_tile``, ``_sweep``, ``_slide``,
    ``_row``: NHWC, depth multiplier 1, the span fits)."""
    p = p or hal_dw.depthwise_params(ctx)
    inp, fi = ctx.inputs[0], ctx.inputs[1]
    if p.nchw or p.extra[0] != 1 or inp.rank != 4 or fi.rank != 4:
        return False
    _, h, w, _ = inp.shape
    _, fh, fw, _ = fi.shape
    _, (_, ow) = resolve_padding(p, h, w, fh, fw)
    return tile_width(ow, fw, p.stride_w, p.dil_w) is not None


def tile_signature(ctx, f, p) -> dict | None:
    """The tuning signature of a layer that runs a tiled kernel (``f``: the builder or the
    fused node, for a fused PAD), else None."""
    inp, fi = ctx.inputs[0], ctx.inputs[1]
    n, h, w, _ = nhwc_shape(inp.shape, p.nchw)
    _, fh, fw, o = fi.shape
    (top, _, left, _), (oh, ow) = resolve_padding(p, h, w, fh, fw)
    top, left, h, w = fused_pad(f, top, left, h, w)
    if p.nchw or p.extra[0] != 1 or tile_width(ow, fw, p.stride_w, p.dil_w) is None:
        return None
    return _depthwise_variants.signature(dt=code(inp), n=n, h=h, w=w, o=o, oh=oh, ow=ow, fh=fh,
                                         fw=fw, sh=p.stride_h, sw=p.stride_w, dh=p.dil_h,
                                         dw=p.dil_w, quant=quant_keys(ctx, o))


def quant_keys(ctx, o: int) -> dict | None:
    """A quantized layer's source-changing quantization (_depthwise_variants.quant_keys: the
    filter's type, the requantization form), None for a float one."""
    inp, fi = ctx.inputs[0], ctx.inputs[1]
    if code(inp) not in ("u8", "i8"):
        return None
    rq = _gemm.requant_form(ctx, o, inp, fi, depthwise_upward(inp, o))
    return _depthwise_variants.quant_keys(fdt=code(fi), rq=rq)


def select(ctx, node, device, decided) -> list:
    """The select pass's choice of the tiled kernel's variant (clnn.passes.select)."""
    from clnn.passes.fusion import FusedNode

    s = tile_signature(ctx, node if node is not None else FusedNode(-1),
                       hal_dw.depthwise_params(ctx))
    if s is None:
        return []
    flop = 2.0 * s["n"] * s["oh"] * s["ow"] * s["c"] * s["fh"] * s["fw"]
    return [_depthwise_variants.select_tile(device, _depthwise_variants.FAMILY, s, flop=flop)]


def plan(ctx, b):
    p = hal_dw.depthwise_params(ctx)
    inp, fi, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    n, h, w, _ = nhwc_shape(inp.shape, p.nchw)
    _, fh, fw, o = fi.shape
    (top, _, left, _), (oh, ow) = resolve_padding(p, h, w, fh, fw)
    top, left, h, w = fused_pad(b, top, left, h, w)
    dt = code(inp)
    quant = dt in ("u8", "i8")
    lo, hi = act_args(ctx, p.idx["fused activation"], out)
    fused = b.activation  # an activation fused in (clnn/fusion/)
    if fused is not None:
        lo, hi = (f32(v) for v in fused.clamp)
    requant = _gemm.requant_buffers(b, ctx, o, inp, fi, depthwise_upward(inp, o)) \
        if quant else []
    tx = tile_width(ow, fw, p.stride_w, p.dil_w)
    if not p.nchw and p.extra[0] == 1 and tx is not None:
        # vector width, tile and work-group rows: tuned or the device heuristic
        v = _depthwise_variants.choose(b, dt=dt, n=n, h=h, w=w, o=o, oh=oh, ow=ow, fh=fh,
                                       fw=fw, sh=p.stride_h, sw=p.stride_w, dh=p.dil_h,
                                       dw=p.dil_w, flop=2.0 * n * oh * ow * o * fh * fw,
                                       quant=quant_keys(ctx, o))
        vw, tx = v["vw"], v["tx"]
        base = {"dt": dt, "fdt": code(fi), "vw": vw, "tx": tx, "fw": fw, "sw": p.stride_w,
                "dw": p.dil_w}
        if getattr(requant, "rq", None) and vw > 1:  # every shift a right one (_gemm.Requant)
            base["rq"] = _gemm.rq_key(b.device.limits, requant.rq, vw)
        base.update(_depthwise_variants.whole_stores(b.device.limits, dt, vw))
        name, key, gsize = _depthwise_variants.kernel(v, base, fh, ow, n * oh, o, w, left, n,
                                                      p.stride_h)
        fnc = [] if quant else [i32(_gemm.FLEX_FUNCTIONS.index(fused.fn if fused else None))]
        local = _depthwise_variants.local_for(v["rows"], gsize,
                                              b.device.limits.max_work_group_size)
        b.launch("depthwise_conv2d", name, key, gsize,
                 local_size=local, flexible=True, args=[In(0), In(1), In(2), Out(0), *requant,
                  *[i32(v) for v in (h, w, o, oh, ow, fh, p.stride_h, p.dil_h, top, left,
                                     _gemm.zero_of(inp), _gemm.zero_of(fi),
                                     _gemm.zero_of(out))], lo, hi, *fnc])
        return
    if _planes(p, dt, code(fi), fh, fw, b):
        vw, rows = _defaults.planes_variant(b.device.limits, p.stride_h, p.stride_w)
        b.launch("depthwise_conv2d", "depthwise_planes",
                 {"dt": dt, "fh": fh, "fw": fw, "sw": p.stride_w, "sh": p.stride_h, "vw": vw,
                  "rows": rows},
                 (-(-ow // vw), -(-oh // rows), n * o),
                 [In(0), In(1), In(2), Out(0), *[i32(v) for v in (h, w, o, oh, ow, top, left)],
                  lo, hi, i32(n * o * h * w)], flexible=True)
        return
    b.launch("depthwise_conv2d", "depthwise", {"dt": dt, "fdt": code(fi)}, (o, ow, n * oh),
             [In(0), In(1), In(2), Out(0), *requant,
              *[i32(v) for v in (h, w, o, p.extra[0], oh, fh, fw, p.stride_h, p.stride_w,
                                 p.dil_h, p.dil_w, top, left,
                                 *input_strides(inp.shape, p.nchw, h, w),
                                 *layout_strides(out.shape, p.nchw), _gemm.zero_of(inp),
                                 _gemm.zero_of(fi), _gemm.zero_of(out))], lo, hi])


#: NCHW float depthwise (depthwise_planes; its vector: the device class's planes_vw): windows
#: of up to this many taps unrolled
_PLANES_TAPS = 49


def _planes(p, dt, fdt, fh, fw, b) -> bool:
    """Whether an NCHW layer runs depthwise_planes: float of one type, multiplier 1, no
    dilation, stride 1 or 2 along the rows, a window of at most _PLANES_TAPS taps, no PAD
    fused in."""
    return bool(p.nchw) and dt in ("f32", "f16") and fdt == dt and p.extra[0] == 1 and \
        p.dil_h == 1 and p.dil_w == 1 and p.stride_w in (1, 2) and fh * fw <= _PLANES_TAPS \
        and b.input_pad is None


def epilogue_activations(ctx) -> tuple[str, ...]:
    """The clamps; LOGISTIC and HARD_SWISH only in ``depthwise_tile`` (no PRELU: no alpha
    argument)."""
    return (*CLAMPS, *EPILOGUE_FUNCTIONS) if tiled(ctx) else CLAMPS


register_kernel("DEPTHWISE_CONV_2D", family="depthwise_conv2d", support=support_conv,
                plan=plan, epilogue_activations=epilogue_activations, select=select)
