"""Operators beyond the issue's list that real models use and NNAPI can express: DepthToSpace /
SpaceToDepth (NCHW layout flag), Tile / Expand (TILE), Where (SELECT), ArgMax / ArgMin,
TopK, LayerNormalization (decomposed: MEAN, SUB, MUL, MEAN, ADD, RSQRT, MUL, MUL, ADD),
Softplus (EXP, ADD, LOG), Ceil (NEG, FLOOR, NEG), and Erf / Gelu (a polynomial of NNAPI
arithmetic, as NNAPI has no ERF)."""

from __future__ import annotations

import numpy as np

from clnn.onnx.ops_math import broadcast_shape
from hal.types import OperandType

OT = OperandType


def depth_space(imp, n):
    x = n.input(0)
    block = int(n.attr("blocksize"))
    mode = n.attr("mode", "DCR")
    nn = "DEPTH_TO_SPACE" if n.op_type == "DepthToSpace" else "SPACE_TO_DEPTH"
    xo = imp.operand(x)
    if mode == "CRD":  # NNAPI's is DCR: reorder the channels first (a GATHER)
        s = imp.shape(x)
        c = s[1] // (block * block)
        if not c:
            imp.fail("attribute 'mode'='CRD' needs a known channel count")
        idx = [k * block * block + i * block + j for i in range(block) for j in range(block)
               for k in range(c)]
        t = imp.temp(x, s)
        imp.emit("GATHER", [xo, imp.int32(1), imp.ints(idx)], [t])
        xo = t
    elif mode != "DCR":
        imp.fail(f"attribute 'mode'={mode!r} has no mapping")
    y = imp.output(n.outputs[0], like=x)
    imp.emit(nn, [xo, imp.int32(block), imp.bool(True)], [y])


