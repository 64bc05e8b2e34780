"""Values the quantized ONNX converters share (clnn/onnx/ops_qlinear.py, ops_qfloat.py,
ops_qdynamic.py): quantized inputs and outputs, importer-made float values and constants, a
sub-node for a float converter, and a quantized input's float value."""

from __future__ import annotations

import numpy as np

from clnn.onnx.ops_quant import _check_input, _params, _qtype
from hal.types import OperandType

OT = OperandType
F32 = 1  # TensorProto.FLOAT


# ------------------------------------------------------------------ helpers
def q_input(imp, n, i: int, i_scale: int, i_zp: int, what: str) -> int:
    """The operand of quantized input ``i``: a constant becomes a quantized constant, a tensor
    must carry the scale and zero point the node states."""
    name = n.input(i)
    s, z, d = _params(imp, n, i_scale, i_zp, what)
    v = imp.const(name)
    if v is not None:
        if v.dtype != d:
            imp.fail(f"the {what} {name!r} has type {v.dtype}, its zero point {np.dtype(d)}")
        imp.quant[name] = (s, z)
    else:
        _check_input(imp, name, s, z, what)
    return imp.operand(name)


def q_output(imp, n, name: str, i_scale: int, i_zp: int, shape=None) -> int:
    s, z, d = _params(imp, n, i_scale, i_zp, "output")
    return imp.output(name, shape=shape, type=_qtype(d), scale=s, zp=z)


def sub_node(imp, n, op_type: str, inputs, outputs, attrs: dict):
    """A standard-domain node for a float converter, its attribute reads counted as ``n``'s."""
    from onnx import helper

    from clnn.onnx.reader import Node

    proto = helper.make_node(op_type, list(inputs), list(outputs), name=n.proto.name,
                             **{k: v for k, v in attrs.items() if v is not None})
    return Node(proto, n.index, dict(attrs), n.read)


def float_value(imp, name: str, operand: int, shape):
    """Register an importer-made float value (a NUL in its name) held by ``operand``."""
    imp.operands[name] = operand
    imp.info[name] = (F32, tuple(shape))
    return name


def const_value(imp, name: str, array) -> str:
    imp.consts[name] = np.asarray(array)
    return name


# ------------------------------------------------------------------ QOperator


def dequantized_value(imp, n, i: int, i_scale: int, i_zp: int, what: str) -> str:
    """The float value of quantized input ``i`` (a constant's dequantized at import)."""
    name = n.input(i)
    v = imp.const(name)
    s, z, _ = _params(imp, n, i_scale, i_zp, what)
    if v is not None:
        real = ((v.astype(np.float32) - np.float32(z)) * np.float32(s)).astype(np.float32)
        return const_value(imp, f"{name}\0real{n.index}", real)
    if imp.quantized == "onnxruntime":  # (q - zp) * s, one rounding, as onnxruntime
        return real_values(imp, n, i, i_scale, i_zp, what)
    _check_input(imp, name, s, z, what)
    shape = imp.static_shape(name)
    out = imp.b.tensor(OT.TENSOR_FLOAT32, shape)
    imp.emit("DEQUANTIZE", [imp.operand(name)], [out])
    return float_value(imp, f"{name}\0real{n.index}", out, shape)


# ------------------------------------------------------------------ onnxruntime's values


def _f(imp, shape):
    return imp.b.tensor(OT.TENSOR_FLOAT32, tuple(shape))


def _c(imp, v):
    return imp.tensor_const(np.asarray(v, np.float32).reshape(-1) if np.ndim(v) < 2
                            else np.asarray(v, np.float32))


def _op(imp, name, ins, shape, fused=True):
    out = _f(imp, shape)
    imp.emit(name, [*ins, *([imp.int32(0)] if fused else [])], [out])
    return out


def integers(imp, n, i: int, i_scale: int, i_zp: int, what: str) -> str:
    """A float value holding q - zp of quantized tensor input ``i``."""
    name = n.input(i)
    s, z, _ = _params(imp, n, i_scale, i_zp, what)
    _check_input(imp, name, s, z, what)
    shape = imp.static_shape(name)
    real = _f(imp, shape)
    imp.emit("DEQUANTIZE", [imp.operand(name)], [real])
    v = _op(imp, "DIV", [real, _c(imp, [s])], shape)
    r = _op(imp, "FLOOR", [_op(imp, "ADD", [v, _c(imp, [0.5])], shape)], shape, fused=False)
    return float_value(imp, f"{name}\0int{n.index}", r, shape)


def real_values(imp, n, i: int, i_scale: int, i_zp: int, what: str) -> str:
    """A float value holding (q - zp) * scale of quantized tensor input ``i``, one float32
    rounding as onnxruntime dequantizes (NNAPI's DEQUANTIZE, with TFLite's bits, computes
    q * scale - zp * scale: a few ulps away, which moves near-halves of a later rounding;
    clnn bench quant: light_resnet50 qdq-u8, the residual Sums)."""
    s, _, _ = _params(imp, n, i_scale, i_zp, what)
    v = integers(imp, n, i, i_scale, i_zp, what)
    shape = imp.static_shape(n.input(i))
    out = _op(imp, "MUL", [imp.operand(v), _c(imp, [s])], shape)
    return float_value(imp, f"{n.input(i)}\0real{n.index}", out, shape)
