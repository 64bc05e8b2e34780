"""Tiles of the direct kernels ``conv_tile`` and ``depthwise_tile`` (output pixels per
work-item, work-groups), shared by CONV_2D, DEPTHWISE_CONV_2D and their variants
(clnn/kernels/_conv_variants.py, _depthwise_variants.py) without an import cycle."""

from __future__ import annotations

#: most input vectors per filter row of the tiled kernel (they stay in registers)
MAX_SPAN = 24


def tile_width(ow: int, fw: int, sw: int, dw: int) -> int | None:
    """Output pixels per work-item of the tiled direct kernels (``depthwise_tile``,
    ``conv_tile``); None when even one pixel's span does not fit."""
    for t in (8, 4, 2, 1):
        if (ow >= t or t == 1) and (t - 1) * sw + (fw - 1) * dw + 1 <= MAX_SPAN:
            return t
    return None


def fit_registers(tx: int, vw: int, vec: int) -> int:
    """``tx`` halved until a tile of tx pixels x vw channels holds at most 8 of the device's
    native vectors of ``vec`` floats (CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT): 8 x 16 with
    vectors of 16, 4 x 16 or 8 x 8 with vectors of 8, whose 16 registers the 8 x 16
    accumulators would fill (there ``clnn tune`` chooses a tile of at most 64 floats for
    most depthwise layers whose channels take vectors of 16)."""
    while tx > 1 and tx * vw > 8 * max(vec, 1):
        tx //= 2
    return tx


def tile_rows_group(gsize):
    """Work-group of a tiled direct kernel launched as (channel blocks, tiles along a row,
    batch * output rows): every channel block of one tile column over up to 8 output rows.
    PoCL's own choice ran slower on strided depthwise layers and never faster
    (benchmarks/op_kernels.py -k depthwise)."""
    for k in (8, 4, 2):
        if gsize[2] % k == 0 and gsize[0] * k <= 256:
            return (gsize[0], 1, k)
    return None
