"""PAD / PAD_V2 fused into the convolution or pooling that reads it, and channel PADs into the
ADD that reads them (clnn.fusion)."""

from __future__ import annotations

import numpy as np

from clnn.fusion.records import (
    CONV_OPS,
    FLOATS,
    PAD_OPS,
    POOL_OPS,
    Graph,
    PadFusion,
    conv_params,
    same_shape_add,
    zero_padding,
)


def pad_fusions(g: Graph) -> dict[int, PadFusion]:
    """Reader operation index -> its fused PAD, where every reader of the PAD's output is a
    convolution or a float pooling that can read the unpadded tensor (a PAD read by two
    depthwise convolutions launches nothing either)."""
    sg, found = g.sg, {}
    for k in g.ops:
        op = sg.operations[k]
        if op.type not in PAD_OPS:
            continue
        padded = op.outputs[0]
        users = g.readers.get(padded, [])
        if padded in g.keep or not users or any(u not in g.ctx_of for u in users):
            continue
        pctx = g.ctx_of[k]
        x = pctx.inputs[0]
        if x.rank != 4 or pctx.inputs[1].value is None or not zero_padding(pctx):
            continue
        pads = np.asarray(pctx.inputs[1].value).reshape(4, 2)
        if pads[0].any() or pads[3].any():
            continue
        fusion = PadFusion(k, padded, op.inputs[0], int(pads[1][0]), int(pads[2][0]),
                           int(x.shape[1]), int(x.shape[2]))
        if all(_reads_padded_window(g, u, padded) for u in users):
            found.update({u: fusion for u in users})
    return found


def _reads_padded_window(g: Graph, j: int, padded: int) -> bool:
    """Operation ``j`` reads ``padded`` as its NHWC input 0 only, and can take the PAD's rows
    and columns as padding of its own: a convolution (its padding adds zero / the zero point,
    as the PAD does), or a float pooling without padding of its own (its kernels then count
    the PAD's taps as zeros: pooling padding is otherwise left out of the max and the
    average)."""
    sg = g.sg
    reader = sg.operations[j]
    if reader.inputs[0] != padded or reader.inputs.count(padded) != 1:
        return False
    ctx = g.ctx_of[j]
    try:
        if reader.type in CONV_OPS:
            return not conv_params(ctx).nchw
        if reader.type not in POOL_OPS or ctx.outputs[0].type not in FLOATS:
            return False
        from hal.operations.conv2d import resolve_padding
        from hal.operations.pooling import pool_params

        p = pool_params(ctx)
        fw, fh = p.extra
        pads, _ = resolve_padding(p, ctx.inputs[0].shape[1], ctx.inputs[0].shape[2], fh, fw)
        return not p.nchw and not any(pads)
    except Exception:  # an unusual form: leave both operations alone
        return False


def channel_pad_fusions(g: Graph, taken: set) -> dict[int, PadFusion]:
    """ADD operation index -> the PAD it reads, where the PAD only adds zero channels at the
    end of a float NHWC tensor (the residual branch of BlazeFace-style blocks) and feeds only
    this ADD of two same-shape operands: the ADD reads the unpadded tensor, zero past its
    channels. ``taken``: operations already in another fusion."""
    sg, found = g.sg, {}
    for k in g.ops:
        op = sg.operations[k]
        if op.type not in PAD_OPS or k in taken:
            continue
        padded = op.outputs[0]
        users = g.readers.get(padded, [])
        if len(users) != 1 or users[0] in taken or users[0] in found or \
                same_shape_add(g, users[0]) is None or \
                sg.operations[users[0]].inputs[:2].count(padded) != 1:
            continue
        source = channel_pad(g, k, padded, users[0])
        if source is None:
            continue
        x = g.ctx_of[k].inputs[0].shape  # the planned shape (a declared one may be unknown)
        found[users[0]] = PadFusion(k, padded, source, 0, 0, int(x[1]), int(x[2]),
                                    channels=int(x[3]))
    return found


def channel_pad(g: Graph, k: int, padded: int, add: int):
    """The input of PAD operation ``k`` when it only adds zero channels at the end of a float
    NHWC tensor and its output ``padded`` feeds only the ADD ``add`` (once), else None."""
    sg = g.sg
    op = sg.operations[k]
    if op.type not in PAD_OPS or op.outputs[0] != padded or padded in g.keep or \
            g.readers.get(padded) != [add] or k not in g.ctx_of:
        return None
    pctx = g.ctx_of[k]
    x = pctx.inputs[0]
    if x.rank != 4 or x.type not in FLOATS or pctx.inputs[1].value is None or \
            not zero_padding(pctx):
        return None
    pads = np.asarray(pctx.inputs[1].value).reshape(4, 2)
    if pads[:3].any() or pads[3][0]:
        return None
    return op.inputs[0]
