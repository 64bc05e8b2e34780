"""Small declarative support rules shared by the kernel families, each returning a reason.

    reason = first(types_in(ctx, 0, FLOAT_AND_QUANT8), constant_inputs(ctx, [2, 3]),
                   max_rank(ctx, 0, 4))
"""

from __future__ import annotations

import math

import numpy as np

from hal.operations.common import (
    CLAMP_OPERATIONS,
    activation_range_float,
    activation_range_quant,
    quantize_multiplier,
)
from hal.operations.context import OperandInfo, OperationContext
from hal.types import OperandType

OT = OperandType

#: storage code of each tensor type in the templates (common.mako CTYPE)
DTYPE_CODE = {
    OT.TENSOR_FLOAT32: "f32", OT.TENSOR_FLOAT16: "f16", OT.TENSOR_QUANT8_ASYMM: "u8",
    OT.TENSOR_QUANT8_ASYMM_SIGNED: "i8", OT.TENSOR_INT32: "i32", OT.TENSOR_BOOL8: "b8",
    OT.TENSOR_QUANT8_SYMM: "i8", OT.TENSOR_QUANT16_SYMM: "i16", OT.TENSOR_QUANT16_ASYMM: "u16",
    OT.TENSOR_QUANT8_SYMM_PER_CHANNEL: "i8",
}
FLOAT = frozenset({OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16})
QUANT8 = frozenset({OT.TENSOR_QUANT8_ASYMM, OT.TENSOR_QUANT8_ASYMM_SIGNED})
FLOAT_QUANT8 = FLOAT | QUANT8
FLOAT_QUANT8_INT32 = FLOAT_QUANT8 | {OT.TENSOR_INT32}
ANY_STORED = frozenset(DTYPE_CODE)
#: activation operations a convolution epilogue computes as a function (common.mako post_fn;
#: SILU: x * sigmoid(x), the LOGISTIC and MUL pair clnn/fusion/ fuses as one)
EPILOGUE_FUNCTIONS = ("LOGISTIC", "HARD_SWISH", "SILU")
#: activation operations that are a clamp
CLAMPS = tuple(CLAMP_OPERATIONS)


def first(*reasons):
    for r in reasons:
        if r:
            return r
    return None


def code(info: OperandInfo) -> str:
    return DTYPE_CODE[info.type]


def types_in(ctx: OperationContext, index: int, allowed, what: str = "input") -> str | None:
    info = ctx.inputs[index] if what == "input" else ctx.outputs[index]
    if info.type not in allowed:
        return f"{what} {index} type {info.type.name} is not supported by the OpenCL kernels"
    return None


def constant_inputs(ctx: OperationContext, indexes, what: str = "parameter") -> str | None:
    for i in indexes:
        if ctx.has_input(i) and not ctx.inputs[i].is_constant:
            return f"input {i} ({what}) must be a constant operand on OpenCL"
    return None


def max_rank(ctx: OperationContext, index: int, rank: int) -> str | None:
    r = ctx.inputs[index].rank
    if r > rank:
        return f"input {index} has rank {r}; the OpenCL kernels take rank <= {rank}"
    return None


def no_per_channel(ctx: OperationContext) -> str | None:
    for k, i in enumerate(ctx.inputs):
        if i.channel_quant is not None:
            return f"input {k} has per-channel quantization, not supported by this kernel"
    return None


# ------------------------------------------------------------------ kernel arguments

def i32(v) -> np.int32:
    return np.int32(v)


def f32(v) -> np.float32:
    return np.float32(v)


def act_args(ctx: OperationContext, index: int | None, out: OperandInfo):
    """(lo, hi) clamp of a fused activation at input ``index`` (None: no activation) as kernel
    arguments: float for float outputs, the quantized range for quantized outputs."""
    act = 0 if index is None or not ctx.has_input(index) else int(ctx.scalar(index) or 0)
    if out.type in QUANT8:
        lo, hi = activation_range_quant(act, out)
        return [i32(lo), i32(hi)]
    lo, hi = activation_range_float(act)
    return [f32(lo), f32(hi)]


def qmul(real: float):
    """(multiplier, shift) kernel arguments of a real multiplier (fixed-point, like the
    reference's QuantizeMultiplier)."""
    q, s = quantize_multiplier(real)
    return [i32(q), i32(s)]


