"""What the org.clnn.openvx kernel families share: storage codes of the data tensors and the
exact rescale arguments of the fixed-point kernels (clnn/templates/openvx_fixed.mako)."""

from __future__ import annotations

import numpy as np

from hal.operations._openvx_ext import F32, position

#: storage code of each data type (common.mako CTYPE): float32 and the three fixed-point types
_CODES = {0: "i8", 1: "i16", 2: "u8"}


def vx_code(info) -> str:
    return "f32" if info.type == F32 else _CODES[info.type.type_id]


def i64(v) -> np.int64:
    return np.int64(v)


def rescale_args(pos: int, out_pos: int, divisor: int = 1) -> tuple[int, int]:
    """(sn, den) of ``round((v << sn) / den)``: a value at ``pos`` (divided by ``divisor``)
    at ``out_pos``, as hal/operations/_openvx_fixed.rescale computes it."""
    shift = out_pos - pos
    return max(0, shift), divisor << max(0, -shift)


def accumulate_args(ctx) -> list:
    """sa, sb, sn, den of a convolution-like kernel: the sum of products at position
    qx + qw and the bias (input 2) both shifted to the finer position P, then P -> output."""
    if ctx.outputs[0].type == F32:
        return [np.int32(0), np.int32(0), np.int32(0), i64(1)]
    qa = position(ctx.inputs[0]) + position(ctx.inputs[1])
    qb = position(ctx.inputs[2]) if ctx.has_input(2) else qa
    p = max(qa, qb)
    sn, den = rescale_args(p, position(ctx.outputs[0]))
    return [np.int32(p - qa), np.int32(p - qb), np.int32(sn), i64(den)]


def policies(ctx, overflow_i: int, rounding_i: int) -> dict:
    """The policy part of a kernel key (none for float tensors)."""
    if ctx.outputs[0].type == F32:
        return {"overflow": 0, "rounding": 0}
    return {"overflow": int(ctx.scalar(overflow_i)), "rounding": int(ctx.scalar(rounding_i))}
