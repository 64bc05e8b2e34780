"""LSH_PROJECTION on OpenCL (lsh_projection.cl.mako): float32 / float16 hash seeds and
weights, float32 / float16 / int32 / quant8 asymm input, sparse, dense and deprecated sparse.

As the reference (hal/operations/lsh_projection.py): bit j of hash function k is the sign of
sum_i weight[i] * Fingerprint64(seed_kj bytes || row i bytes), farmhash's Fingerprint64 ported
to OpenCL C (64-bit integers are core OpenCL). The sum runs over the rows in order in double
precision where the device has cl_khr_fp64 (the reference's Python floats, so the signs agree
exactly), else in float. One work-item per bit (dense) or per hash function (sparse: it packs
its bits into the signature).
"""

from __future__ import annotations

from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import code, i32, numel, types_in
from hal.operations.lsh_projection import DENSE, SPARSE
from hal.types import OperandType as OT

_INPUTS = frozenset({OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16, OT.TENSOR_INT32,
                     OT.TENSOR_QUANT8_ASYMM})


def support(ctx):
    return types_in(ctx, 1, _INPUTS)


def plan(ctx, b):
    seeds, x = ctx.inputs[0], ctx.inputs[1]
    n_hash, n_bits = (int(d) for d in seeds.shape)
    kind = int(ctx.scalar(3))
    rows = int(x.shape[0])
    weighted = ctx.has_input(2) and not ctx.inputs[2].omitted and numel(ctx.inputs[2].shape) > 0
    dense = kind == DENSE
    fp64 = b.device.limits.fp64
    params = {"dh": code(seeds), "dw": code(ctx.inputs[2]) if weighted else None,
              "acc": "double" if fp64 else "float", "dense": dense}
    args = [In(0), In(1), *([In(2)] if weighted else []), Out(0), i32(x.dtype.itemsize),
            i32(rows), i32(numel(x.shape[1:]) * x.dtype.itemsize), i32(n_bits),
            i32(int(kind == SPARSE))]
    b.launch("lsh_projection", "lsh_projection", params,
             (n_hash * n_bits if dense else n_hash,), args)


register_kernel("LSH_PROJECTION", family="lsh_projection", support=support, plan=plan,
                host_inputs=[3])
