"""BATCH_MATMUL on OpenCL: the shared GEMM with one batch per output matrix.

A = x read in place (adj_x swaps its strides); B = y packed on the device by ``pack_b`` (adj_y
likewise swaps strides), once per y matrix. Broadcast batch dimensions (up to two) get batch
stride 0. FLOAT32, FLOAT16 (stored half), QUANT8_ASYMM_SIGNED (integer accumulation and the
reference requantization in the epilogue). TENSOR_INT32 (wrapping int32 products) is left to
the reference device.
"""

from __future__ import annotations

from clnn.kernels import _gemm, _gemm_variants
from clnn.kernels.registry import In, Out, register_kernel
from clnn.kernels.support import OT, code, constant_inputs, first, i32, types_in
from hal.operations import batch_matmul as hal_bmm
from hal.operations.common import qrange

TYPES = frozenset({OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16, OT.TENSOR_QUANT8_ASYMM_SIGNED})


def support(ctx):
    return first(types_in(ctx, 0, TYPES), constant_inputs(ctx, [2, 3], "adj flag"))


def _batch2(shape):
    b = [int(d) for d in shape[:-2]]
    return [1] * (2 - len(b)) + b


def _strides(dims, out_dims, per):
    """Batch strides (elements) of a [d0, d1] stack of matrices of ``per`` elements, 0 where
    the dimension is broadcast."""
    st = (dims[1] * per, per)
    return tuple(0 if d == 1 and o != 1 else s for d, o, s in zip(dims, out_dims, st))


def plan(ctx, b):
    x, y, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    adj_x, adj_y = hal_bmm.adjoint_flags(ctx)
    sx, sy, so = x.shape, y.shape, out.shape
    M, N = int(so[-2]), int(so[-1])
    K = int(sx[-2] if adj_x else sx[-1])
    sam, sak = (1, sx[-1]) if adj_x else (sx[-1], 1)
    sk, sn = (1, sy[-1]) if adj_y else (sy[-1], 1)
    ob, xb, yb = _batch2(so), _batch2(sx), _batch2(sy)
    dt = code(x)
    variant = _gemm_variants.device_default(b, N)
    tile = tuple(variant["tile"])
    nr = tile[1] * tile[2]
    bpk, per = _gemm.launch_pack_b(b, dt=dt, y=In(1), N=N, K=K, nr=nr, sk=int(sk), sn=int(sn),
                                   batch=tuple(yb), s_b=(yb[1] * sy[-1] * sy[-2],
                                                         sy[-1] * sy[-2]),
                                   zb=_gemm.zero_of(y))
    quant = dt == "i8"
    lo = hi = None
    requant = ()
    if quant:
        lo, hi = (i32(v) for v in qrange(out.type))
        requant = _gemm.requant_buffers(b, ctx, N, x, y)
    _gemm.launch_gemm(b, dt=dt, a=In(0), bpk=bpk, c=Out(0), M=M, N=N, K=K, tile=tile,
                      sam=int(sam), sak=int(sak), ldc=N, requant=requant, batch=tuple(ob),
                      a_b=_strides(xb, ob, int(sx[-1] * sx[-2])), b_b=_strides(yb, ob, per),
                      c_b=(ob[1] * M * N, M * N), za=_gemm.zero_of(x), zo=_gemm.zero_of(out),
                      lo=lo, hi=hi, wg=variant["wg"])


register_kernel("BATCH_MATMUL", family="batch_matmul", support=support, plan=plan)
