"""org.clnn.openvx CONVOLUTION, DECONVOLUTION, FULLY_CONNECTED on OpenCL
(openvx_conv.cl.mako): every data type (float32, 8/16-bit fixed point, unsigned 8-bit fixed
point) and policy; fixed point is exact 64-bit integer arithmetic, bit for bit the reference's
(hal/operations/openvx_conv.py)."""

from __future__ import annotations

from clnn.kernels._openvx import accumulate_args, policies, vx_code
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import i32, numel
from hal.operations.openvx_conv import CONV, DECONV, FC, conv_params, deconv_params


def accumulator(dt: str, terms: int) -> str:
    """The kernel's accumulator: 8-bit products are below 2^16 in magnitude, so int holds a
    sum of fewer than 2^15 of them exactly; otherwise long (float for float32)."""
    if dt == "f32":
        return "float"
    return "int" if dt in ("i8", "u8") and terms < (1 << 15) else "long"


def support(ctx):
    return None  # every data type, policy and shape of the signatures runs


def _bias(ctx) -> tuple[str, object]:
    if not ctx.has_input(2):
        return "", In(0)  # an unused pointer argument
    return ("shared" if ctx.inputs[2].rank == 1 else "unshared"), In(2)


def plan_conv(ctx, b):
    x, w, y = ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.outputs[0].shape
    p = conv_params(ctx)
    bias, b_arg = _bias(ctx)
    dt = vx_code(ctx.outputs[0])
    ob = next(k for k in (4, 2, 1) if w[0] % k == 0)
    params = {"dt": dt, "bias": bias, **policies(ctx, 9, 10), "ob": ob,
              "acc": accumulator(dt, w[1] * w[2] * w[3])}
    dims = [x[1], x[2], x[3], w[0], y[2], y[3], w[2], w[3], *p["stride"], *p["pad"],
            p["dilation"][0] + 1, p["dilation"][1] + 1]
    b.launch("openvx_conv", "convolution", params, (numel(y) // ob,),
             [In(0), In(1), b_arg, Out(0), *map(i32, dims), *accumulate_args(ctx)])


def plan_deconv(ctx, b):
    x, w, y = ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.outputs[0].shape
    p = deconv_params(ctx)
    bias, b_arg = _bias(ctx)
    dt = vx_code(ctx.outputs[0])
    ob = next(k for k in (4, 2, 1) if w[0] % k == 0)
    params = {"dt": dt, "bias": bias, **policies(ctx, 9, 10), "ob": ob,
              "acc": accumulator(dt, w[1] * w[2] * w[3])}
    in_pad = (w[2] - p["pad"][0] - 1, w[3] - p["pad"][1] - 1)
    dims = [x[1], x[2], x[3], w[0], y[2], y[3], w[2], w[3], *p["upscale"], *in_pad]
    b.launch("openvx_conv", "deconvolution", params, (numel(y) // ob,),
             [In(0), In(1), b_arg, Out(0), *map(i32, dims), *accumulate_args(ctx)])


def plan_fc(ctx, b):
    x, w = ctx.inputs[0].shape, ctx.inputs[1].shape
    bias, b_arg = _bias(ctx)
    params = {"dt": vx_code(ctx.outputs[0]), "bias": bias, **policies(ctx, 3, 4)}
    b.launch("openvx_conv", "fully_connected", params, (x[0] * w[0],),
             [In(0), In(1), b_arg, Out(0), i32(x[1]), i32(w[0]), *accumulate_args(ctx)])


register_kernel(CONV, family="openvx_conv", support=support, plan=plan_conv)
register_kernel(DECONV, family="openvx_conv", support=support, plan=plan_deconv)
register_kernel(FC, family="openvx_conv", support=support, plan=plan_fc)
