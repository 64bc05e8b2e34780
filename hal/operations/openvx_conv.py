"""org.clnn.openvx CONVOLUTION, DECONVOLUTION and FULLY_CONNECTED (docs/openvx-extension.md):
the OpenVX convolution layers with their overflow and rounding policies, ceiling output sizes,
dilation as inserted zeros, unshared biases and deconvolution's a_x / a_y. NCHW tensors, OIHW
weights; the arithmetic is in _openvx_conv_math.py. D: TENSOR_FLOAT32 or an org.clnn.openvx
fixed-point tensor type, the same for all data operands (positions may differ).

| input | CONVOLUTION                   | DECONVOLUTION              | FULLY_CONNECTED      |
|-------|-------------------------------|----------------------------|----------------------|
| 0     | D input (N, IFM, H, W)        | idem                       | D input (N, IFM)     |
| 1     | D weights (OFM, IFM, KY, KX)  | idem                       | D weights (OFM, IFM) |
| 2     | D biases (OFM) / (OFM, OH, OW), optional | D biases (OFM), optional | idem   |
| 3, 4  | INT32 padding x, y            | INT32 padding x, y         | INT32 overflow, rounding |
| 5, 6  | INT32 stride x, y             | INT32 upscale x, y         |                      |
| 7, 8  | INT32 dilation x, y (zeros)   | INT32 a_x, a_y             |                      |
| 9, 10 | INT32 overflow, rounding      | INT32 overflow, rounding   |                      |
| 11    | INT32 size rounding (floor / ceiling) |                    |                      |
"""

from __future__ import annotations

from hal.operations import _openvx_conv_math as m
from hal.operations._openvx_ext import (
    INT,
    check_at_least,
    check_data,
    check_enum,
    check_exact_sum,
    data,
    ints,
    op,
    out_args,
    signatures,
)
from hal.operations.context import OperationContext
from hal.operations.registry import register

CONV, DECONV, FC = op("CONVOLUTION"), op("DECONVOLUTION"), op("FULLY_CONNECTED")


def _known(*shapes) -> bool:
    return all(s and all(d > 0 for d in s) for s in shapes)


def _check_policies(ctx, overflow_i, rounding_i):
    check_enum(ctx, overflow_i, 2, "overflow policy")
    check_enum(ctx, rounding_i, 2, "rounding policy")


def _check_weights(ctx, x, w):
    if _known(x, w):
        ctx.require(w[1] == x[1], f"weights have {w[1]} input maps but the input has {x[1]}")


def _check_bias(ctx, shapes):
    if ctx.has_input(2) and _known(ctx.input_shape(2)):
        ctx.require(tuple(ctx.input_shape(2)) in shapes,
                    f"biases have shape {list(ctx.input_shape(2))}; they must be "
                    + " or ".join(str(list(s)) for s in shapes))


# ---------------------------------------------------------------------------- CONVOLUTION

def conv_params(ctx):
    py_, px_ = ints(ctx, (4, 3))
    sy, sx = ints(ctx, (6, 5))
    dy, dx = ints(ctx, (8, 7))
    overflow, rounding, size_rounding = ints(ctx, (9, 10, 11))
    return {"pad": (py_, px_), "stride": (sy, sx), "dilation": (dy, dx),
            "overflow": overflow, "rounding": rounding, "size_rounding": size_rounding}


def validate_conv(ctx: OperationContext):
    check_data(ctx, {0: (4,), 1: (4,), 2: (1, 3)})
    check_at_least(ctx, (3, 4, 7, 8), 0, "padding or dilation")
    check_at_least(ctx, (5, 6), 1, "stride")
    _check_policies(ctx, 9, 10)
    check_enum(ctx, 11, 2, "down-scale size rounding")
    x, w = ctx.input_shape(0), ctx.input_shape(1)
    _check_weights(ctx, x, w)
    if _known(x, w):
        prepare_conv(ctx)


def prepare_conv(ctx: OperationContext):
    p = conv_params(ctx)
    shape = m.conv_shape(ctx.input_shape(0), ctx.input_shape(1), p["pad"], p["stride"],
                         p["dilation"], p["size_rounding"])
    ctx.require(shape[2] >= 1 and shape[3] >= 1,
                f"the output would be {shape[2]} x {shape[3]}: the kernel with its dilation "
                "is larger than the padded input")
    _check_bias(ctx, [(shape[1],), shape[1:]])
    w = ctx.input_shape(1)
    check_exact_sum(ctx, w[1] * w[2] * w[3])
    return [shape]


