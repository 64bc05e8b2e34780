"""TRANSPOSE (0, 2, 3, 1) -> CONV_2D: the NCHW input read by the convolution's direct kernel
(clnn.fusion)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clnn.fusion.records import OT, AddFusion, Graph, LayoutFusion


def layout_fusions(g: Graph, adds: dict) -> dict[int, LayoutFusion]:
    """CONV_2D operation index -> the TRANSPOSE (0, 2, 3, 1) whose output only it reads, as
    its input 0, where its kernels can read the NCHW input (KernelRegistration.input_nchw:
    the direct kernel conv_tile)."""
    from clnn.kernels import kernel_for

    sg, found = g.sg, {}
    for k in g.ops:
        op = sg.operations[k]
        if op.type != OT.TRANSPOSE:
            continue
        out = op.outputs[0]
        users = g.readers.get(out, [])
        if out in g.keep or len(users) != 1 or users[0] not in g.ctx_of:
            continue
        j = users[0]
        tctx, reader = g.ctx_of[k], sg.operations[j]
        perm = tctx.inputs[1].value
        if reader.type != OT.CONV_2D or reader.inputs[0] != out or \
                reader.inputs.count(out) != 1 or tctx.inputs[0].rank != 4 or \
                perm is None or [int(v) for v in np.ravel(perm)] != [0, 2, 3, 1]:
            continue
        try:
            ctx = g.ctx_of[j]
            reg = kernel_for(ctx.op_type)
            if reg is not None and reg.input_nchw(ctx, _Residual(adds.get(j))):
                found[j] = LayoutFusion(k, out, op.inputs[0])
        except Exception:  # an unusual form: leave both operations alone
            continue
    return found


@dataclass(frozen=True)
class _Residual:
    """What KernelRegistration.input_nchw asks of a node before the fused graph exists."""
    residual: AddFusion | None
