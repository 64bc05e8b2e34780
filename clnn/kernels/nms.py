"""BOX_WITH_NMS_LIMIT on OpenCL (template nms.cl.mako): float32, float16, quant8 asymm /
signed scores with quant16 boxes; hard, linear and gaussian NMS; exactly the reference's
selections and order, ties included.

The rois are split into runs of equal consecutive batch indexes on the device (a scan); one
work-group per (run, class) runs the reference's greedy rounds: a parallel argmax, the
rescoring of every remaining candidate in parallel, then the reference's swap-to-the-end
removal (a short sequential sweep that decides later ties). The two sorts of the reference
(by score for the max_detections cut, then by class) are computed in parallel as ranks. The
number of output rows is known only after the run: the outputs are planned at their largest
(max_shapes) and cut to the count read back with the status word."""

from __future__ import annotations

from clnn.kernels import _detect
from clnn.kernels._detect import group_size, qargs
from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import code, f32, i32
from hal.errors import GeneralFailure


def support(ctx):
    return None  # every signature of the operation


def max_shapes(ctx):
    n, classes = (int(v) for v in ctx.input_shape(0)) if len(ctx.input_shape(0)) == 2 \
        else (0, 0)
    rows = n * max(classes - 1, 0)
    return [(rows,), (rows, 4), (rows,), (rows,)]


def plan(ctx, b):
    need_values(ctx, *range(3, 9))
    scores = ctx.inputs[0]
    n, classes = (int(v) for v in scores.shape)
    max_det = int(ctx.scalar(4))
    kind = int(ctx.scalar(5))
    outs = list(b.operation.outputs)
    name = f"{ctx.name} (operation {b.op_index})"

    def finish(words):
        if words[0]:
            raise GeneralFailure(f"{name}: a box has x2 < x1 or y2 < y1")
        rows = int(words[1])
        return {outs[0]: (rows,), outs[1]: (rows, 4), outs[2]: (rows,), outs[3]: (rows,)}

    out = b.readback(2, finish)
    wg = group_size(b, max(n, 2), cap=128)
    slots = n * classes
    sc, sel, drop, keep, aux = (b.scratch(slots * 4) for _ in range(5))
    runid, first, kcount = b.scratch(n * 4), b.scratch((n + 1) * 4), b.scratch(slots * 4)
    meta, runoff = b.scratch(4), b.scratch(n * 4)
    params = {"sd": code(scores), "bd": code(ctx.inputs[1]), "kind": kind, "wg": wg}
    b.launch("nms", "nms_runs", params, (wg,), [In(2), runid, first, meta, i32(n)],
             local_size=(wg,))
    b.launch("nms", "nms_prep", params, (slots,),
             [*qargs(ctx, In(0)), *qargs(ctx, In(1)), runid, first, sc, out, i32(classes)])
    if classes > 1:
        serial = {**params, "serial": int(_detect.serial_sweep(b))}
        b.launch("nms", "nms_class", serial, (n * (classes - 1) * wg,),
                 [*qargs(ctx, In(1)), first, meta, sc, sel, drop, aux, kcount, i32(classes),
                  f32(ctx.scalar(3)), i32(max_det), f32(ctx.scalar(6)), f32(ctx.scalar(7)),
                  f32(ctx.scalar(8))], local_size=(wg,))
    b.launch("nms", "nms_offsets", params, (wg,),
             [meta, kcount, runoff, out, i32(classes), i32(max_det)], local_size=(wg,))
    if classes > 1:
        b.launch("nms", "nms_rank", params, (slots,),
                 [runid, first, kcount, sc, sel, keep, i32(classes), i32(max_det)])
        b.launch("nms", "nms_write", params, (slots,),
                 [*qargs(ctx, In(1)), runid, first, kcount, sc, sel, keep, runoff, In(2),
                  *qargs(ctx, Out(0)), *qargs(ctx, Out(1)), Out(2), Out(3), i32(classes)])


register_kernel("BOX_WITH_NMS_LIMIT", family="nms", support=support, plan=plan,
                max_shapes=max_shapes, host_inputs=range(3, 9))
