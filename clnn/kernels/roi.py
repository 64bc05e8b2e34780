"""ROI_ALIGN and ROI_POOLING on OpenCL (template roi.cl.mako): float32, float16 (coordinates
rounded to half after every operation, as the reference computes them in float16), quant8
asymm / signed with quant16 rois; NHWC and NCHW. ROI_ALIGN accumulates in double where the
device has cl_khr_fp64 (the reference accumulates in float64), else in float. Malformed rois
fail the execution through a status word read back after the run."""

from __future__ import annotations

import numpy as np

from clnn.kernels._detect import qargs, status_word
from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import code, f32, i32, numel
from hal.errors import GeneralFailure
from hal.operations.common import QUANT8_TENSORS


def support(ctx):
    return None  # every signature of the operations


def _has_fp64(device) -> bool:
    return device.limits.fp64


def plan(ctx, b):
    x, rois, y = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    align = ctx.name == "ROI_ALIGN"
    need_values(ctx, *range(3, 10 if align else 8))
    nchw = bool(ctx.scalar(9 if align else 7))
    n, a, bb, cc = (int(v) for v in x.shape)
    in_h, in_w, depth = (bb, cc, a) if nchw else (a, bb, cc)
    if 0 in (n, in_h, in_w, depth):
        raise GeneralFailure(f"{ctx.name}: the feature map {list(x.shape)} is empty; only "
                             "num_rois may be zero")
    oh, ow = int(ctx.scalar(3)), int(ctx.scalar(4))
    ft = "f16" if x.dtype == np.float16 else "f32"
    ftype = np.float16 if ft == "f16" else np.float32
    with np.errstate(divide="ignore"):  # 1.0f / stride in float32, stored in the coord type
        h_scale = ftype(np.float32(1) / np.float32(ctx.scalar(5)))
        w_scale = ftype(np.float32(1) / np.float32(ctx.scalar(6)))
    status = status_word(b, {1: f"a roi is malformed or outside the feature map "
                                f"[{n}, {in_h}, {in_w}] (or its batch index out of range)"})
    params = {"dt": code(x), "rd": code(rois), "ft": ft, "nchw": int(nchw)}
    args = [*qargs(ctx, In(0)), *qargs(ctx, In(1)), In(2), *qargs(ctx, Out(0)), status,
            i32(n), i32(in_h), i32(in_w), i32(depth), i32(oh), i32(ow), f32(h_scale),
            f32(w_scale)]
    if not align:
        b.launch("roi", "roi_pooling", params, (numel(y.shape),), args)
        return
    acc = "double" if _has_fp64(b.device) else "float"
    requant = 1.0
    if x.type in QUANT8_TENSORS:
        requant = np.float64(x.scale) / np.float64(y.scale)
    b.launch("roi", "roi_align", {**params, "acc": acc}, (numel(y.shape),),
             [*args, i32(ctx.scalar(7)), i32(ctx.scalar(8)),
              np.float64(requant) if acc == "double" else np.float32(requant)])


register_kernel("ROI_ALIGN", family="roi", support=support, plan=plan,
                host_inputs=range(3, 10))
register_kernel("ROI_POOLING", family="roi", support=support, plan=plan,
                host_inputs=range(3, 8))
