"""EMBEDDING_LOOKUP, HASHTABLE_LOOKUP on OpenCL (template lookup.cl.mako): every type of the
HAL signatures (float32, float16, int32, quant8 asymm / signed), rows copied bit for bit.

The lookups stay on the device (they are usually a model input): one work-item per output
element finds its row (EMBEDDING_LOOKUP: the index itself; HASHTABLE_LOOKUP: a binary search
of the sorted keys, the first equal key as NumPy's searchsorted). An EMBEDDING_LOOKUP index
outside [0, rows) sets the launch's error flag, read back after the run, and fails the
execution as on the reference device.
"""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import ANY_STORED, copy_code, i32, numel, types_in
from hal.errors import GeneralFailure


def support_embedding(ctx):
    return types_in(ctx, 1, ANY_STORED)


def plan_embedding(ctx, b):
    values, y = ctx.inputs[1], ctx.outputs[0]
    rows = int(values.shape[0])
    flag = b.error_flag(f"EMBEDDING_LOOKUP: input 0 (lookups) holds values outside "
                        f"[0, {rows})")
    b.launch("lookup", "embedding_lookup", {"dt": copy_code(y)}, (numel(y.shape),),
             [In(0), In(1), Out(0), i32(max(numel(values.shape[1:]), 1)), i32(rows), flag])


def support_hashtable(ctx):
    return types_in(ctx, 2, ANY_STORED)


def plan_hashtable(ctx, b):
    keys, values, y = ctx.inputs[1], ctx.inputs[2], ctx.outputs[0]
    n = int(keys.shape[0])
    if n != int(values.shape[0]):
        raise GeneralFailure(f"HASHTABLE_LOOKUP: {n} keys for {values.shape[0]} rows")
    inner = numel(values.shape[1:])
    k = int(ctx.inputs[0].shape[0])
    # one work-item per output element; an empty row (inner 0) still writes its hit flag
    b.launch("lookup", "hashtable_lookup", {"dt": copy_code(y)}, (k * max(inner, 1),),
             [In(0), In(1), In(2), Out(0), Out(1), i32(inner), i32(n)])


register_kernel("EMBEDDING_LOOKUP", family="lookup", support=support_embedding,
                plan=plan_embedding)
register_kernel("HASHTABLE_LOOKUP", family="lookup", support=support_hashtable,
                plan=plan_hashtable)
