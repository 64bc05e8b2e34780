"""AXIS_ALIGNED_BBOX_TRANSFORM on OpenCL (template bbox.cl.mako): float32, float16 and the
quantized form (TENSOR_QUANT16_ASYMM rois / image info / output, quant8 asymm or signed
deltas), computed in float32 in the reference's order of operations. Malformed rois and batch
indexes out of range fail the execution through a status word read back after the run."""

from __future__ import annotations

from clnn.kernels._detect import qargs, status_word
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import code, i32


def support(ctx):
    return None  # every signature of the operation


def plan(ctx, b):
    rois, deltas, info, y = ctx.inputs[0], ctx.inputs[1], ctx.inputs[3], ctx.outputs[0]
    n = int(rois.shape[0])
    classes = int(deltas.shape[1]) // 4 if len(deltas.shape) == 2 else 0
    status = status_word(b, {1: "a roi has x2 < x1 or y2 < y1",
                             2: f"a batch index is outside [0, {int(info.shape[0])})"})
    b.launch("bbox", "bbox", {"rd": code(rois), "dd": code(deltas), "id": code(info),
                              "od": code(y)}, (n * classes,),
             [*qargs(ctx, In(0)), *qargs(ctx, In(1)), In(2), *qargs(ctx, In(3)),
              *qargs(ctx, Out(0)), status, i32(classes), i32(info.shape[0])])


register_kernel("AXIS_ALIGNED_BBOX_TRANSFORM", family="bbox", support=support, plan=plan)