def execute_conv(ctx: OperationContext):
    (x, qx), (w, qw), (b, qb) = data(ctx, 0), data(ctx, 1), data(ctx, 2)
    return [m.convolution(x, qx, w, qw, b, qb, **out_args(ctx), **conv_params(ctx),
                          out_dtype=ctx.outputs[0].dtype)]


# -------------------------------------------------------------------------- DECONVOLUTION

def deconv_params(ctx):
    py_, px_ = ints(ctx, (4, 3))
    sy, sx = ints(ctx, (6, 5))
    ay, ax = ints(ctx, (8, 7))
    overflow, rounding = ints(ctx, (9, 10))
    return {"pad": (py_, px_), "upscale": (sy, sx), "a": (ay, ax), "overflow": overflow,
            "rounding": rounding}


def validate_deconv(ctx: OperationContext):
    check_data(ctx, {0: (4,), 1: (4,), 2: (1,)})
    check_at_least(ctx, (3, 4, 7, 8), 0, "padding or a")
    check_at_least(ctx, (5, 6), 1, "upscale")
    _check_policies(ctx, 9, 10)
    for a_i, s_i, axis in ((7, 5, "x"), (8, 6, "y")):
        a, s = ctx.scalar(a_i), ctx.scalar(s_i)
        ctx.require(a < s, f"input {a_i} (a_{axis}) is {a}; it must be smaller than input "
                    f"{s_i} (upscale_{axis}, {s})")
    x, w = ctx.input_shape(0), ctx.input_shape(1)
    _check_weights(ctx, x, w)
    if _known(x, w):
        prepare_deconv(ctx)


def prepare_deconv(ctx: OperationContext):
    p = deconv_params(ctx)
    shape = m.deconv_shape(ctx.input_shape(0), ctx.input_shape(1), p["pad"], p["upscale"],
                           p["a"])
    ctx.require(shape[2] >= 1 and shape[3] >= 1,
                f"the output would be {shape[2]} x {shape[3]}: the padding removes it all")
    _check_bias(ctx, [(shape[1],)])
    w = ctx.input_shape(1)
    check_exact_sum(ctx, w[1] * w[2] * w[3])
    return [shape]


def execute_deconv(ctx: OperationContext):
    (x, qx), (w, qw), (b, qb) = data(ctx, 0), data(ctx, 1), data(ctx, 2)
    return [m.deconvolution(x, qx, w, qw, b, qb, **out_args(ctx), **deconv_params(ctx),
                            out_dtype=ctx.outputs[0].dtype)]


# ------------------------------------------------------------------------ FULLY_CONNECTED

def validate_fc(ctx: OperationContext):
    check_data(ctx, {0: (2,), 1: (2,), 2: (1,)})
    _check_policies(ctx, 3, 4)
    x, w = ctx.input_shape(0), ctx.input_shape(1)
    if _known(x, w):
        prepare_fc(ctx)


def prepare_fc(ctx: OperationContext):
    x, w = ctx.input_shape(0), ctx.input_shape(1)
    ctx.require(w[1] == x[1], f"weights take {w[1]} inputs but the input has {x[1]}")
    _check_bias(ctx, [(w[0],)])
    check_exact_sum(ctx, w[1])
    return [(x[0], w[0])]


def execute_fc(ctx: OperationContext):
    (x, qx), (w, qw), (b, qb) = data(ctx, 0), data(ctx, 1), data(ctx, 2)
    overflow, rounding = ints(ctx, (3, 4))
    return [m.fully_connected(x, qx, w, qw, b, qb, **out_args(ctx), overflow=overflow,
                              rounding=rounding, out_dtype=ctx.outputs[0].dtype)]


register(CONV, execute_conv, signatures=signatures(3, [INT] * 9, optional=[2]),
         validate=validate_conv, prepare=prepare_conv, constant_inputs=range(3, 12),
         family="openvx_conv")
register(DECONV, execute_deconv, signatures=signatures(3, [INT] * 8, optional=[2]),
         validate=validate_deconv, prepare=prepare_deconv, constant_inputs=range(3, 11),
         family="openvx_conv")
register(FC, execute_fc, signatures=signatures(3, [INT] * 2, optional=[2]),
         validate=validate_fc, prepare=prepare_fc, constant_inputs=range(3, 5),
         family="openvx_conv")
