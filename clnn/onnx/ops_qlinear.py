"""onnxruntime's quantized operators: the ``com.microsoft`` QLinear family that
``onnxruntime.quantization`` writes in the QOperator format, and QLinearMatMul.

- QLinearAdd / QLinearMul / QLinearConcat: ADD / MUL / CONCATENATION on the quantized operands
  (TENSOR_QUANT8_ASYMM for uint8, _SIGNED for int8), each input and the output with the node's
  scale and zero point (NNAPI requantizes between them); a constant input is a quantized
  constant.
- QGemm and QLinearMatMul: FULLY_CONNECTED (per-tensor weights; int8 weights of a uint8
  input shifted by 128, the same real values), or, with per-channel weight scales, a 1x1
  CONV_2D with TENSOR_QUANT8_SYMM_PER_CHANNEL filter between two RESHAPEs (FULLY_CONNECTED has no
  per-channel filter); the int32 bias at input scale x weight scale.
- QLinearSigmoid / QLinearLeakyRelu / QLinearSoftmax / QLinearAveragePool /
  QLinearGlobalAveragePool: onnxruntime computes these in float (a lookup table of the float
  function, or a float average) and quantizes once; NNAPI's quantized LOGISTIC and SOFTMAX fix
  their output scale (1/256) and its pools their output quantization to the input's, which
  would round twice. So: DEQUANTIZE, the float operation, QUANTIZE to the node's output scale
  and zero point (one rounding, as onnxruntime).
- quantize_dynamic's operators: clnn/onnx/ops_qdynamic.py.
"""

from __future__ import annotations

import numpy as np

from clnn.onnx.ops_quant import _check_input, _params, _qtype
from clnn.onnx.qvalues import (  # noqa: F401  (the QOperator helpers, used here and re-exported)
    F32,
    const_value,
    dequantized_value,
    float_value,
    q_input,
    q_output,
    sub_node,
)
from hal.types import OperandType

OT = OperandType
MS = "com.microsoft"


def qlinear_binary(imp, n):
    """QLinearAdd / QLinearMul (A, A scale, A zp, B, B scale, B zp, C scale, C zp)."""
    from clnn.onnx.ops_math import broadcast_shape

    a = q_input(imp, n, 0, 1, 2, "input A")
    b = q_input(imp, n, 3, 4, 5, "input B")
    shape = broadcast_shape(imp.shape(n.input(0)), imp.shape(n.input(3)))
    y = q_output(imp, n, n.outputs[0], 6, 7, shape=imp.shape(n.outputs[0]) or shape)
    imp.emit("ADD" if n.op_type == "QLinearAdd" else "MUL", [a, b, imp.int32(0)], [y])


def qlinear_concat(imp, n):
    """QLinearConcat (Y scale, Y zp, then X, X scale, X zp per input)."""
    rank = None
    ops = []
    for k in range(2, len(n.inputs), 3):
        ops.append(q_input(imp, n, k, k + 1, k + 2, f"input {k // 3}"))
        rank = rank or len(imp.shape(n.input(k)) or ())
    axis = int(n.attr("axis"))
    axis = axis + rank if axis < 0 else axis
    y = q_output(imp, n, n.outputs[0], 0, 1)
    if len(ops) == 1:
        imp.emit("RESHAPE", [ops[0], imp.ints(imp.shape(n.outputs[0]))], [y])
        return
    imp.emit("CONCATENATION", [*ops, imp.int32(axis)], [y])


def onnxruntime_logistic(x):
    """onnxruntime's own float32 Sigmoid of ``x`` (it evaluates an approximation whose last bit
    differs from the exact function on some inputs), asked of onnxruntime itself so that the
    quantized="onnxruntime" table holds its values; the exact function when onnxruntime is not
    installed."""
    x = np.asarray(x, np.float32)
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Sigmoid", ["x"], ["y"])], "logistic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = min(model.ir_version, 8)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def _sigmoid(x, n, imp):
    if imp.quantized == "onnxruntime":
        return onnxruntime_logistic(x)
    return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(np.float32)


