"""Element-wise arithmetic (NNAPI broadcasts as NumPy does, as ONNX since opset 7),
activations, Softmax / LogSoftmax and the matrix products (Gemm, MatMul)."""

from __future__ import annotations

import numpy as np

from hal.types import OperandType

OT = OperandType
FLOAT_MAX = float(np.finfo(np.float32).max)

#: ONNX binary operators -> (NNAPI operation, whether it takes a fuse code)
BINARY = {"Add": ("ADD", True), "Sub": ("SUB", True), "Mul": ("MUL", True),
          "Div": ("DIV", True), "Pow": ("POW", False), "Min": ("MINIMUM", False),
          "Max": ("MAXIMUM", False), "Sum": ("ADD", True), "Equal": ("EQUAL", False),
          "Less": ("LESS", False), "Greater": ("GREATER", False),
          "LessOrEqual": ("LESS_EQUAL", False), "GreaterOrEqual": ("GREATER_EQUAL", False),
          "And": ("LOGICAL_AND", False), "Or": ("LOGICAL_OR", False)}
BOOLEAN = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or"}
UNARY = {"Relu": "RELU", "Sigmoid": "LOGISTIC", "Tanh": "TANH", "Sqrt": "SQRT", "Exp": "EXP",
         "Log": "LOG", "Abs": "ABS", "Neg": "NEG", "Floor": "FLOOR", "Sin": "SIN",
         "HardSwish": "HARD_SWISH", "Not": "LOGICAL_NOT"}


def binary(imp, n):
    """Add/Sub/Mul/Div/Pow/Min/Max/Sum and comparisons; variadic ones (Sum/Min/Max) as a
    chain of the binary operation."""
    nn, fused = BINARY[n.op_type]
    names = [x for x in n.inputs if x]
    if len(names) == 1:
        imp.alias(n.outputs[0], names[0])
        return
    like = next((x for x in names if imp.const(x) is None), names[0])
    boolean = n.op_type in BOOLEAN
    acc, acc_shape = _same_float(imp, names[0], like), imp.shape(names[0])
    for k, x in enumerate(names[1:], start=2):
        acc_shape = broadcast_shape(acc_shape, imp.shape(x))
        if k == len(names):
            out = imp.output(n.outputs[0], like="" if boolean else like)
        else:
            out = imp.temp(like, acc_shape)
        imp.emit(nn, [acc, _same_float(imp, x, like), *([imp.int32(0)] if fused else [])],
                 [out])
        acc = out


def broadcast_shape(a, b):
    """NumPy's broadcast of two shapes, 0 where a dimension is unknown."""
    if a is None or b is None:
        return ()
    r = max(len(a), len(b))
    a, b = (1,) * (r - len(a)) + tuple(a), (1,) * (r - len(b)) + tuple(b)
    return tuple(0 if 0 in (x, y) else max(x, y) for x, y in zip(a, b))


def _same_float(imp, name, like):
    """The operand of ``name``; a float constant takes the float type of ``like`` (ONNX
    requires equal types; this keeps float64 constants from becoming another type)."""
    v = imp.const(name)
    if v is not None and v.dtype.kind == "f" and imp.is_float(like):
        return imp.float_like(v, like)
    return imp.operand(name)


def unary(imp, n):
    x = n.input(0)
    y = imp.output(n.outputs[0], like=x)
    imp.emit(UNARY[n.op_type], [imp.operand(x)], [y])


def reciprocal(imp, n):
    x = n.input(0)
    y = imp.output(n.outputs[0], like=x)
    imp.emit("DIV", [imp.float_like([1.0], x), imp.operand(x), imp.int32(0)], [y])


def leaky_relu(imp, n):
    x = n.input(0)
    y = imp.output(n.outputs[0], like=x)
    imp.emit("PRELU", [imp.operand(x), imp.float_like([n.attr("alpha", 0.01)], x)], [y])


def prelu(imp, n):
    x, slope = n.input(0), n.input(1)
    y = imp.output(n.outputs[0], like=x)
    imp.emit("PRELU", [imp.operand(x), _same_float(imp, slope, x)], [y])


