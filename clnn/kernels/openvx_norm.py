"""org.clnn.openvx SOFTMAX and LRN on OpenCL (openvx_norm.cl.mako): float arithmetic; fixed
point within 1 LSB of the reference (hal/operations/openvx_norm.py, float64)."""

from __future__ import annotations

from clnn.kernels._openvx import vx_code
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import f32, i32, numel
from hal.operations._openvx_ext import position
from hal.operations._openvx_fixed import ACROSS_MAPS
from hal.operations.openvx_norm import LRN, SOFTMAX, lrn_params, softmax_axis


def support(ctx):
    return None  # every data type and parameter of the signatures runs


def scales(ctx) -> list:
    """2^-qx (raw input -> real) and 2^qo (real -> raw output)."""
    return [f32(2.0 ** -position(ctx.inputs[0])), f32(2.0 ** position(ctx.outputs[0]))]


def plan_softmax(ctx, b):
    shape = ctx.inputs[0].shape
    axis = softmax_axis(ctx)
    inner = numel(shape[axis + 1:])
    rows = numel(shape) // max(shape[axis], 1)
    b.launch("openvx_norm", "softmax", {"dt": vx_code(ctx.outputs[0])}, (rows,),
             [In(0), Out(0), i32(shape[axis]), i32(max(inner, 1)), *scales(ctx)])


def plan_lrn(ctx, b):
    shape = ctx.inputs[0].shape
    p = lrn_params(ctx)
    across = p["norm_type"] == ACROSS_MAPS
    count = p["size"] if across else p["size"] ** 2
    b.launch("openvx_norm", "lrn", {"dt": vx_code(ctx.outputs[0]),
                                    "norm": "across" if across else "same"},
             (numel(shape),),
             [In(0), Out(0), *map(i32, shape[1:]), i32(p["size"] // 2),
              f32(p["alpha"] / count), f32(p["beta"]), f32(p["bias"]), *scales(ctx)])


register_kernel(SOFTMAX, family="openvx_norm", support=support, plan=plan_softmax)
register_kernel(LRN, family="openvx_norm", support=support, plan=plan_lrn)