def numel(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def strides_of(shape) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= int(d)
    return out[::-1]


def bcast_args(a_shape, b_shape, out_shape):
    """Kernel arguments of common.mako bcast_params() (4-D, broadcast strides 0) and whether
    broadcasting is needed at all."""
    from clnn.kernels.registry import Unplannable

    if len(out_shape) > 4:
        raise Unplannable("rank > 4")
    out = [1] * (4 - len(out_shape)) + [int(d) for d in out_shape]

    def strides(shape):
        shape = [1] * (4 - len(shape)) + [int(d) for d in shape]
        st = strides_of(shape)
        return [0 if d == 1 and o != 1 else s for d, s, o in zip(shape, st, out)]

    bcast = tuple(a_shape) != tuple(out_shape) or tuple(b_shape) != tuple(out_shape)
    return bcast, [i32(d) for d in out[1:]] + [i32(s) for s in strides(a_shape)] + \
        [i32(s) for s in strides(b_shape)]


def row_broadcast(a_shape, b_shape, out_shape, min_row: int = 4):
    """("b_rows", row length) when a has the output's shape and b is one row repeated over the
    leading output dimensions (b's shape without leading 1s ends the output shape and is
    smaller), ("a_rows", length) the other way round, else None (common.mako flat_id /
    bcast_index)."""
    out = tuple(int(d) for d in out_shape)
    for mode, full, row in (("b_rows", a_shape, b_shape), ("a_rows", b_shape, a_shape)):
        r = [int(d) for d in row]
        while r and r[0] == 1:
            r.pop(0)
        n = math.prod(r)
        if tuple(full) == out and r and len(r) <= len(out) and tuple(out[-len(r):]) == \
                tuple(r) and min_row <= n < math.prod(out):
            return mode, n
    return None


def plane_broadcast(a_shape, b_shape, out_shape):
    """("b_planes", (inner, n, outer)) when a has the output's shape and b holds one value per
    plane of the output's middle dimensions (b's dimensions other than 1 are the output's
    dimensions s..e, with inner = the product of the output's dimensions after e larger than
    1; e.g. [C, 1, 1] against NCHW), ("a_planes", ...) the other way round, else None: the
    3-D launch (inner, n, outer) of common.mako flat_id / bcast_index."""
    out = tuple(int(d) for d in out_shape)
    for mode, full, small in (("b_planes", a_shape, b_shape), ("a_planes", b_shape, a_shape)):
        s = [1] * (len(out) - len(small)) + [int(d) for d in small]
        kept = [k for k, d in enumerate(s) if d != 1]
        if tuple(full) != out or len(s) != len(out) or not kept:
            continue
        lo, hi = kept[0], kept[-1] + 1
        inner = math.prod(out[hi:])
        if s[lo:hi] == list(out[lo:hi]) and inner > 1:
            return mode, (inner, math.prod(out[lo:hi]), math.prod(out[:lo]))
    return None


def row_vector(n: int, dt: str = "f32") -> int | None:
    """The widest float vector (16, 8 or 4 elements) no longer than a row of ``n``: the work of
    one of the ``-(-n // vw)`` work-items of a row in the ``*_vec`` kernels that take any row
    (``pool_vec``, ``prelu_vec``, ``resize_vec``, ``binary_vec``). Where vw does not divide n,
    the row's last work-item takes its last vw elements (``min(id * vw, n - vw)``), overlapping
    its neighbour, which computes and writes the same values there (no kernel of them writes
    in place). So one kernel per vector width serves every row length: a model's channel
    counts pick no kernel of their own, and a new model finds its kernels built by the models
    before it (issue #37). None where n < 4. Float16 storage (``dt`` "f16"): the widest
    vector dividing n (:func:`vector_width`; PoCL's vload_halfN faults on a vector whose
    address is no multiple of its size: no overlapping vector)."""
    if dt == "f16":
        return vector_width(n)
    return next((v for v in (16, 8, 4) if n >= v), None)


def vector_groups(n: int, vw: int) -> int:
    """The work-items of a row of ``n`` in vectors of ``vw`` (:func:`row_vector`)."""
    return -(-n // vw)


def vector_width(n: int) -> int | None:
    """The widest float vector (16, 8 or 4 elements) dividing ``n``: the work of one work-item
    of the element-wise ``*_vec`` kernels; None when none does."""
    return next((v for v in (16, 8, 4) if n % v == 0), None) if n > 0 else None


def row_local_size(row: int, rows: int, target: int = 256):
    """Work-group of a 2-D (row, rows) launch: whole rows, up to ``target`` work-items. PoCL's
    own choice for such launches is slower (it vectorizes dimension 0 of a work-group and pays
    per work-group; benchmarks/op_kernels.py times these launches)."""
    if row > target or row <= 0:
        return None
    k = 1
    while row * k * 2 <= target and rows % (k * 2) == 0:
        k *= 2
    return (row, k)


def copy_code(info: OperandInfo) -> str:
    """Storage code of the element size: data movement copies bits."""
    return {1: "u8", 2: "u16", 4: "i32"}[info.dtype.itemsize]


def _tensor_pair(t) -> list:
    """In(k) / Out(k) as it is, a (buffer, element offset) pair as its two arguments."""
    return [t[0], i32(t[1])] if isinstance(t, tuple) else [t]


def launch_strided_copy(b, x, y, shape, xs, ys, xb: int = 0, yb: int = 0,
                        name: str = "copy", params=None, extra=()):
    """Launch strided_copy.cl.mako ``name`` (copy, requant) over iteration ``shape``
    (rank <= 6) with element strides ``xs`` / ``ys`` and bases ``xb`` / ``yb``; x and y are
    In(k) / Out(k), or (buffer, element offset) pairs. Every family launches the same
    template, so one program per element size serves them all."""
    from clnn.kernels.registry import Unplannable

    shape, xs, ys = list(shape), list(xs), list(ys)
    # merge dimensions that are contiguous in both x and y
    k = len(shape) - 1
    while k > 0:
        if xs[k - 1] == xs[k] * shape[k] and ys[k - 1] == ys[k] * shape[k]:
            shape[k - 1] *= shape[k]
            xs[k - 1], ys[k - 1] = xs[k], ys[k]
            del shape[k], xs[k], ys[k]
        k -= 1
    if len(shape) > 6:
        raise Unplannable("more than 6 dimensions")
    pad = 6 - len(shape)
    shape, xs, ys = [1] * pad + shape, [0] * pad + xs, [0] * pad + ys
    rows = numel(shape[:5])
    params = params or {"dt": copy_code(b.ctx.outputs[0])}
    vw = copy_vector(shape[5], xs[5], ys[5]) if name == "copy" else 1
    if vw > 1:
        params = {**params, "vw": vw}
        extra = (*extra, i32(shape[5] - vw))  # (k5_last: the last vector's start)
    d5 = -(-shape[5] // vw)
    b.launch("strided_copy", name, params, (d5, rows),
             [*_tensor_pair(x), *_tensor_pair(y), i32(xb), i32(yb),
              *[i32(d) for d in shape[1:5]], i32(d5), *[i32(s) for s in xs],
              *[i32(s) for s in ys], *extra],
             local_size=row_local_size(d5, rows))


#: vector widths of a strided copy's work-item (strided_copy.cl.mako ``vw``): few, so that few
#: kernels compile. Inside a chain's task loop the compiler does not vectorize a copy, so an
#: element-by-element copy pays a call and six divisions per element: copy in vectors where the
#: innermost run allows (benchmarks/chain_rates.py; ``clnn run --profile`` per launch)
COPY_VECTORS = (16, 4)


def copy_vector(inner: int, xs: int, ys: int) -> int:
    """The elements a work-item copies along an innermost dimension of ``inner`` elements
    (strides ``xs`` in x, ``ys`` in y) where it is contiguous in both (else 1): the widest of
    :data:`COPY_VECTORS` that the run holds, the last vector overlapping the one before it
    where that width does not divide the run (strided_copy.cl.mako), else 1. One width for
    every run of 16 elements or more: pose_detection's copies were three kernel keys (16, 4
    and 1 elements), each compiled into its chain's program (#37)."""
    if xs != 1 or ys != 1:
        return 1
    return next((v for v in COPY_VECTORS if inner >= v and (v == COPY_VECTORS[0] or
                                                            inner % v == 0)), 1)
