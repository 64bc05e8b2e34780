"""GENERATE_PROPOSALS on OpenCL (template generate_proposals.cl.mako): float32, float16 and
the quantized form (quant8 scores / deltas, quant16 symm anchors, quant16 asymm image info and
boxes), NHWC and NCHW, exactly the reference's proposals and their order.

One item per (image, position, anchor) decodes its box; the pre-NMS top n is a bitonic sort per
image (global passes) of (score descending, index ascending: the reference's stable sort);
one work-group per image filters by min size (an ordered scan) and runs the reference's hard
greedy NMS (greedy_nms.mako); a scan over images places each image's rows. The number of rows
is read back after the run (the outputs are planned at their largest, max_shapes)."""

from __future__ import annotations

from clnn.kernels import _detect
from clnn.kernels._detect import group_size, qargs
from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import code, f32, i32
from hal.errors import GeneralFailure


def support(ctx):
    return None  # every signature of the operation


def _dims(ctx):
    """(images, height, width, anchors) of the scores."""
    n, a, b, c = (int(v) for v in ctx.inputs[0].shape)
    return (n, b, c, a) if ctx.scalar(10) else (n, a, b, c)


def _candidates(ctx, size: int) -> tuple[int, bool]:
    """(candidates per image, sorted by score): the pre-NMS top n, or all in order."""
    pre_n = ctx.scalar(6)
    if pre_n is not None and 0 < int(pre_n) < size:
        return int(pre_n), True
    return size, False


def max_shapes(ctx):
    if len(ctx.input_shape(0)) != 4 or ctx.scalar(10) is None:
        raise LookupError("GENERATE_PROPOSALS: the layout is computed on the device")
    nb, h, w, na = _dims(ctx)
    rows, _ = _candidates(ctx, h * w * na)
    post_n = ctx.scalar(7)
    if post_n is not None and int(post_n) > 0:
        rows = min(rows, int(post_n))
    rows *= nb
    return [(rows,), (rows, 4), (rows,)]


def plan(ctx, b):
    need_values(ctx, *range(4, 11))
    nb, h, w, na = _dims(ctx)
    size = h * w * na
    n_cand, sort = _candidates(ctx, size)
    outs = list(b.operation.outputs)
    name = f"{ctx.name} (operation {b.op_index})"

    def finish(words):
        if words[0]:
            raise GeneralFailure(f"{name}: an anchor has x2 < x1 or y2 < y1")
        rows = int(words[1])
        return {outs[0]: (rows,), outs[1]: (rows, 4), outs[2]: (rows,)}

    out = b.readback(2, finish)
    wg = group_size(b, max(n_cand, 2), cap=128)
    params = {"sd": code(ctx.inputs[0]), "dd": code(ctx.inputs[1]), "ad": code(ctx.inputs[2]),
              "id": code(ctx.inputs[3]), "nchw": int(bool(ctx.scalar(10))), "wg": wg}
    slots = nb * size
    sc, bx, sel, drop = b.scratch(slots * 4), b.scratch(slots * 16), b.scratch(slots * 4), \
        b.scratch(slots * 4)
    kcount, offs, aux = b.scratch(nb * 4), b.scratch(nb * 4), b.scratch(slots * 4)
    b.launch("generate_proposals", "gp_decode", params, (slots,),
             [*qargs(ctx, In(0)), *qargs(ctx, In(1)), *qargs(ctx, In(2)), *qargs(ctx, In(3)),
              sc, bx, out, i32(h), i32(w), i32(na), f32(ctx.scalar(4)), f32(ctx.scalar(5))])
    padded = 1
    while padded < size:
        padded *= 2
    order = b.scratch(4)
    if sort:
        kv, order = b.scratch(nb * padded * 4), b.scratch(nb * padded * 4)
        b.launch("generate_proposals", "gp_sort_init", params, (nb * padded,),
                 [sc, kv, order, i32(size), i32(padded)])
        stage = 2
        while stage <= padded:
            j = stage // 2
            while j >= 1:
                b.launch("generate_proposals", "gp_sort_step", params, (nb * padded // 2,),
                         [kv, order, i32(padded), i32(stage), i32(j)])
                j //= 2
            stage *= 2
    serial = {**params, "serial": int(_detect.serial_sweep(b))}
    b.launch("generate_proposals", "gp_nms", serial, (nb * wg,),
             [sc, bx, order, sel, drop, aux, kcount, i32(size), i32(padded), i32(n_cand),
              i32(sort), f32(ctx.scalar(9)), i32(ctx.scalar(7)), f32(ctx.scalar(8))],
             local_size=(wg,))
    wg1 = group_size(b, max(nb, 2), cap=128)
    b.launch("generate_proposals", "gp_offsets", {**params, "wg": wg1}, (wg1,),
             [kcount, offs, out, i32(nb)], local_size=(wg1,))
    b.launch("generate_proposals", "gp_write", params, (slots,),
             [sc, bx, sel, kcount, offs, *qargs(ctx, Out(0)), *qargs(ctx, Out(1)), Out(2),
              i32(size)])


register_kernel("GENERATE_PROPOSALS", family="generate_proposals", support=support, plan=plan,
                max_shapes=max_shapes, host_inputs=range(4, 11))
