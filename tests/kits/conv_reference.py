"""Reference computations the convolution-family tests check against: a loop convolution, the
requantization in double precision, and an operation's execute() called on arrays."""

from __future__ import annotations

import numpy as np

from hal.operations import lookup
from hal.operations.context import OperandInfo, OperationContext
from hal.types import OperandType, OperationType


def naive_conv(x, f, b, stride=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), groups=1):
    """Loop reference. x NHWC, f [O, KH, KW, C / groups], pads (top, bottom, left, right)."""
    n, h, w, c = x.shape
    o, kh, kw, cg = f.shape
    top, bottom, left, right = pads
    oh = (h + top + bottom - (kh - 1) * dil[0] - 1) // stride[0] + 1
    ow = (w + left + right - (kw - 1) * dil[1] - 1) // stride[1] + 1
    out = np.zeros((n, oh, ow, o), dtype=np.float64)
    per_group = o // groups
    for bi in range(n):
        for y in range(oh):
            for xx in range(ow):
                for oc in range(o):
                    g = oc // per_group
                    acc = 0.0
                    for i in range(kh):
                        for j in range(kw):
                            iy = y * stride[0] + i * dil[0] - top
                            ix = xx * stride[1] + j * dil[1] - left
                            if 0 <= iy < h and 0 <= ix < w:
                                acc += float(np.dot(x[bi, iy, ix, g * cg:(g + 1) * cg],
                                                    f[oc, i, j]))
                    out[bi, y, xx, oc] = acc + b[oc]
    return out


def requant_ref(acc, real_multiplier):
    """Double-precision model of the requantization (round half away), for +-1 checks."""
    v = acc * real_multiplier
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def execute_direct(op, tensors, scalars, out_type="TENSOR_FLOAT32", out_quant=()):
    """Call an op's execute() directly; tensors are (type, value[, scale, zero point]).
    Zero-sized inputs cannot be request inputs: they only arise inside a model."""
    infos = [OperandInfo(OperandType[t], v.shape, *q, value=v) for t, v, *q in tensors]
    for v in scalars:
        t, arr = (OperandType.BOOL, np.array(v, np.bool_)) if isinstance(v, bool) else \
            (OperandType.INT32, np.array(v, np.int32))
        infos.append(OperandInfo(t, (), value=arr))
    out = OperandInfo(OperandType[out_type], (), *out_quant)
    ctx = OperationContext(OperationType[op], infos, [out])
    (y,) = lookup(OperationType[op]).execute(ctx)
    return y
