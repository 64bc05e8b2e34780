"""org.clnn.openvx ACTIVATION on OpenCL (openvx_activation.cl.mako): the nine functions on
every data type. Fixed point RELU, ABS, SQUARE and BRELU are exact (bit for bit the
reference's); the others compute in float32, within 1 LSB of the reference (float64)."""

from __future__ import annotations

import numpy as np

from clnn.kernels._openvx import i64, rescale_args, vx_code
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import f32, i32, numel
from hal.operations._openvx_ext import position
from hal.operations._openvx_fixed import ACTIVATION_NAMES, SQUARE
from hal.operations.openvx_activation import ACTIVATION


def support(ctx):
    return None  # every data type and function of the signatures runs


def plan(ctx, b):
    x, y = ctx.inputs[0], ctx.outputs[0]
    fn = int(ctx.scalar(1))
    a, b_ = float(np.float32(ctx.scalar(2))), float(np.float32(ctx.scalar(3)))
    qx, qo = position(x), position(y)
    sn, den = rescale_args(2 * qx if fn == SQUARE else qx, qo)
    # BRELU's bound at the output position, rounded to nearest even as the reference rounds
    # min(a, max(0, x)); kept in a range that cannot overflow and still bounds the output
    bound = int(np.clip(np.rint(a * 2.0 ** qo), -(1 << 40), 1 << 40))
    b.launch("openvx_activation", "activation", {"dt": vx_code(y), "fn": ACTIVATION_NAMES[fn]},
             (numel(x.shape),),
             [In(0), Out(0), f32(a), f32(b_), f32(2.0 ** -qx), f32(2.0 ** qo), i32(sn),
              i64(den), i64(bound)])


register_kernel(ACTIVATION, family="openvx_activation", support=support, plan=plan)