def elu(imp, n):
    x = n.input(0)
    y = imp.output(n.outputs[0], like=x)
    imp.emit("ELU", [imp.operand(x), imp.scalar_like(n.attr("alpha", 1.0), x)], [y])


def clip(imp, n):
    """RELU / RELU1 / RELU6 when the bounds are theirs, else MAXIMUM and MINIMUM."""
    x = n.input(0)
    if imp.opset < 11:
        lo, hi = n.attr("min", -FLOAT_MAX), n.attr("max", FLOAT_MAX)
    else:
        lo = imp.const_input(n, 1, "min") if n.input(1) else None
        hi = imp.const_input(n, 2, "max") if n.input(2) else None
        lo = -FLOAT_MAX if lo is None else float(lo.reshape(-1)[0])
        hi = FLOAT_MAX if hi is None else float(hi.reshape(-1)[0])
    y = imp.output(n.outputs[0], like=x)
    xo = imp.operand(x)
    special = {(0.0, 6.0): "RELU6", (-1.0, 1.0): "RELU1", (0.0, FLOAT_MAX): "RELU"}
    if (lo, hi) in special and imp.is_float(x):
        imp.emit(special[(lo, hi)], [xo], [y])
        return
    t = imp.temp(x, imp.shape(x))
    imp.emit("MAXIMUM", [xo, imp.float_like([lo], x)], [t])
    imp.emit("MINIMUM", [t, imp.float_like([hi], x)], [y])


def hard_sigmoid(imp, n):
    """max(0, min(1, alpha * x + beta)) = RELU6(6 alpha x + 6 beta) / 6: MUL, ADD with the
    RELU6 fuse code, MUL. With ``quantized="onnxruntime"`` onnxruntime's own rounding (its
    QDQ models leave HardSigmoid in float between DequantizeLinear and QuantizeLinear, so the
    last bit decides some quantized values, clnn bench quant): MUL by alpha, ADD of beta with
    the RELU fuse code, MINIMUM with 1."""
    x = n.input(0)
    alpha, beta = n.attr("alpha", 0.2), n.attr("beta", 0.5)
    shape = imp.shape(x)
    t1, t2 = imp.temp(x, shape), imp.temp(x, shape)
    y = imp.output(n.outputs[0], like=x)
    if imp.quantized == "onnxruntime":  # its rounding: alpha x + beta, then the clamp
        imp.emit("MUL", [imp.operand(x), imp.float_like([alpha], x), imp.int32(0)], [t1])
        imp.emit("ADD", [t1, imp.float_like([beta], x), imp.int32(1)], [t2])
        imp.emit("MINIMUM", [t2, imp.float_like([1.0], x)], [y])
        return
    imp.emit("MUL", [imp.operand(x), imp.float_like([6 * alpha], x), imp.int32(0)], [t1])
    imp.emit("ADD", [t1, imp.float_like([6 * beta], x), imp.int32(3)], [t2])
    imp.emit("MUL", [t2, imp.float_like([1 / 6], x), imp.int32(0)], [y])


def softmax(imp, n):
    """SOFTMAX / LOG_SOFTMAX on an axis; before opset 13 the input is seen as 2-D
    [prod(dims before axis), prod(the rest)], which is one axis only when it is the last."""
    x = n.input(0)
    rank = imp.rank(x)
    axis = n.attr("axis", 1 if imp.opset < 13 else -1)
    axis = axis + rank if axis < 0 else axis
    nn = "SOFTMAX" if n.op_type == "Softmax" else "LOG_SOFTMAX"
    y = imp.output(n.outputs[0], like=x)
    beta = imp.scalar_like(1.0, x)
    if imp.opset >= 13 or axis == rank - 1:
        imp.emit(nn, [imp.operand(x), beta, imp.int32(axis)], [y])
        return
    s = imp.shape(x)
    if list(s).count(0) > 1:  # one unknown dimension (a dynamic batch) RESHAPE can infer
        imp.fail(f"the input shape {list(s)} has more than one unknown dimension")
    flat = tuple(0 if 0 in part else int(np.prod(part)) for part in (s[:axis], s[axis:]))
    t1, t2 = imp.temp(x, flat), imp.temp(x, flat)
    imp.emit("RESHAPE", [imp.operand(x), imp.ints([d or -1 for d in flat])], [t1])
    imp.emit(nn, [t1, beta, imp.int32(1)], [t2])
    imp.emit("RESHAPE", [t2, imp.ints([d or -1 for d in s])], [y])


