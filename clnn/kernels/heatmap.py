"""HEATMAP_MAX_KEYPOINT on OpenCL (template heatmap.cl.mako): float32, float16, quant8 asymm /
signed heatmaps with quant16 boxes and keypoints, NHWC and NCHW. One work-group per (box,
keypoint) finds the maximum by a local-memory reduction; its first work-item fits the
quadratic. A box with x2 < x1 or y2 < y1 fails the execution (status word read back)."""

from __future__ import annotations

from clnn.kernels._detect import group_size, qargs, status_word
from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, Unplannable, register_kernel
from clnn.kernels.support import code, i32
from hal.types import OperandType


def support(ctx):
    return None  # every signature of the operation


def plan(ctx, b):
    need_values(ctx, 2)
    x = ctx.inputs[0]
    nchw = bool(ctx.scalar(2))
    n, a, bb, cc = (int(v) for v in x.shape)
    s, k = (bb, a) if nchw else (a, cc)
    if s < 2:
        raise Unplannable("heatmaps smaller than 2x2")  # the reference reports it
    wg = group_size(b, s * s)
    tol = "1e-3" if x.type == OperandType.TENSOR_FLOAT16 else "1e-5"
    status = status_word(b, {1: "a box has x2 < x1 or y2 < y1"})
    b.launch("heatmap", "heatmap", {"hd": code(x), "bd": code(ctx.inputs[1]),
                                    "sd": code(ctx.outputs[0]), "kd": code(ctx.outputs[1]),
                                    "nchw": int(nchw), "wg": wg, "tol": tol},
             (n * k * wg,), [*qargs(ctx, In(0)), *qargs(ctx, In(1)), *qargs(ctx, Out(0)),
                             *qargs(ctx, Out(1)), status, i32(s), i32(k)], local_size=(wg,))


register_kernel("HEATMAP_MAX_KEYPOINT", family="heatmap", support=support, plan=plan,
                host_inputs=[2])
