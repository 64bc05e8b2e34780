"""TRANSPOSE on OpenCL: a strided copy (strided_copy.cl.mako), or, for a permutation that
swaps the dimensions after the batch in two blocks ([B, R, S] -> [B, S, R]: NCHW <-> NHWC,
the moves clnn/layout.py adds), tiles loaded in vectors (transpose.cl.mako). The permutation
must be a constant (or omitted)."""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    ANY_STORED,
    copy_code,
    i32,
    launch_strided_copy,
    numel,
    strides_of,
    types_in,
)
from hal.operations.transpose import transpose_perm

#: elements a work-item loads per row (a vector) and rows per work-item of the tiled kernel
TILE_VW, TILE_RB = 16, 8


def block_swap(shape, perm) -> tuple[int, int, int] | None:
    """(B, R, S) where ``perm`` keeps dimension 0 and moves dimensions 1..k after k+1..n-1
    (x [B, R, S] -> y [B, S, R]); None for another permutation."""
    n = len(shape)
    if n < 3 or perm[0] != 0:
        return None
    for k in range(1, n - 1):
        if list(perm) == [0, *range(k + 1, n), *range(1, k + 1)]:
            return int(shape[0]), numel(shape[1:k + 1]), numel(shape[k + 1:])
    return None


def launch_block_swap(b, nb: int, r: int, s: int):
    """y [nb, s, r] = x [nb, r, s] (In(0) -> Out(0)) by the tiled kernel (up to TILE_RB rows,
    such as an NCHW image's 3 channels: their count in the kernel)."""
    key = {"dt": copy_code(b.ctx.outputs[0]), "vw": TILE_VW, "rb": TILE_RB}
    if r <= TILE_RB:
        key.update(rb=r, exact=True)
    b.launch("transpose", "planes", key, (-(-s // TILE_VW), -(-r // key["rb"]), nb),
             [In(0), Out(0), i32(r), i32(s)])


def launch_pixel_swap(b, nb: int, r: int, s: int):
    """y [nb, s, r] = x [nb, r, s] (In(0) -> Out(0)) a work-item per block of few rows ``r``
    (transpose.cl.mako shuffle_pixels: a last-axis CHANNEL_SHUFFLE of r groups)."""
    b.launch("transpose", "shuffle_pixels", {"dt": copy_code(b.ctx.outputs[0]), "g": r},
             (nb,), [In(0), Out(0), i32(s)])


def support(ctx):
    return types_in(ctx, 0, ANY_STORED)


def plan(ctx, b):
    shape = ctx.inputs[0].shape
    perm = transpose_perm(ctx, len(shape))
    swap = block_swap(shape, perm)
    if swap is not None and swap[2] >= TILE_VW and swap[1] >= 2:
        launch_block_swap(b, *swap)
        return
    st = strides_of(shape)
    out = ctx.outputs[0].shape
    launch_strided_copy(b, In(0), Out(0), out, [st[p] for p in perm],
                        strides_of(out))


register_kernel("TRANSPOSE", family="transpose", support=support, plan=plan, host_inputs=[1])
