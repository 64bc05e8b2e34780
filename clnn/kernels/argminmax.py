"""ARGMAX, ARGMIN on OpenCL (template argminmax.cl.mako): every type of the HAL signatures
(float32, float16, int32, quant8 asymm / signed compared as stored), any rank, one work-item
per output element. Ties give the lowest index; a NaN counts as the extremum (the first one
wins), as NumPy's argmax / argmin. The axis is read on the host at planning."""

from __future__ import annotations

from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import FLOAT_QUANT8_INT32, code, i32, numel, types_in
from hal.errors import GeneralFailure


def support(ctx):
    return types_in(ctx, 0, FLOAT_QUANT8_INT32)


def plan(ctx, b):
    need_values(ctx, 1)
    x = ctx.inputs[0]
    axis = int(ctx.scalar(1)) % len(x.shape)
    n = int(x.shape[axis])
    if n == 0:
        raise GeneralFailure(f"{ctx.name}: input 0 is empty along axis {axis}")
    outer, inner = numel(x.shape[:axis]), numel(x.shape[axis + 1:])
    b.launch("argminmax", "argminmax", {"op": ctx.name, "dt": code(x)}, (outer * inner,),
             [In(0), Out(0), i32(n), i32(inner)])


for _op in ("ARGMAX", "ARGMIN"):
    register_kernel(_op, family="argminmax", support=support, plan=plan, host_inputs=[1])