def _leaky_relu(x, n, imp):
    alpha = np.float32(n.attr("alpha", 0.01))
    return np.where(x >= 0, x, (x * alpha).astype(np.float32))


#: element-wise QLinear operator -> (its float operator, the float function of its table)
LOOKUP = {"QLinearSigmoid": ("Sigmoid", _sigmoid), "QLinearLeakyRelu": ("LeakyRelu",
                                                                      _leaky_relu)}


def qlinear_lookup(imp, n):
    """X, X scale, X zp, Y scale, Y zp: the 256-entry table onnxruntime builds (each input
    value dequantized, the float function, quantized with halves to even), read by GATHER
    on the raw input values (a quantized constant of the output's scale and zero point).
    The "nnapi" mode tabulates the exact logistic, "onnxruntime" onnxruntime's."""
    x, out = n.input(0), n.outputs[0]
    xs, xz, xd = _params(imp, n, 1, 2, "input")
    ys, yz, yd = _params(imp, n, 3, 4, "output")
    _check_input(imp, x, xs, xz, "input")
    info = np.iinfo(xd)
    q = np.arange(info.min, info.max + 1, dtype=np.int32)
    real = ((q - np.int32(xz)).astype(np.float32) * np.float32(xs)).astype(np.float32)
    fx = np.asarray(LOOKUP[n.op_type][1](real, n, imp), np.float32)
    yinfo = np.iinfo(yd)
    table = np.clip(np.rint(fx / np.float32(ys)) + yz, yinfo.min, yinfo.max).astype(yd)
    lut = imp.b.constant(table, _qtype(yd), ys, yz)
    shape = imp.static_shape(x)
    idx = imp.b.tensor(OT.TENSOR_INT32, shape)
    if xd == np.uint8:  # CAST reads a QUANT8_ASYMM tensor's raw values
        imp.emit("CAST", [imp.operand(x)], [idx])
    else:  # int8: q - zp recovered in float, then shifted to 0..255
        from clnn.onnx.ops_qfloat import integers

        v = imp.operand(integers(imp, n, 0, 1, 2, "input"))
        shifted = imp.b.tensor(OT.TENSOR_FLOAT32, shape)
        imp.emit("ADD", [v, imp.tensor_const(np.asarray([xz - info.min], np.float32)),
                         imp.int32(0)], [shifted])
        imp.emit("CAST", [shifted], [idx])
    y = imp.output(out, shape=imp.static_shape(out), type=_qtype(yd), scale=ys, zp=yz)
    imp.emit("GATHER", [lut, imp.int32(0), idx], [y])


#: QLinear operator -> (the float operator between DEQUANTIZE and QUANTIZE, its attributes)
FLOAT_BETWEEN = {
    "QLinearSoftmax": ("Softmax", ("axis",)),
    "QLinearAveragePool": ("AveragePool", ("auto_pad", "ceil_mode", "count_include_pad",
                                           "kernel_shape", "pads", "strides", "dilations")),
    "QLinearGlobalAveragePool": ("GlobalAveragePool", ()),
}

#: QLinear operator -> the clnn.onnx.ops_qfloat function computing it as onnxruntime does
ORT_ARITHMETIC = {"QLinearSoftmax": "softmax", "QLinearAveragePool": "average_pool",
                  "QLinearGlobalAveragePool": "global_average_pool"}


