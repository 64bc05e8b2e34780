"""org.clnn.openvx POOLING and ROI_POOLING on OpenCL (openvx_pool.cl.mako): every data type;
fixed point bit for bit the reference's (hal/operations/openvx_pool.py)."""

from __future__ import annotations

from clnn.kernels._openvx import i64, rescale_args, vx_code
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import i32, numel
from hal.operations._openvx_ext import position
from hal.operations._openvx_fixed import POOL_MAX
from hal.operations.openvx_pool import POOLING, ROI_POOLING, pool_params


def support(ctx):
    return None  # every data type and parameter of the signatures runs


def plan_pool(ctx, b):
    x, y = ctx.inputs[0], ctx.outputs[0]
    p = pool_params(ctx)
    is_max = p["pool_type"] == POOL_MAX
    count = 1 if is_max else p["size"][0] * p["size"][1]
    sn, den = rescale_args(position(x), position(y), count)
    dims = [x.shape[1], x.shape[2], x.shape[3], y.shape[2], y.shape[3], *p["size"],
            *p["stride"], *p["pad"]]
    b.launch("openvx_pool", "pooling", {"dt": vx_code(y), "pool": "max" if is_max else "avg"},
             (numel(y.shape),), [In(0), Out(0), *map(i32, dims), i32(sn), i64(den)])


def plan_roi(ctx, b):
    x, r, y = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    sn, den = rescale_args(position(x), position(y))
    dims = [r.shape[1], x.shape[1], x.shape[2], x.shape[3], y.shape[2], y.shape[3],
            position(r), sn]
    b.launch("openvx_pool", "roi_pooling", {"dt": vx_code(y)}, (numel(y.shape),),
             [In(0), In(1), Out(0), *map(i32, dims), i64(den)])


register_kernel(POOLING, family="openvx_pool", support=support, plan=plan_pool)
register_kernel(ROI_POOLING, family="openvx_pool", support=support, plan=plan_roi)