def gemm(imp, n):
    a, c = n.input(0), n.input(2)
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    trans_a, trans_b = n.attr("transA", 0), n.attr("transB", 0)
    b = imp.const(n.input(1))
    cv = imp.const(c) if c else np.zeros(1, np.float32)
    sa = imp.shape(a)
    ao = imp.operand(a)
    if trans_a:
        t = imp.temp(a, (sa[1], sa[0]) if sa else (0, 0))
        imp.emit("TRANSPOSE", [ao, imp.ints([1, 0])], [t])
        ao = t
    if b is not None and cv is not None and imp.is_float(a):
        w = (b if trans_b else b.T) * alpha
        nout = w.shape[0]
        cb = np.asarray(cv, np.float64) * beta
        if cb.ndim < 2 or cb.shape[0] == 1:  # one bias row: FULLY_CONNECTED's bias
            bias, add = np.broadcast_to(cb.reshape(-1), (nout,)), None
        else:
            bias, add = np.zeros(nout), cb
        y = imp.output(n.outputs[0], like=a)
        out = imp.temp(a, imp.shape(n.outputs[0])) if add is not None else y
        imp.emit("FULLY_CONNECTED", [ao, imp.float_like(np.ascontiguousarray(w), a),
                                     imp.float_like(bias, a), imp.int32(0)], [out])
        if add is not None:
            imp.emit("ADD", [out, imp.float_like(add, a), imp.int32(0)], [y])
        return
    y = imp.output(n.outputs[0], like=a)
    last = alpha == 1.0 and not (c and beta)
    out = y if last else imp.temp(a, imp.shape(n.outputs[0]))
    imp.emit("BATCH_MATMUL", [ao, imp.operand(n.input(1)), imp.bool(False),
                              imp.bool(bool(trans_b))], [out])
    if last:
        return
    if alpha != 1.0:
        nxt = y if not (c and beta) else imp.temp(a, imp.shape(n.outputs[0]))
        imp.emit("MUL", [out, imp.float_like([alpha], a), imp.int32(0)], [nxt])
        out = nxt
    if c and beta:
        cc = imp.float_like(cv * beta, a) if cv is not None else imp.operand(c)
        if cv is None and beta != 1.0:
            imp.fail(f"attribute 'beta'={beta} with a non-constant C has no mapping")
        imp.emit("ADD", [out, cc, imp.int32(0)], [y])


