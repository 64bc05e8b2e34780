"""DEPTHWISE_CONV_2D -> CONV_2D 1x1: the depthwise outputs computed inside the 1x1
convolution's kernel (clnn.fusion)."""

from __future__ import annotations

from clnn.fusion.records import FLOATS, OT, DepthwiseFusion, Graph, conv_params
from clnn.kernels import _depthwise_variants
from clnn.kernels.support import code


def depthwise_fusions(g: Graph, pads: dict, dwpw_choose,
                       pooled: set = frozenset()) -> dict[int, DepthwiseFusion]:
    """CONV_2D operation index -> the DEPTHWISE_CONV_2D whose output only it reads (so the
    depthwise convolution is in no other fusion: an activation fused into it would be that
    reader), where the convolution's kernel can compute it (see the module docstring;
    ``pads``: the PAD fusions, which the depthwise one keeps; ``dwpw_choose(op, sig)``: the
    tile of the fused kernel for CONV_2D ``op`` and the shapes ``sig``, or None where the two
    run apart (clnn/kernels/_dwpw_variants.py choose); None: no depthwise fusion)."""
    from hal.operations.conv2d import resolve_padding

    sg, ctx_of, found = g.sg, g.ctx_of, {}
    if dwpw_choose is None:
        return found
    for j in g.ops:
        op = sg.operations[j]
        if op.type != OT.CONV_2D or j in pooled:  # (its own ADD and activation fusions stay)
            continue
        dw_out = op.inputs[0]
        k = g.producer.get(dw_out)
        if k is None or k not in ctx_of or \
                sg.operations[k].type != OT.DEPTHWISE_CONV_2D or dw_out in g.keep or \
                g.readers.get(dw_out) != [j] or op.inputs.count(dw_out) != 1:
            continue
        cctx, dctx = ctx_of[j], ctx_of[k]
        x, dfi, dbias = dctx.inputs[0], dctx.inputs[1], dctx.inputs[2]
        fi, y = cctx.inputs[1], cctx.outputs[0]
        try:
            cp, dp = conv_params(cctx), conv_params(dctx)
            act = dctx.scalar(dp.idx["fused activation"])
            if cp.nchw or dp.nchw or dp.extra[0] != 1 or x.rank != 4 or dfi.rank != 4:
                continue
            c = int(x.shape[3])
            if tuple(fi.shape[1:]) != (1, 1, c) or (cp.stride_h, cp.stride_w) != (1, 1) or \
                    any(resolve_padding(cp, 1, 1, 1, 1)[0]) or dfi.shape[3] != c:
                continue
            _, fh, fw, _ = (int(d) for d in dfi.shape)
            h, w = int(x.shape[1]), int(x.shape[2])
            (top, _, left, _), (oh, ow) = resolve_padding(dp, h, w, fh, fw)
        except Exception:  # an unusual form: leave both operations alone
            continue
        types = {x.type, dfi.type, dbias.type, fi.type, y.type}
        if len(types) != 1 or x.type not in FLOATS or act not in (0, 1, 2, 3) or \
                dfi.value is None or dbias.value is None or fi.value is None:
            continue
        pad = pads.get(k)
        if pad is not None:
            top, left, h, w = pad.adjust(top, left)
        sig = {"dt": code(x),
               "n": int(x.shape[0]), "h": h, "w": w, "c": c, "oh": oh, "ow": ow, "fh": fh,
               "fw": fw, "sh": dp.stride_h, "sw": dp.stride_w, "dh": dp.dil_h,
               "dw": dp.dil_w, "pt": top, "pl": left, "N": int(fi.shape[0]),
               # the two launches' depthwise kernels are part of what the tuner compares: an
               # entry measured against an older depthwise space is measured again
               "dwspace": _depthwise_variants.SPACE}
        tile = dwpw_choose(j, sig)
        if tile is None:
            continue
        found[j] = DepthwiseFusion(k, dw_out, pad.source if pad else sg.operations[k].inputs[0],
                                   sg.operations[k].inputs[1], sg.operations[k].inputs[2],
                                   top, left, h, w, fh, fw, (dp.stride_h, dp.stride_w),
                                   (dp.dil_h, dp.dil_w), int(act), tuple(tile), pad)
    return found
