"""The ADD fused into its producer's epilogue: residuals of convolutions and resizes, a
channel PAD's or a MAX_POOL_2D's operand, quantized ADDs (clnn.fusion)."""

from __future__ import annotations

import numpy as np

from clnn.fusion.pads import channel_pad
from clnn.fusion.records import (
    FLOATS,
    OT,
    PAD_OPS,
    QUANT8,
    RESIDUAL_PRODUCERS,
    AddFusion,
    Graph,
    conv_params,
    epilogue_residual,
    same_shape_add,
)
from hal.types import OperandType


def _quant_add(actx, cctx, conv_out_first: bool):
    """The integer parameters of a quantized ADD fused after a convolution (AddFusion.quant:
    the convolution's operand first), or None where the ADD is a float one or a multiplier
    of it shifts left (then not fused)."""
    if actx.outputs[0].type not in QUANT8:
        return None
    from hal.operations import broadcast as hal_broadcast

    z1, m1, s1, z2, m2, s2, mo, so, zo, lo, hi = hal_broadcast.quant_add_params(actx)
    if max(s1, s2, so) > 0:  # (the epilogue's vector requantization shifts right only)
        return None
    first, second = ((z1, m1, s1), (z2, m2, s2)) if conv_out_first else \
        ((z2, m2, s2), (z1, m1, s1))
    return np.array([*first, *second, mo, so, zo, lo, hi], np.int32)


def _quant_residual_conv(producer, cctx) -> bool:
    """Whether a quantized convolution adds a residual in its epilogue: an NHWC CONV_2D (its
    GEMM's quantized epilogue, clnn.kernels._gemm.launch_gemm ``qres``)."""
    try:
        return producer.type == OT.CONV_2D and not conv_params(cctx).nchw
    except Exception:  # an unusual form: no fusion
        return False


def _own_activation(cctx) -> int | None:
    """A convolution's fused activation code, None for an unusual form (no fusion)."""
    try:
        return cctx.scalar(conv_params(cctx).idx["fused activation"])
    except Exception:
        return None


def padded_add_fusions(g: Graph, taken: set) -> dict[int, AddFusion]:
    """CONV_2D operation index -> an ADD of its output and a channel PAD of a tensor ready
    before it (ADD(conv, PAD(x)) of BlazeFace-style blocks), both fused into its epilogue,
    which adds x's channels and zero past them: where the convolution's kernels can
    (KernelRegistration.epilogue_residual with channels), it has no activation of its own and
    the shapes are the ADD's. ``taken``: operations already in another fusion."""
    sg, ctx_of = g.sg, g.ctx_of
    step = {k: n for n, k in enumerate(g.ops)}
    found = {}
    for k in g.ops:
        actx = None if k in taken else same_shape_add(g, k)
        if actx is None or actx.outputs[0].type not in FLOATS:  # (float channel PADs only)
            continue
        op, y = sg.operations[k], actx.outputs[0]
        for conv_out, padded in ((op.inputs[0], op.inputs[1]), (op.inputs[1], op.inputs[0])):
            j, p = g.producer.get(conv_out), g.producer.get(padded)
            if j is None or p is None or j not in ctx_of or j in taken or j in found or \
                    p in taken or conv_out == padded:
                continue
            source = channel_pad(g, p, padded, k)
            if source is None or sg.operations[j].type != OT.CONV_2D or conv_out in g.keep or \
                    g.readers.get(conv_out) != [k]:
                continue
            cctx = ctx_of[j]
            if cctx.outputs[0].type != y.type or not epilogue_residual(cctx, channels=True):
                continue
            s = g.producer.get(source)  # the PAD's input must be ready when the conv runs
            if _own_activation(cctx) != 0 or (s is not None and s in step and step[s] > step[j]):
                continue
            found[j] = AddFusion(k, conv_out, source, op.outputs[0], int(actx.scalar(2)),
                                 pad_op=p, channels=int(ctx_of[p].inputs[0].shape[3]))
            break
    return found