def matmul(imp, n):
    """FULLY_CONNECTED for a constant 2-D right side (RESHAPE back to [..., M, N] for a
    higher-rank left side), else BATCH_MATMUL."""
    a, bn = n.input(0), n.input(1)
    b = imp.const(bn)
    sa, sb = imp.shape(a), imp.shape(bn)
    if sa is None or sb is None:
        imp.fail("the operands' ranks are unknown")
    if len(sa) == 1 or len(sb) == 1:
        _matmul_vector(imp, n, sa, sb)
        return
    y = imp.output(n.outputs[0], like=a)
    if b is not None and b.ndim == 2 and imp.is_float(a):
        fc_args = [imp.float_like(np.ascontiguousarray(b.T), a),
                   imp.float_like(np.zeros(b.shape[1]), a), imp.int32(0)]
        if len(sa) == 2:
            imp.emit("FULLY_CONNECTED", [imp.operand(a), *fc_args], [y])
            return
        t = imp.temp(a, (int(np.prod(sa[:-1])) if 0 not in sa[:-1] else 0, b.shape[1]))
        imp.emit("FULLY_CONNECTED", [imp.operand(a), *fc_args], [t])
        ys = imp.shape(n.outputs[0])
        target = [d if d else -1 for d in ys]
        if target.count(-1) > 1:
            imp.fail(f"the output shape {list(ys)} has more than one unknown dimension")
        imp.emit("RESHAPE", [t, imp.ints(target)], [y])
        return
    ops = []
    for name, s in ((a, sa), (bn, sb)):
        v = imp.const(name)
        if len(s) < max(len(sa), len(sb)):  # BATCH_MATMUL wants equal ranks
            full = (1,) * (max(len(sa), len(sb)) - len(s)) + tuple(s)
            if v is not None:
                ops.append(imp.tensor_const(v.reshape(full)))
                continue
            t = imp.temp(name, full)
            imp.emit("RESHAPE", [imp.operand(name), imp.ints([d or -1 for d in full])], [t])
            ops.append(t)
        else:
            ops.append(imp.operand(name))
    if max(len(sa), len(sb)) > 4:
        imp.fail("BATCH_MATMUL takes ranks up to 4")
    imp.emit("BATCH_MATMUL", ops, [y])


def _matmul_vector(imp, n, sa, sb):
    """A rank-1 operand is a [1, K] row (left) or a [K, 1] column (right), as NumPy's matmul
    sees it; the product of those is reshaped to the ONNX output, which drops that dim."""
    from onnx import helper

    names = []
    for k, (name, s) in enumerate(((n.input(0), sa), (n.input(1), sb))):
        if len(s) != 1:
            names.append(name)
            continue
        shape2 = (1, s[0]) if k == 0 else (s[0], 1)
        alias = f"{name}\0as2d"
        v = imp.const(name)
        if v is not None:
            imp.consts[alias] = v.reshape(shape2)
        else:
            t = imp.temp(name, shape2)
            imp.emit("RESHAPE", [imp.operand(name), imp.ints([d or -1 for d in shape2])], [t])
            imp.operands[alias] = t
        names.append(alias)
    out = n.outputs[0]
    wide = f"{out}\0as2d"
    ra, rb = imp.shape(names[0]), imp.shape(names[1])
    imp.shape_override[wide] = (*broadcast_shape(ra[:-2], rb[:-2]), ra[-2], rb[-1])
    matmul(imp, type(n)(helper.make_node("MatMul", names, [wide]), n.index, {}, set()))
    y = imp.output(out, like=n.input(0) if imp.const(n.input(0)) is None else n.input(1))
    target = imp.shape(out)
    if list(target).count(0) > 1:
        imp.fail(f"the output shape {list(target)} has more than one unknown dimension")
    imp.emit("RESHAPE", [imp.operand(wide), imp.ints([d or -1 for d in target] or [1])], [y])


def mean(imp, n):
    """Mean of several inputs: a chain of ADD, then MUL by 1/count."""
    names = [x for x in n.inputs if x]
    if len(names) == 1:
        imp.alias(n.outputs[0], names[0])
        return
    like = next((x for x in names if imp.const(x) is None), names[0])
    acc, shape = _same_float(imp, names[0], like), imp.shape(names[0])
    for x in names[1:]:
        shape = broadcast_shape(shape, imp.shape(x))
        t = imp.temp(like, shape)
        imp.emit("ADD", [acc, _same_float(imp, x, like), imp.int32(0)], [t])
        acc = t
    y = imp.output(n.outputs[0], like=like)
    imp.emit("MUL", [acc, imp.float_like([1 / len(names)], like), imp.int32(0)], [y])


CONVERTERS = {
    **{k: binary for k in BINARY},
    **{k: unary for k in UNARY},
    "Reciprocal": reciprocal,
    "LeakyRelu": leaky_relu,
    "PRelu": prelu,
    "Elu": elu,
    "Clip": clip,
    "HardSigmoid": hard_sigmoid,
    "Softmax": softmax,
    "LogSoftmax": softmax,
    "Gemm": gemm,
    "MatMul": matmul,
    "Mean": mean,
}
