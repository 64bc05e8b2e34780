"""GATHER on OpenCL (template gather.cl.mako): every type of the HAL signatures (float32,
float16, int32, quant8 asymm / signed) copied bit for bit, any rank.

The indices are read on the host at planning (a host input: a new index tensor makes a new
plan) because an index out of [0, dimension) must fail the execution, as on the reference;
indices computed inside the same OpenCL partition are not known there, so that partition
runs on the reference device.
"""

from __future__ import annotations

import numpy as np

from clnn.kernels._host import need_values
from clnn.kernels.registry import In, Out, Unplannable, register_kernel
from clnn.kernels.support import ANY_STORED, copy_code, i32, numel, types_in
from hal.errors import GeneralFailure


def support(ctx):
    return types_in(ctx, 0, ANY_STORED)


def plan(ctx, b):
    need_values(ctx, 1)
    x, y = ctx.inputs[0], ctx.outputs[0]
    rank = len(x.shape)
    axis = int(ctx.scalar(1)) % rank
    if not ctx.value_known(2):
        raise Unplannable("the indices are computed on the device")
    idx = ctx.input(2)
    dim = int(x.shape[axis])
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= dim):
        raise GeneralFailure(f"GATHER: input 2 (indices) holds values outside [0, {dim})")
    inner = numel(x.shape[axis + 1:])
    b.launch("gather", "gather", {"dt": copy_code(y)}, (numel(y.shape),),
             [In(0), In(2), Out(0), i32(inner), i32(np.asarray(idx).size), i32(dim)])


register_kernel("GATHER", family="gather", support=support, plan=plan, host_inputs=[1, 2])
