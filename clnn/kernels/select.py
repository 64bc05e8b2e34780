"""SELECT on OpenCL (template select.cl.mako): output = input0 ? input1 : input2, element-wise
(the four tensors have the same shape, any rank).

Every type of the HAL signatures runs. Quantized values whose scale / zero point differ from
the output's are requantized like the reference's requantize(): the real value divided by the
output scale, rounded half away from zero, saturated (the kernel computes in float32 where the
reference uses double: within the +-1 of the CTS).
"""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import FLOAT_QUANT8_INT32, QUANT8, code, f32, i32, numel, types_in
from hal.operations.common import qrange


def support(ctx):
    return types_in(ctx, 1, FLOAT_QUANT8_INT32)


def _requant_args(src, dst):
    same = src.scale == dst.scale and src.zero_point == dst.zero_point
    return [i32(same), i32(src.zero_point), f32(src.scale), f32(dst.scale)]


def plan(ctx, b):
    y = ctx.outputs[0]
    quant = y.type in QUANT8
    extra = []
    if quant:
        lo, hi = qrange(y.type)
        extra = [*_requant_args(ctx.inputs[1], y), *_requant_args(ctx.inputs[2], y),
                 i32(y.zero_point), i32(lo), i32(hi)]
    b.launch("select", "select_values", {"dt": code(y), "quant": quant}, (numel(y.shape),),
             [In(0), In(1), In(2), Out(0), *extra])


register_kernel("SELECT", family="select", support=support, plan=plan)