def qlinear_float_between(imp, n):
    """X, X scale, X zp, Y scale, Y zp: DEQUANTIZE, the float operator, QUANTIZE."""
    op_type, names = FLOAT_BETWEEN[n.op_type]
    if n.attr("channels_last", 0):
        imp.fail("attribute 'channels_last'=1 has no mapping")
    x, out = n.input(0), n.outputs[0]
    if n.op_type == "QLinearSoftmax":
        rank = imp.rank(x)
        axis = int(n.attrs.get("axis", -1))
        if int(n.attr("opset", 13)) < 13 and axis not in (-1, rank - 1):
            imp.fail("a softmax of opset below 13 on an axis other than the last has no "
                     "mapping here")
    if imp.quantized == "onnxruntime" and n.op_type in ORT_ARITHMETIC:
        from clnn.onnx import ops_qfloat

        getattr(ops_qfloat, ORT_ARITHMETIC[n.op_type])(imp, n)
        return
    xq = q_input(imp, n, 0, 1, 2, "input")
    shape = imp.static_shape(x)
    deq = imp.b.tensor(OT.TENSOR_FLOAT32, shape)
    imp.emit("DEQUANTIZE", [xq], [deq])
    x_f = float_value(imp, f"{x}\0float", deq, shape)
    y_shape = imp.static_shape(out)
    y_f = f"{out}\0float"
    imp.info[y_f] = (F32, y_shape)
    attrs = {k: n.attrs[k] for k in names if k in n.attrs}
    imp.converters[op_type](imp, sub_node(imp, n, op_type, [x_f], [y_f], attrs))
    if imp.quantized == "onnxruntime":  # halves to even (clnn/onnx/ops_qfloat.py)
        from clnn.onnx.ops_qfloat import quantize_rounded

        quantize_rounded(imp, n, imp.operand(y_f), y_shape, 3, 4)
        return
    y = q_output(imp, n, out, 3, 4, shape=y_shape)
    imp.emit("QUANTIZE", [imp.operand(y_f)], [y])


def qgemm(imp, n):
    """QGemm (A, A scale, A zp, B, B scale, B zp, C, Y scale, Y zp): Y = A B + C."""
    if n.attr("transA", 0):
        imp.fail("attribute 'transA'=1 has no mapping")
    if float(n.attr("alpha", 1.0)) != 1.0:
        imp.fail("attribute 'alpha' other than 1 has no mapping")
    if not n.input(7):
        imp.fail("a float output (no Y scale) has no mapping")
    b = imp.const_input(n, 3, "input B")
    if n.attr("transB", 0):
        b = b.T
    bias = imp.const(n.input(6)) if n.input(6) else None
    if n.input(6) and bias is None:
        imp.fail("the bias C (input 6) must be a constant")
    quant_matmul(imp, n, b, bias, (7, 8))


def qlinear_matmul(imp, n):
    """QLinearMatMul (A, A scale, A zp, B, B scale, B zp, Y scale, Y zp) of a constant B."""
    _, _, ad = _params(imp, n, 1, 2, "input A")
    if _params(imp, n, 6, 7, "output")[2] != ad:
        imp.fail("the output type differs from the input type")
    quant_matmul(imp, n, imp.const_input(n, 3, "input B"), None, (6, 7))


