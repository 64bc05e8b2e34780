"""DETECTION_POSTPROCESSING on OpenCL (template detection_postprocessing.cl.mako): float32 and
float16, regular (per class) and fast (per anchor's best class) NMS, exactly the reference's
detections and order.

One item per (image, anchor) decodes its box; one work-group per (image, class) (regular) or
per image (fast) runs the reference's hard greedy NMS (greedy_nms.mako); the reference's sort
of the detections by score is computed in parallel as ranks, one item per candidate slot.
The outputs have fixed shapes [images, max_detections]: unused rows are zeros."""

from __future__ import annotations

from clnn.kernels import _detect
from clnn.kernels._detect import group_size
from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import code, f32, i32


def support(ctx):
    return None  # every signature of the operation


def plan(ctx, b):
    need_values(ctx, *range(3, 14))
    nb, na, nc = (int(v) for v in ctx.inputs[0].shape)
    enc = int(ctx.inputs[1].shape[2])
    regular = bool(ctx.scalar(7))
    max_det, max_cls, max_per_cls = (int(ctx.scalar(i)) for i in (8, 9, 10))
    label_shift = 0 if ctx.scalar(13) else 1
    wg = group_size(b, max(na, 2), cap=128)
    params = {"dt": code(ctx.inputs[0]), "wg": wg}
    slots = nb * na * nc
    sc, sel, drop, aux = (b.scratch(slots * 4) for _ in range(4))
    bx, best, kcount = b.scratch(nb * na * 16), b.scratch(nb * na * 4), b.scratch(nb * nc * 4)
    b.launch("detection_postprocessing", "dp_decode", params, (nb * na,),
             [In(0), In(1), In(2), sc, bx, best, i32(na), i32(nc), i32(enc),
              *[f32(ctx.scalar(i)) for i in range(3, 7)]])
    groups = nb * (nc - 1) if regular else nb
    serial = {**params, "serial": int(_detect.serial_sweep(b))}
    b.launch("detection_postprocessing", "dp_nms", serial, (groups * wg,),
             [sc, best, bx, sel, drop, aux, kcount, i32(na), i32(nc), i32(regular),
              f32(ctx.scalar(11)), i32(max_per_cls if regular else max_det),
              f32(ctx.scalar(12))], local_size=(wg,))
    b.launch("detection_postprocessing", "dp_zero", params, (nb * max_det,),
             [Out(0), Out(1), Out(2), Out(3), kcount, i32(nc), i32(max_det), i32(regular),
              i32(min(max_cls, nc - 1))])
    b.launch("detection_postprocessing", "dp_write", params, (slots,),
             [sc, bx, sel, kcount, Out(0), Out(1), Out(2), i32(na), i32(nc), i32(max_det),
              i32(regular), i32(max_cls), i32(label_shift)])


register_kernel("DETECTION_POSTPROCESSING", family="detection_postprocessing",
                support=support, plan=plan, host_inputs=range(3, 14))
