"""ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW on OpenCL (template broadcast.cl.mako).

Every type of the HAL signatures runs (float32, float16, relaxed, quant8 asymm and signed,
int32 where the spec allows), with 4-D broadcasting; the fused activation must be a constant.
Quantized ADD/SUB/MUL use the reference's fixed-point pipeline, MAXIMUM/MINIMUM compare the
dequantized values and requantize (as the reference does).
"""

from __future__ import annotations

import numpy as np

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import (
    CLAMPS,
    FLOAT,
    FLOAT_QUANT8_INT32,
    act_args,
    bcast_args,
    code,
    f32,
    first,
    i32,
    max_rank,
    numel,
    plane_broadcast,
    qmul,
    row_broadcast,
    row_local_size,
    row_vector,
    types_in,
    vector_groups,
    vector_width,
)
from hal.operations.common import INT32_MAX, INT32_MIN, activation_range_float, qrange
from hal.types import OperandType

_FUSED = ("ADD", "SUB", "MUL", "DIV")
def support(ctx):
    return first(types_in(ctx, 0, FLOAT_QUANT8_INT32), max_rank(ctx, 0, 4), max_rank(ctx, 1, 4))


def plan(ctx, b):
    a_info, b_info, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    bcast, shape_args = bcast_args(a_info.shape, b_info.shape, out.shape)
    act = ctx.name in _FUSED and 2 or None
    if out.type in FLOAT:
        extra = act_args(ctx, act, out)
        fused = b.activation  # a RELU* fused in (clnn/fusion/)
        if fused is not None:
            extra = [f32(v) for v in fused.clamp]
    elif out.type == OperandType.TENSOR_INT32:
        clamp = activation_range_float(int(ctx.scalar(2) or 0) if act else 0)
        lo, hi = (int(np.clip(v, INT32_MIN, INT32_MAX)) for v in clamp)
        extra = [i32(lo), i32(hi)]
    else:
        extra = _quant_args(ctx)
    if b.input_pad is not None:  # a channel PAD fused into this ADD (clnn/fusion/)
        _plan_add_chpad(ctx, b, extra)
        return
    rows = row_broadcast(a_info.shape, b_info.shape, out.shape)
    if out.type in FLOAT and _plan_vec(ctx, b, rows, extra):
        return
    if _plan_qadd_lut(ctx, b):
        return
    planes = None if rows else plane_broadcast(a_info.shape, b_info.shape, out.shape)
    if rows:  # a per-channel operand: a 2-D launch without divisions (common.mako flat_id)
        bcast, gsize = rows[0], (rows[1], numel(out.shape) // rows[1])
        local = row_local_size(*gsize)
    elif planes:  # a per-channel operand of NCHW: a 3-D launch without divisions
        (bcast, gsize), local = planes, None
    else:
        gsize, local = (numel(out.shape),), None
    b.launch("broadcast", "binary", {"op": ctx.name, "dt": code(out), "bcast": bcast},
             gsize, [In(0), In(1), Out(0), *shape_args, *extra],
             local_size=local, flexible=planes is not None)


def _plan_vec(ctx, b, rows, clamp) -> bool:
    """Float operands of the output's shape, or one a row repeated over the output (``rows``,
    support.row_broadcast), whose row (or whole size) a vector width divides: the
    ``binary_vec`` kernel, vw outputs per work-item. False otherwise."""
    a_info, b_info, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    n = numel(out.shape)
    if rows:
        vw = row_vector(rows[1], code(out))
        gsize = (vector_groups(rows[1], vw), n // rows[1]) if vw else None
    elif tuple(a_info.shape) == tuple(b_info.shape) == tuple(out.shape) or \
            _scalar_of(a_info, b_info, out) or _scalar_of(b_info, a_info, out):
        vw = row_vector(n, code(out))
        gsize = (vector_groups(n, vw),) if vw else None
    else:
        return False
    if not vw:
        return False
    bcast = rows[0] if rows else "a_scalar" if _scalar_of(b_info, a_info, out) else \
        "b_scalar" if _scalar_of(a_info, b_info, out) else ""
    b.launch("broadcast", "binary_vec", {"op": ctx.name, "dt": code(out), "vw": vw,
                                         "bcast": bcast}, gsize,
             [In(0), In(1), Out(0), i32(rows[1] if rows else n), *clamp],
             local_size=row_local_size(*gsize) if rows else None, flexible=True)
    return True


def _plan_qadd_lut(ctx, b) -> bool:
    """8-bit quantized ADD / SUB of two operands of the output's shape whose size a vector
    width divides: the ``qadd_lut`` kernel, each result looked up in the table of the
    reference's (hal.operations.broadcast.quant_table), vw outputs per work-item. False
    otherwise."""
    from clnn.kernels import _gemm
    from hal.operations import broadcast as hal_broadcast

    a_info, b_info, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    n = numel(out.shape)
    vw = vector_width(n)
    if ctx.name not in ("ADD", "SUB") or code(out) not in ("u8", "i8") or not vw or \
            not tuple(a_info.shape) == tuple(b_info.shape) == tuple(out.shape):
        return False
    lut = _gemm.device_buffer(b, hal_broadcast.quant_table(ctx).astype(out.dtype))
    b.launch("broadcast", "qadd_lut", {"dt": code(out), "vw": vw}, (n // vw,),
             [In(0), In(1), Out(0), lut], flexible=True)
    return True


def _scalar_of(full, one, out) -> bool:
    """Whether ``full`` has the output's shape and ``one`` is one element (broadcast to all),
    the output larger (a tensor plus a scalar constant: the ``*_scalar`` binary_vec modes)."""
    return tuple(full.shape) == tuple(out.shape) and numel(one.shape) == 1 and \
        numel(out.shape) > 1


def _plan_add_chpad(ctx, b, clamp):
    """Float ADD of a tensor and the unpadded source of a channel PAD (zero past its
    channels): the ADD is commutative, so the padded operand goes second."""
    f, out = b.input_pad, ctx.outputs[0]
    full = 1 if b.operation.inputs[0] == f.padded else 0
    c = int(out.shape[3])
    gsize = (c, numel(out.shape) // c)
    local = row_local_size(*gsize)
    b.launch("broadcast", "add_chpad", {"dt": code(out)}, gsize,
             [In(full), In(1 - full), Out(0), i32(c), i32(f.channels), *clamp],
             local_size=local)


def _quant_args(ctx):
    a, bb, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    sa, sb, so = (float(np.float32(x)) for x in (a.scale, bb.scale, out.scale))
    m = [i32(0)] * 6
    if ctx.name in ("ADD", "SUB"):
        twice = 2.0 * max(sa, sb)
        m1, m2, m3 = qmul(sa / twice), qmul(sb / twice), qmul(twice / ((1 << 20) * so))
        if ctx.name == "SUB":
            m2[0] = i32(-int(m2[0]))  # the reference negates the second multiplier
        m = m1 + m2 + m3
    elif ctx.name == "MUL":
        m = qmul(float(np.float32(a.scale) * np.float32(bb.scale)) / so) + [i32(0)] * 4
    if ctx.name in ("MAXIMUM", "MINIMUM"):
        lo, hi = qrange(out.type)
    else:
        lo, hi = act_args(ctx, 2, out)
    return [i32(a.zero_point), i32(bb.zero_point), i32(out.zero_point), *m,
            f32(sa), f32(sb), f32(1.0 / so), i32(lo), i32(hi)]


def epilogue_activations(ctx) -> tuple[str, ...]:
    """A float ADD / SUB / MUL / DIV clamps its output: a RELU* after it is that clamp."""
    return CLAMPS if ctx.outputs[0].type in FLOAT else ()


for _op in ("ADD", "SUB", "MUL", "DIV"):
    register_kernel(_op, family="broadcast", support=support, plan=plan, host_inputs=[2],
                    epilogue_activations=epilogue_activations)
for _op in ("MAXIMUM", "MINIMUM", "POW"):
    register_kernel(_op, family="broadcast", support=support, plan=plan, host_inputs=[2])
