"""TRANSPOSE_CONV_2D on OpenCL: a GEMM then a gather (transpose_conv2d.cl.mako).

1. cols[m, oc * fh * fw + tap] = sum_c (x[m, c] - x_zp) * (w[oc, tap, c] - w_zp) for every
   input pixel m, on the shared GEMM (A = the NHWC input in place, or packed from NCHW; B =
   the filter as [c, o * fh * fw], packed once, or on the device when it is a model input;
   raw float / int32 accumulators).
2. col2im: each output element sums the taps that land on it, adds the bias and applies the
   fused activation or the reference requantization (per-tensor or per-channel).

Float NHWC layers whose stride equals the filter, with few output columns (O * fh * fw <=
:data:`DIRECT_MAX_COLUMNS`: the GEMM's tiles would be mostly padding) take the one-pass
``direct`` kernel instead, which can
also apply a LOGISTIC or HARD_SWISH fused in by clnn/fusion/ (a segmentation head's last
upsampling layer and its LOGISTIC: one kernel instead of GEMM + col2im + LOGISTIC;
benchmarks/op_kernels.py).
"""

from __future__ import annotations

from clnn.kernels import _gemm, _gemm_variants
from clnn.kernels.conv2d import layout_strides, support_conv
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import CLAMPS, EPILOGUE_FUNCTIONS, act_args, code, f32, i32
from hal.operations import transpose_conv2d as hal_tc
from hal.operations.conv2d import OT, depthwise_upward, nhwc_shape

#: the most output columns (O * fh * fw) a float NHWC layer may have to take the direct kernel
DIRECT_MAX_COLUMNS = 16


def direct(ctx) -> bool:
    """Whether the layer of ``ctx`` runs the one-pass ``direct`` kernel: float, NHWC, the
    stride equal to the filter, at most :data:`DIRECT_MAX_COLUMNS` output columns."""
    inp, fi = ctx.inputs[0], ctx.inputs[1]
    if code(inp) not in ("f32", "f16") or len(fi.shape) != 4:
        return False
    o, fh, fw, _ = fi.shape
    p = hal_tc.transpose_conv_params(ctx)
    return not p.nchw and (p.stride_h, p.stride_w) == (fh, fw) and \
        0 < o * fh * fw <= DIRECT_MAX_COLUMNS


def plan_direct(ctx, b, p, n, h, w, c, o, fh, fw, top, left, oh, ow):
    inp, fi, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    lo, hi = act_args(ctx, p.idx["fused activation"], out)
    fused = b.activation  # an activation fused in (clnn/fusion/)
    if fused is not None:
        lo, hi = (f32(v) for v in fused.clamp)
    fnc = _gemm.FLEX_FUNCTIONS.index(fused.fn if fused else None)
    b.launch("transpose_conv2d", "direct",
             {"dt": code(inp), "fdt": code(fi), "nc": o * fh * fw, "cv": 4 if c % 4 == 0 else 1},
             (w, h, n),
             [In(0), In(1), In(2), Out(0),
              *[i32(v) for v in (h, w, c, o, oh, ow, fh, fw, top, left)], lo, hi, i32(fnc)])


def epilogue_activations(ctx) -> tuple[str, ...]:
    """The clamps and LOGISTIC / HARD_SWISH where the direct kernel runs."""
    return (*CLAMPS, *EPILOGUE_FUNCTIONS) if direct(ctx) else ()


def plan(ctx, b):
    p = hal_tc.transpose_conv_params(ctx)
    inp, fi, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    n, h, w, c = nhwc_shape(inp.shape, p.nchw)
    o, fh, fw, _ = fi.shape
    top, left, oh, ow = hal_tc.output_geometry(ctx, p, h, w, fh, fw)
    if direct(ctx):
        plan_direct(ctx, b, p, n, h, w, c, o, fh, fw, top, left, oh, ow)
        return
    dt = code(inp)
    quant = dt in ("u8", "i8")
    M, N, K = n * h * w, o * fh * fw, c
    variant = _gemm_variants.device_default(b, N)
    tile = tuple(variant["tile"])
    mr, nr = tile[0], tile[1] * tile[2]
    if fi.value is not None:
        bt = fi.value.reshape(N, K).T[None]
        bpk = _gemm.device_buffer(b, _gemm.pack_weights(bt, nr, quant, _gemm.zero_of(fi)))
    else:
        bpk, _ = _gemm.launch_pack_b(b, dt=code(fi), y=In(1), N=N, K=K, nr=nr, sk=1, sn=K,
                                     zb=_gemm.zero_of(fi))
    za = _gemm.zero_of(inp)
    if p.nchw:
        a = _gemm.scratch(b, _gemm.ceil_to(max(M, 1), mr) * K * inp.dtype.itemsize)
        _gemm.launch_im2col(b, dt=dt, x=In(0), dst=a, mr=mr, M=M, K=K, oh=h, ow=w, H=h, W=w,
                            cg=c, fw=1, strides_nyxc=layout_strides(inp.shape, True),
                            padv=za)
        amode = "packed"
    else:
        a, amode = In(0), "rows"
    cols = _gemm.scratch(b, M * N * 4)
    _gemm.launch_gemm(b, dt=dt, odt="i32" if quant else "f32", a=a, bpk=bpk, c=cols, M=M,
                      N=N, K=K, tile=tile, amode=amode, sam=c, sak=1, ldc=N, epi="acc", za=za,
                      wg=variant["wg"])
    lo, hi = act_args(ctx, p.idx["fused activation"], out)
    requant = []
    if quant:  # the reference's rounding (hal.operations.transpose_conv2d.transpose_upward)
        size = n * oh * ow * o
        u8 = inp.type == OT.TENSOR_QUANT8_ASYMM
        up = True if u8 else depthwise_upward(inp, o)
        requant = [*_gemm.requant_buffers(b, ctx, o, inp, fi, up),
                   i32(size // 16 * 16 if u8 else 2**31 - 1)]
    b.launch("transpose_conv2d", "col2im", {"dt": dt}, (o, ow, n * oh),
             [cols, i32(0), In(2), Out(0), *requant,
              *[i32(v) for v in (h, w, o, oh, fh, fw, p.stride_h, p.stride_w, top, left,
                                 *layout_strides(out.shape, p.nchw), _gemm.zero_of(out))],
              lo, hi])


register_kernel("TRANSPOSE_CONV_2D", family="transpose_conv2d", support=support_conv, plan=plan,
                epilogue_activations=epilogue_activations)
