"""``quantize_dynamic``'s operators: DynamicQuantizeLinear, ConvInteger, MatMulInteger.

DynamicQuantizeLinear computes its scale and zero point at run time, which an NNAPI operand
type cannot carry. Its three outputs are float tensors holding the integers: y = clamp(
round(x / scale) + zero point, 0, 255) with scale = (max(0, max x) - min(0, min x)) / 255
and zero point = clamp(round(-min(0, min x) / scale), 0, 255), round halving to even as
onnxruntime (REDUCE_MAX / REDUCE_MIN, MAXIMUM, MINIMUM, SUB, DIV, FLOOR, EQUAL, SELECT).
ConvInteger / MatMulInteger then run as float CONV_2D / FULLY_CONNECTED of (y - zero point)
and (w - w zero point), whose sums are the integers onnxruntime's int32 accumulators hold
(exact while below 2^24, as onnxruntime's own Cast to float after them), and the model's
Cast to float and Mul by the scales follow as float operations.
"""

from __future__ import annotations

import numpy as np

from clnn.onnx.qvalues import const_value, float_value, sub_node
from hal.types import OperandType

OT = OperandType
F32 = 1  # TensorProto.FLOAT


def round_half_even(imp, v: int, shape) -> int:
    """round(v), ties to even (onnxruntime's rounding), of a float operand."""
    def c(x):
        return imp.tensor_const(np.asarray([x], np.float32))

    def op(name, ins, typ=OT.TENSOR_FLOAT32):
        out = imp.b.tensor(typ, shape)
        imp.emit(name, ins, [out])
        return out

    fused = imp.int32(0)
    up = op("FLOOR", [op("ADD", [v, c(0.5), fused])])  # floor(v + 0.5)
    tie = op("EQUAL", [op("SUB", [up, v, fused]), c(0.5)], OT.TENSOR_BOOL8)
    half = op("FLOOR", [op("MUL", [up, c(0.5), fused])])
    odd = op("EQUAL", [op("SUB", [up, op("ADD", [half, half, fused]), fused]), c(1.0)],
             OT.TENSOR_BOOL8)
    down = op("LOGICAL_AND", [tie, odd], OT.TENSOR_BOOL8)
    return op("SELECT", [down, op("SUB", [up, c(1.0), fused]), up])


def dynamic_quantize_linear(imp, n):
    x = n.input(0)
    shape = imp.static_shape(x, "the input of DynamicQuantizeLinear")
    xo = imp.operand(x)
    axes = imp.ints(list(range(len(shape))))
    one = (1,)

    def t(s=one):
        return imp.b.tensor(OT.TENSOR_FLOAT32, s)

    def c(v):
        return imp.tensor_const(np.asarray([v], np.float32))

    fused = imp.int32(0)
    mx, mn = t(), t()
    imp.emit("REDUCE_MAX", [xo, axes, imp.bool(False)], [mx])
    imp.emit("REDUCE_MIN", [xo, axes, imp.bool(False)], [mn])
    hi, lo = t(), t()
    imp.emit("MAXIMUM", [mx, c(0.0)], [hi])
    imp.emit("MINIMUM", [mn, c(0.0)], [lo])
    span, scale = t(), t()
    imp.emit("SUB", [hi, lo, fused], [span])
    imp.emit("DIV", [span, c(255.0), fused], [scale])
    neg, zp_f = t(), t()
    imp.emit("SUB", [c(0.0), lo, fused], [neg])
    imp.emit("DIV", [neg, scale, fused], [zp_f])
    zp = _clamp255(imp, round_half_even(imp, zp_f, one), one)
    q = t(shape)
    imp.emit("DIV", [xo, scale, fused], [q])
    shifted = t(shape)
    imp.emit("ADD", [round_half_even(imp, q, shape), zp, fused], [shifted])
    y = _clamp255(imp, shifted, shape)
    outs = n.outputs + [""] * (3 - len(n.outputs))
    for name, operand, s in ((outs[0], y, shape), (outs[1], scale, one), (outs[2], zp, one)):
        if name:
            float_value(imp, name, operand, s)


def _clamp255(imp, v, shape):
    lo, hi = imp.b.tensor(OT.TENSOR_FLOAT32, shape), imp.b.tensor(OT.TENSOR_FLOAT32, shape)
    imp.emit("MAXIMUM", [v, imp.tensor_const(np.zeros(1, np.float32))], [lo])
    imp.emit("MINIMUM", [lo, imp.tensor_const(np.full(1, 255.0, np.float32))], [hi])
    return hi


def _centered(imp, n, i: int, i_zp: int, what: str) -> str:
    """The float value (input ``i``) - (its zero point ``i_zp``): a DynamicQuantizeLinear
    output (float) minus its zero point (float)."""
    name = n.input(i)
    if imp.operand_type(name) != OT.TENSOR_FLOAT32:
        imp.fail(f"the {what} {name!r} must come from a DynamicQuantizeLinear (a static "
                 "uint8 / int8 tensor here has no mapping)")
    shape = imp.static_shape(name)
    if not n.input(i_zp):
        return name
    zp = imp.const(n.input(i_zp))
    zo = imp.tensor_const(np.asarray(zp, np.float32).reshape(-1)) if zp is not None else \
        imp.operand(n.input(i_zp))
    out = imp.b.tensor(OT.TENSOR_FLOAT32, shape)
    imp.emit("SUB", [imp.operand(name), zo, imp.int32(0)], [out])
    return float_value(imp, f"{name}\0centered{n.index}", out, shape)


def _centered_weights(imp, n, i: int, i_zp: int, axis: int) -> str:
    """(constant weights ``i``) - (their zero point ``i_zp``, per tensor or along ``axis``)
    as float32."""
    w = imp.const_input(n, i, "the weights").astype(np.float32)
    z = imp.const(n.input(i_zp)) if n.input(i_zp) else None
    if n.input(i_zp) and z is None:
        imp.fail(f"the weight zero point (input {i_zp}) must be a constant")
    if z is not None and z.size > 1:
        shape = [1] * w.ndim
        shape[axis] = z.size
        w = w - z.astype(np.float32).reshape(shape)
    elif z is not None:
        w = w - np.float32(z.reshape(-1)[0])
    return const_value(imp, f"{n.input(i)}\0centered{n.index}", w)


def conv_integer(imp, n):
    from clnn.onnx.ops_conv import conv

    x = _centered(imp, n, 0, 2, "input")
    w = _centered_weights(imp, n, 1, 3, 0)
    attrs = {k: n.attrs[k] for k in ("auto_pad", "dilations", "group", "kernel_shape", "pads",
                                     "strides") if k in n.attrs}
    out = n.outputs[0]
    imp.info[out] = (F32, imp.info.get(out, (0, None))[1])
    conv(imp, sub_node(imp, n, "Conv", [x, w], [out], attrs))


def matmul_integer(imp, n):
    from clnn.onnx.ops_math import matmul

    a = _centered(imp, n, 0, 2, "input A")
    b = _centered_weights(imp, n, 1, 3, 1)
    out = n.outputs[0]
    imp.info[out] = (F32, imp.info.get(out, (0, None))[1])
    matmul(imp, sub_node(imp, n, "MatMul", [a, b], [out], {}))


CONVERTERS = {
    "DynamicQuantizeLinear": dynamic_quantize_linear,
    "ConvInteger": conv_integer,
    "MatMulInteger": matmul_integer,
}