def _tile(imp, x, out_name, in_shape, out_shape):
    """TILE ``x`` (rank-padded with a RESHAPE when needed) into ``out_shape``."""
    xo = imp.operand(x)
    if len(in_shape) < len(out_shape):
        in_shape = (1,) * (len(out_shape) - len(in_shape)) + tuple(in_shape)
        t = imp.temp(x, in_shape)
        imp.emit("RESHAPE", [xo, imp.ints([d or -1 for d in in_shape])], [t])
        xo = t
    if 0 in in_shape or 0 in out_shape:
        imp.fail(f"tiling {list(in_shape)} to {list(out_shape)} needs known dimensions")
    mult = [o // i for i, o in zip(in_shape, out_shape)]
    y = imp.output(out_name, shape=out_shape, like=x)
    imp.emit("TILE", [xo, imp.ints(mult)], [y])


def tile(imp, n):
    x = n.input(0)
    reps = [int(r) for r in imp.const_input(n, 1, "repeats").reshape(-1)]
    s = imp.static_shape(x)
    _tile(imp, x, n.outputs[0], s, tuple(d * r for d, r in zip(s, reps)))


def expand(imp, n):
    x = n.input(0)
    target = tuple(int(d) for d in imp.const_input(n, 1, "the shape").reshape(-1))
    s = imp.static_shape(x)
    out = broadcast_shape(s, target)
    if tuple(out) == tuple(s):
        imp.alias(n.outputs[0], x)
        return
    _tile(imp, x, n.outputs[0], s, out)


def where(imp, n):
    """SELECT takes equal shapes: constants are broadcast at import, other inputs must have
    the output's shape already."""
    out = imp.shape(n.outputs[0])
    like = n.input(1) if imp.const(n.input(1)) is None else n.input(2)
    ops = []
    for name in n.inputs:
        v = imp.const(name)
        if v is not None:
            if out is None or 0 in out:
                imp.fail("broadcasting a constant needs the output's shape")
            v = np.broadcast_to(v, out)
            ops.append(imp.float_like(v, like) if v.dtype.kind == "f" else imp.tensor_const(v))
        elif tuple(imp.shape(name) or ()) != tuple(out or ()):
            imp.fail(f"input {name!r} of shape {list(imp.shape(name) or [])} would need "
                     f"broadcasting to {list(out or [])} (SELECT does not broadcast)")
        else:
            ops.append(imp.operand(name))
    y = imp.output(n.outputs[0], like=like)
    imp.emit("SELECT", ops, [y])


def argmax(imp, n):
    x = n.input(0)
    rank = imp.rank(x)
    axis = n.attr("axis", 0)
    axis = axis + rank if axis < 0 else axis
    if n.attr("select_last_index", 0):
        imp.fail("attribute 'select_last_index'=1 has no mapping")
    keep = n.attr("keepdims", 1)
    nn = "ARGMAX" if n.op_type == "ArgMax" else "ARGMIN"
    s = imp.shape(x)
    reduced = tuple(d for i, d in enumerate(s) if i != axis)
    if not keep:
        y = imp.output(n.outputs[0], shape=reduced, type=OT.TENSOR_INT32)
        imp.emit(nn, [imp.operand(x), imp.int32(axis)], [y])
        return
    t = imp.b.tensor(OT.TENSOR_INT32, reduced)
    imp.emit(nn, [imp.operand(x), imp.int32(axis)], [t])
    kept = tuple(1 if i == axis else d for i, d in enumerate(s))
    y = imp.output(n.outputs[0], shape=kept, type=OT.TENSOR_INT32)
    imp.emit("EXPAND_DIMS", [t, imp.int32(axis)], [y])  # RESHAPE takes no INT32


def topk(imp, n):
    x = n.input(0)
    rank = imp.rank(x)
    axis = n.attr("axis", -1)
    if axis not in (-1, rank - 1):
        imp.fail(f"attribute 'axis'={axis} has no mapping (TOPK_V2 works on the last axis)")
    if not n.attr("largest", 1) or not n.attr("sorted", 1):
        imp.fail("only the largest values, sorted, are mapped (TOPK_V2)")
    k = int(imp.const_input(n, 1, "K").reshape(-1)[0]) if imp.opset >= 10 else int(n.attr("k"))
    values = imp.output(n.outputs[0], like=x)
    indices = imp.output(n.outputs[1], type=OT.TENSOR_INT32)
    imp.emit("TOPK_V2", [imp.operand(x), imp.int32(k)], [values, indices])


def layer_norm(imp, n):
    x = n.input(0)
    rank = imp.rank(x)
    axis = n.attr("axis", -1)
    axis = axis + rank if axis < 0 else axis
    n.attr("stash_type")
    if len([o for o in n.outputs if o]) > 1:
        imp.fail("the Mean and InvStdDev outputs have no mapping")
    s = imp.shape(x)
    axes = imp.ints(list(range(axis, rank)))
    red = tuple(1 if i >= axis else d for i, d in enumerate(s))
    xo, keep, none = imp.operand(x), imp.int32(1), imp.int32(0)
    mean, var = imp.temp(x, red), imp.temp(x, red)
    d, sq = imp.temp(x, s), imp.temp(x, s)
    ve, r = imp.temp(x, red), imp.temp(x, red)
    imp.emit("MEAN", [xo, axes, keep], [mean])
    imp.emit("SUB", [xo, mean, none], [d])
    imp.emit("MUL", [d, d, none], [sq])
    imp.emit("MEAN", [sq, axes, keep], [var])
    imp.emit("ADD", [var, imp.float_like([n.attr("epsilon", 1e-5)], x), none], [ve])
    imp.emit("RSQRT", [ve], [r])
    y = imp.output(n.outputs[0], like=x)
    scale = imp.const(n.input(1))
    bias = imp.const(n.input(2)) if n.input(2) else None
    if bias is None and n.input(2):
        imp.fail("the bias B (input 2) must be a constant")
    last = y if bias is None else imp.temp(x, s)
    if scale is not None and np.all(scale == 1):
        imp.emit("MUL", [d, r, none], [last])
    else:
        nrm = imp.temp(x, s)
        imp.emit("MUL", [d, r, none], [nrm])
        sc = imp.float_like(scale, x) if scale is not None else imp.operand(n.input(1))
        imp.emit("MUL", [nrm, sc, none], [last])
    if bias is not None:
        imp.emit("ADD", [last, imp.float_like(bias, x), none], [y])


def softplus(imp, n):
    """log(1 + exp(x)): exact in float32 for x below ~88, where exp overflows."""
    x = n.input(0)
    s = imp.shape(x)
    e, p = imp.temp(x, s), imp.temp(x, s)
    y = imp.output(n.outputs[0], like=x)
    imp.emit("EXP", [imp.operand(x)], [e])
    imp.emit("ADD", [e, imp.float_like([1.0], x), imp.int32(0)], [p])
    imp.emit("LOG", [p], [y])


def pad_by_copies(imp, x, out, pairs, mode):
    """Pad ``x`` by "reflect" or "edge" (NNAPI 1.3 pads with constants only): per padded axis,
    the pieces are reversed STRIDED_SLICEs of the borders (reflect) or the border row TILEd
    (edge), CONCATENATED around the tensor."""
    s = list(imp.static_shape(x, "a reflect / edge Pad's input"))
    rank = len(s)
    cur = imp.operand(x)
    padded = [k for k, (b, e) in enumerate(pairs) if b or e]
    for step, axis in enumerate(padded):
        b, e = pairs[axis]
        dim = s[axis]
        if mode == "reflect" and max(b, e) > dim - 1:
            imp.fail(f"reflect pads {b}, {e} exceed the dimension {dim} less one")
        pieces = []
        for side, width in (("begin", b), ("end", e)):
            if not width:
                continue
            shape = s[:axis] + [width] + s[axis + 1:]
            piece = imp.temp(x, shape)
            begin, end, stride = [0] * rank, [0] * rank, [1] * rank
            mask = (1 << rank) - 1 & ~(1 << axis)  # every other axis whole
            end_mask = mask
            if mode == "reflect":
                stride[axis] = -1
                if side == "begin":  # x[width], ..., x[1]
                    begin[axis], end[axis] = width, 0
                else:  # x[dim - 2], ..., x[dim - 1 - width]
                    begin[axis], end[axis] = dim - 2, dim - 2 - width
                    if end[axis] < 0:
                        end_mask |= 1 << axis
                imp.emit("STRIDED_SLICE", [cur, imp.ints(begin), imp.ints(end), imp.ints(stride),
                                           imp.int32(mask), imp.int32(end_mask), imp.int32(0)],
                         [piece])
            else:
                row = imp.temp(x, s[:axis] + [1] + s[axis + 1:])
                begin[axis] = 0 if side == "begin" else dim - 1
                end[axis] = begin[axis] + 1
                imp.emit("STRIDED_SLICE", [cur, imp.ints(begin), imp.ints(end), imp.ints(stride),
                                           imp.int32(mask), imp.int32(end_mask), imp.int32(0)],
                         [row])
                mult = [1] * rank
                mult[axis] = width
                imp.emit("TILE", [row, imp.ints(mult)], [piece])
            pieces.append((side, piece))
        s[axis] = dim + b + e
        ordered = [p for side, p in pieces if side == "begin"] + [cur] + \
            [p for side, p in pieces if side == "end"]
        last = step == len(padded) - 1
        nxt = imp.output(out, shape=s, like=x) if last else imp.temp(x, s)
        imp.emit("CONCATENATION", [*ordered, imp.int32(axis)], [nxt])
        cur = nxt
    if not padded:
        imp.alias(out, x)


def mish(imp, n):
    """x tanh(softplus(x)): EXP, ADD, LOG, TANH, MUL."""
    x = n.input(0)
    s = imp.shape(x)
    xo = imp.operand(x)
    e, p, sp, th = (imp.temp(x, s) for _ in range(4))
    imp.emit("EXP", [xo], [e])
    imp.emit("ADD", [e, imp.float_like([1.0], x), imp.int32(0)], [p])
    imp.emit("LOG", [p], [sp])
    imp.emit("TANH", [sp], [th])
    imp.emit("MUL", [xo, th, imp.int32(0)], [imp.output(n.outputs[0], like=x)])


def selu_celu(imp, n):
    """Selu = gamma ELU(x, alpha); Celu = alpha ELU(x / alpha, 1): ELU between MULs."""
    x = n.input(0)
    s = imp.shape(x)
    alpha = n.attr("alpha", 1.6732632423543772 if n.op_type == "Selu" else 1.0)
    xo = imp.operand(x)
    if n.op_type == "Celu":
        pre = imp.temp(x, s)
        imp.emit("MUL", [xo, imp.float_like([1 / alpha], x), imp.int32(0)], [pre])
        xo, elu_alpha, post = pre, 1.0, alpha
    else:
        elu_alpha, post = alpha, n.attr("gamma", 1.0507009873554805)
    e = imp.temp(x, s)
    imp.emit("ELU", [xo, imp.scalar_like(elu_alpha, x)], [e])
    imp.emit("MUL", [e, imp.float_like([post], x), imp.int32(0)],
             [imp.output(n.outputs[0], like=x)])


def image_scaler(imp, n):
    """The opset < 9 ImageScaler: scale * x + bias per channel (MUL, ADD)."""
    from clnn.onnx.ops_norm import scale_shift

    x = n.input(0)
    bias = np.asarray(n.attr("bias", [0.0]), np.float64)
    c = imp.static_shape(x)[1]
    scale_shift(imp, x, imp.output(n.outputs[0], like=x), np.full(c, n.attr("scale", 1.0)),
                np.broadcast_to(bias, (c,)))


def ceil(imp, n):
    x = n.input(0)
    s = imp.shape(x)
    a, b = imp.temp(x, s), imp.temp(x, s)
    y = imp.output(n.outputs[0], like=x)
    imp.emit("NEG", [imp.operand(x)], [a])
    imp.emit("FLOOR", [a], [b])
    imp.emit("NEG", [b], [y])


#: Abramowitz & Stegun 7.1.26: erf(x) = 1 - t (a1 + t (a2 + ... + t a5)) exp(-x^2) for x >= 0,
#: t = 1 / (1 + p x), absolute error below 1.5e-7 (float32's own rounding is ~6e-8)
ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def emit_erf(imp, like, xo, shape, y):
    """erf of operand ``xo`` into operand ``y`` with NNAPI's arithmetic (it has no ERF)."""
    def t():
        return imp.temp(like, shape)

    def op(nn, *ins, fuse=True):
        out = t()
        imp.emit(nn, [*ins, *([imp.int32(0)] if fuse else [])], [out])
        return out

    def c(v):
        return imp.float_like([v], like)

    a = op("ABS", xo, fuse=False)
    tt = op("DIV", c(1.0), op("ADD", op("MUL", a, c(ERF_P)), c(1.0)))
    h = op("MUL", tt, c(ERF_A[4]))
    for coef in ERF_A[3::-1]:
        h = op("MUL", op("ADD", h, c(coef)), tt)
    e = op("EXP", op("NEG", op("MUL", a, a), fuse=False), fuse=False)
    erf_abs = op("SUB", c(1.0), op("MUL", h, e))
    sign = op("DIV", xo, op("ADD", a, c(1e-30)))  # x / |x|, 0 at 0
    imp.emit("MUL", [erf_abs, sign, imp.int32(0)], [y])


def erf(imp, n):
    x = n.input(0)
    if not imp.is_float(x):
        imp.fail("only float inputs are mapped")
    emit_erf(imp, x, imp.operand(x), imp.shape(x), imp.output(n.outputs[0], like=x))


def gelu(imp, n):
    """0.5 x (1 + erf(x / sqrt 2)), or with approximate="tanh" its tanh form."""
    x = n.input(0)
    s = imp.shape(x)
    xo = imp.operand(x)
    inner = imp.temp(x, s)
    if n.attr("approximate", "none") == "tanh":
        x3 = imp.temp(x, s)
        imp.emit("MUL", [xo, xo, imp.int32(0)], [x3])
        cube = imp.temp(x, s)
        imp.emit("MUL", [x3, xo, imp.int32(0)], [cube])
        poly = imp.temp(x, s)
        imp.emit("MUL", [cube, imp.float_like([0.044715], x), imp.int32(0)], [poly])
        arg = imp.temp(x, s)
        imp.emit("ADD", [poly, xo, imp.int32(0)], [arg])
        scaled = imp.temp(x, s)
        imp.emit("MUL", [arg, imp.float_like([np.sqrt(2 / np.pi)], x), imp.int32(0)], [scaled])
        imp.emit("TANH", [scaled], [inner])
    elif n.attrs.get("approximate", "none") == "none":
        half = imp.temp(x, s)
        imp.emit("MUL", [xo, imp.float_like([1 / np.sqrt(2)], x), imp.int32(0)], [half])
        emit_erf(imp, x, half, s, inner)
    else:
        imp.fail(f"attribute 'approximate'={n.attrs['approximate']!r} has no mapping")
    one = imp.temp(x, s)
    imp.emit("ADD", [inner, imp.float_like([1.0], x), imp.int32(0)], [one])
    hx = imp.temp(x, s)
    imp.emit("MUL", [xo, imp.float_like([0.5], x), imp.int32(0)], [hx])
    imp.emit("MUL", [hx, one, imp.int32(0)], [imp.output(n.outputs[0], like=x)])


CONVERTERS = {
    "Erf": erf,
    "Gelu": gelu,
    "DepthToSpace": depth_space,
    "SpaceToDepth": depth_space,
    "Tile": tile,
    "Expand": expand,
    "Where": where,
    "ArgMax": argmax,
    "ArgMin": argmax,
    "TopK": topk,
    "LayerNormalization": layer_norm,
    "Softplus": softplus,
    "Ceil": ceil,
    "Mish": mish,
    "Selu": selu_celu,
    "Celu": selu_celu,
    "ImageScaler": image_scaler,
}