def quant_matmul(imp, n, b, bias, out_q):
    """A [M, K] (quantized, inputs 0-2) times constant B [K, N] (scales and zero points in
    inputs 4, 5) plus an int32 bias, into the output quantized by inputs ``out_q``."""
    a = n.input(0)
    as_, az, ad = _params(imp, n, 1, 2, "input A")
    _check_input(imp, a, as_, az, "input A")
    sa = imp.shape(a)
    if b.ndim != 2 or sa is None or len(sa) != 2:
        imp.fail("only a rank-2 input times a constant rank-2 matrix is mapped")
    bs = imp.const_input(n, 4, "the B scale").astype(np.float64).reshape(-1)
    bz = imp.const(n.input(5)) if n.input(5) else np.zeros(1, b.dtype)
    if bz is None:
        imp.fail("the B zero point (input 5) must be a constant")
    bz = bz.reshape(-1)
    k, cols = b.shape
    bias = np.zeros(cols, np.int32) if bias is None else bias.astype(np.int32).reshape(-1)
    y = q_output(imp, n, n.outputs[0], *out_q, shape=(sa[0], cols))
    xo = imp.operand(a)
    if bs.size == 1:
        bz0 = int(bz[0])
        if b.dtype != ad:  # shift into the input's signedness: the same real values
            shift = 128 if ad == np.uint8 else -128
            b = (b.astype(np.int32) + shift).astype(ad)
            bz0 += shift
        w = imp.b.constant(np.ascontiguousarray(b.T), _qtype(ad), float(bs[0]), bz0)
        bo = imp.b.constant(bias, OT.TENSOR_INT32, as_ * float(bs[0]), 0)
        imp.emit("FULLY_CONNECTED", [xo, w, bo, imp.int32(0)], [y])
        return
    if b.dtype != np.int8 or np.any(bz != 0):
        imp.fail("per-channel weights must be int8 with zero points 0")
    m = sa[0]
    filt = imp.b.constant(np.ascontiguousarray(b.T).reshape(cols, 1, 1, k),
                          OT.TENSOR_QUANT8_SYMM_PER_CHANNEL, 0.0, 0,
                          (np.broadcast_to(bs, (cols,)).tolist(), 0))
    bo = imp.b.constant(bias, OT.TENSOR_INT32, 0.0, 0)
    x4 = imp.temp(a, (m, 1, 1, k))
    imp.emit("RESHAPE", [xo, imp.ints([m or -1, 1, 1, k])], [x4])
    s, z = imp.quant[n.outputs[0]]
    y4 = imp.b.tensor(imp.operand_type(n.outputs[0]), (m, 1, 1, cols), s, z)
    imp.emit("CONV_2D", [x4, filt, bo, *[imp.int32(0)] * 4, imp.int32(1), imp.int32(1),
                         imp.int32(0)], [y4])
    imp.emit("RESHAPE", [y4, imp.ints([m or -1, cols])], [y])


CONVERTERS = {
    "QLinearAdd": qlinear_binary,
    "QLinearMul": qlinear_binary,
    "QLinearConcat": qlinear_concat,
    "QGemm": qgemm,
    "QLinearMatMul": qlinear_matmul,
    **{op: qlinear_float_between for op in FLOAT_BETWEEN},
    **{op: qlinear_lookup for op in LOOKUP},
}
#: the com.microsoft operators mapped (the others of that domain are refused)
MS_OPS = {"QLinearAdd", "QLinearMul", "QLinearConcat", "QGemm", *FLOAT_BETWEEN, *LOOKUP}


def standard_equivalent(n):
    """(op_type, inputs, attributes) of the float operator whose output shape a
    com.microsoft node's has (for shape propagation), else None."""
    a = n.attrs
    if n.op_type in LOOKUP:
        return LOOKUP[n.op_type][0], [n.input(0)], {}
    if n.op_type in FLOAT_BETWEEN:
        op, names = FLOAT_BETWEEN[n.op_type]
        return op, [n.input(0)], {k: a[k] for k in names if k in a}
    if n.op_type in ("QLinearAdd", "QLinearMul"):
        return n.op_type[7:], [n.input(0), n.input(3)], {}
    if n.op_type == "QLinearConcat":
        return "Concat", list(n.inputs[2::3]), {"axis": a.get("axis")}
    if n.op_type == "QGemm":
        return "Gemm", [n.input(0), n.input(3)], {k: a[k] for k in ("transA", "transB")
                                                   if k in a}
    return None


def output_elem(imp, n):
    """The element type of a com.microsoft node's output: its zero point's (uint8 / int8)."""
    from onnx import helper

    zp = {"QLinearConcat": 1, "QGemm": 8}.get(
        n.op_type, 4 if n.op_type in FLOAT_BETWEEN or n.op_type in LOOKUP else 7)
    z = imp.const(n.input(zp))
    return helper.np_dtype_to_tensor_dtype(z.dtype) if z is not None else 0