def add_fusions(g: Graph, taken: set) -> dict[int, AddFusion]:
    """Producer (CONV_2D, RESIZE_*) operation index -> the ADD fused into its epilogue;
    ``taken``: operations already in another fusion."""
    sg, ctx_of = g.sg, g.ctx_of
    step = {k: n for n, k in enumerate(g.ops)}
    found = {}
    for k in g.ops:
        actx = None if k in taken else same_shape_add(g, k)
        if actx is None:
            continue
        op, y = sg.operations[k], actx.outputs[0]
        for conv_out, other in ((op.inputs[0], op.inputs[1]), (op.inputs[1], op.inputs[0])):
            j = g.producer.get(conv_out)
            if j is None or j not in ctx_of or j in taken or j in found or conv_out == other:
                continue
            producer = sg.operations[j]
            if producer.type not in RESIDUAL_PRODUCERS or conv_out in g.keep or \
                    g.readers.get(conv_out) != [k]:
                continue
            cctx = ctx_of[j]
            if cctx.outputs[0].type != y.type or not epilogue_residual(cctx):
                continue
            # a convolution's own activation comes before the ADD: its clamp, then the ADD
            clamp = _own_activation(cctx) if producer.type in (OT.CONV_2D,
                                                               OT.GROUPED_CONV_2D) else 0
            if clamp != 0 and not _clamp_then_add(producer, cctx, actx, clamp):
                continue
            pool = _pooled_residual(g, other, k, producer, cctx, clamp)
            if pool is not None:  # (the pool's input is what the epilogue reads)
                other = pool[1]
            # the other operand must be ready when the convolution runs
            p = g.producer.get(other)
            if p is not None and p in step and step[p] > step[j]:
                continue
            quant = _quant_add(actx, cctx, conv_out == op.inputs[0])
            if y.type in QUANT8 and (quant is None or not _quant_residual_conv(producer, cctx)):
                continue
            found[j] = AddFusion(k, conv_out, other, op.outputs[0], int(actx.scalar(2)),
                                 clamp=int(clamp), pool_op=pool[0] if pool else None,
                                 quant=quant)
            break
    return found


def _pooled_residual(g: Graph, other: int, add: int, producer, cctx, clamp: int):
    """(MAX_POOL_2D operation, its input) where the ADD ``add``'s operand ``other`` is the
    output of a float32 NHWC MAX_POOL_2D of a 2x2 window, stride 2, no padding or activation,
    over an input of twice its height and width (not a PAD's output), read by that ADD alone,
    and the producer a float NHWC CONV_2D without a clamp of its own whose kernels take it
    (epilogue_residual ``pooled``); else None: the pool launches as before. (Not float16: the
    maxima of vload_half vectors crashed PoCL 5's CPU device at the first launch.)"""
    from hal.operations.conv2d import resolve_padding
    from hal.operations.pooling import pool_params

    p = g.producer.get(other)
    if not g.pooled or p is None or p not in g.ctx_of or \
            g.sg.operations[p].type != OT.MAX_POOL_2D or \
            other in g.keep or g.readers.get(other) != [add] or clamp != 0 or \
            producer.type != OT.CONV_2D:
        return None
    pctx = g.ctx_of[p]
    x, y = pctx.inputs[0], pctx.outputs[0]
    source = g.sg.operations[p].inputs[0]
    s = g.producer.get(source)
    try:
        pp = pool_params(pctx)
        pads, _ = resolve_padding(pp, x.shape[1], x.shape[2], *pp.extra[::-1])
        if pp.nchw or tuple(pp.extra) != (2, 2) or (pp.stride_h, pp.stride_w) != (2, 2) or \
                any(pads) or pctx.scalar(pp.idx["fused activation"]) != 0 or \
                y.type != OperandType.TENSOR_FLOAT32 or x.rank != 4 or \
                tuple(x.shape) != (y.shape[0], 2 * y.shape[1], 2 * y.shape[2], y.shape[3]) or \
                (s is not None and g.sg.operations[s].type in PAD_OPS) or \
                conv_params(cctx).nchw:
            return None
    except Exception:  # an unusual form: no fusion
        return None
    return (p, source) if epilogue_residual(cctx, pooled=True) else None


def _clamp_then_add(producer, cctx, actx, clamp) -> bool:
    """Whether a float CONV_2D with its own clamp (``clamp``: a RELU / RELU1 / RELU6 code)
    adds an ADD's other operand after that clamp: the ADD has no activation of its own (one
    clamp a node) and the convolution's kernels add a residual after their clamp
    (KernelRegistration.epilogue_residual ``clamped``)."""
    return producer.type == OT.CONV_2D and clamp in (1, 2, 3) and \
        actx.outputs[0].type in FLOATS and int(actx.scalar(2)) == 0 and \
        epilogue_residual(cctx, clamped=True)
