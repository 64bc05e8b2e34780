"""TFLite builtin (and custom) operators -> NNAPI operations, as TFLite's NNAPI delegate maps
them. ``CONVERTERS[name](imp, op)`` emits the operations for one TFLite operator through the
:class:`clnn.tflite.importer.Importer` helpers.

Where the semantics differ the converter emits the NNAPI equivalent: fused TANH and
CONCATENATION's fused activation become an activation op after it, LEAKY_RELU is PRELU with a
constant alpha, SQUEEZE/EXPAND_DIMS are RESHAPE to the (static) output shape, FULLY_CONNECTED
with keep_num_dims is followed by a RESHAPE, a missing bias is a zero constant, constant
DEQUANTIZE/DENSIFY are folded, QUANTIZE of a quantized tensor (a requantization) is
DEQUANTIZE then QUANTIZE, SPLIT_V is SPLIT (equal parts) or a SLICE per part, and the custom
Convolution2DTransposeBias (MediaPipe) is TRANSPOSE_CONV_2D with its bias.
"""

from __future__ import annotations

import struct

import numpy as np

from clnn.tflite.fold import reshape_target
from clnn.tflite.op_args import C_PADDING, arg, int_list, opt, padding, rank
from hal.types import OperandType

OT = OperandType


def dequantized(imp, ti) -> np.ndarray:
    """A quantized constant as float32 (per-tensor or per-channel scales)."""
    t, v = imp.tensor(ti), imp.value(ti)
    if not t.quantized:
        return v.astype(np.float32)
    shape = [1] * v.ndim
    if len(t.scales) > 1:
        shape[t.quantized_dimension] = len(t.scales)
    scale = t.scales.reshape(shape)
    zp = t.zero_points.reshape(shape) if len(t.zero_points) == len(t.scales) \
        else t.zero_points[0]
    return ((v.astype(np.float64) - zp) * scale).astype(np.float32)


def weights(imp, ti, x_ti) -> int:
    """The filter/weights operand; a quantized constant feeding a float op (a hybrid model)
    is dequantized at import."""
    if imp.is_float(x_ti) and not imp.is_float(ti) and imp.value(ti) is not None:
        imp.folded[ti] = dequantized(imp, ti)
    return imp.operand(ti)


def bias(imp, ti, x_ti, w_ti, n) -> int:
    """The bias operand, a zero constant of the right type when the model omits it."""
    if ti >= 0:
        if imp.is_float(x_ti) and not imp.is_float(ti) and imp.value(ti) is not None:
            imp.folded[ti] = dequantized(imp, ti)
        return imp.operand(ti)
    if imp.is_float(x_ti):
        dt = np.float16 if imp.tensor(x_ti).type_code == 1 else np.float32
        return imp.const(np.zeros(n, dt))
    x, w = imp.tensor(x_ti), imp.tensor(w_ti)
    if not (x.quantized and w.quantized):
        imp.fail(f"the input (tensor {x_ti}) and weights (tensor {w_ti}) of a quantized "
                 "operator must both have quantization parameters")
    scale = 0.0 if len(w.scales) > 1 else float(x.scales[0] * w.scales[0])
    return imp.b.constant(np.zeros(n, np.int32), OT.TENSOR_INT32, scale, 0)


# ----------------------------------------------------------------------- convolutions
def conv_2d(imp, op):
    x, w, b = op.inputs[0], op.inputs[1], arg(op, 2)
    n_out, _, _, in_c = rank(imp, w, 4, "the filter")
    act, out = imp.fused(opt(op, "FusedActivationFunction"), op.outputs[0])
    strides = [imp.int32(opt(op, "StrideW", 1)), imp.int32(opt(op, "StrideH", 1))]
    common = [imp.operand(x), weights(imp, w, x), bias(imp, b, x, w, n_out),
              imp.int32(padding(imp, op)), *strides]
    x_c = rank(imp, x, 4, "the input")[-1]
    if x_c and in_c and x_c != in_c:
        if x_c % in_c:
            imp.fail(f"input depth {x_c} is not a multiple of the filter depth {in_c}")
        imp.emit("GROUPED_CONV_2D", common + [imp.int32(x_c // in_c), act, imp.bool(False)],
                 [out])
        return
    dil = (opt(op, "DilationWFactor", 1), opt(op, "DilationHFactor", 1))
    extra = [imp.bool(False), imp.int32(dil[0]), imp.int32(dil[1])] if dil != (1, 1) else []
    imp.emit("CONV_2D", common + [act] + extra, [out])


def depthwise_conv_2d(imp, op):
    x, w, b = op.inputs[0], op.inputs[1], arg(op, 2)
    n_out = rank(imp, w, 4, "the filter")[3]
    x_c = rank(imp, x, 4, "the input")[-1]
    mult = n_out // x_c if x_c else max(opt(op, "DepthMultiplier", 1), 1)
    act, out = imp.fused(opt(op, "FusedActivationFunction"), op.outputs[0])
    dil = (opt(op, "DilationWFactor", 1), opt(op, "DilationHFactor", 1))
    extra = [imp.bool(False), imp.int32(dil[0]), imp.int32(dil[1])] if dil != (1, 1) else []
    imp.emit("DEPTHWISE_CONV_2D",
             [imp.operand(x), weights(imp, w, x), bias(imp, b, x, w, n_out),
              imp.int32(padding(imp, op)), imp.int32(opt(op, "StrideW", 1)),
              imp.int32(opt(op, "StrideH", 1)), imp.int32(mult), act] + extra, [out])


def _transpose_conv(imp, op, x, w, b, padding, stride_w, stride_h, activation):
    out_ti = op.outputs[0]
    out_shape = imp.shape(out_ti)
    if 0 in out_shape or len(out_shape) != 4:
        imp.fail(f"the output shape {list(out_shape)} must be static")
    act, out = imp.fused(activation, out_ti)
    imp.emit("TRANSPOSE_CONV_2D",
             [imp.operand(x), weights(imp, w, x),
              bias(imp, b, x, w, rank(imp, w, 4, "the filter")[0]),
              imp.const(np.asarray(out_shape, np.int32)), imp.int32(padding),
              imp.int32(stride_w), imp.int32(stride_h), act, imp.bool(False)], [out])


def transpose_conv(imp, op):
    _transpose_conv(imp, op, op.inputs[2], op.inputs[1], arg(op, 3),
                    padding(imp, op), opt(op, "StrideW", 1), opt(op, "StrideH", 1),
                    opt(op, "FusedActivationFunction"))


def convolution_2d_transpose_bias(imp, op):
    """MediaPipe's custom op: options are a raw TfLiteTransposeConvParams
    {padding, stride_width, stride_height}; inputs (input, weights OHWI, bias)."""
    raw = op.custom_options
    if len(raw) < 12:
        imp.fail(f"custom options hold {len(raw)} bytes, expected at least 12")
    padding, sw, sh = struct.unpack_from("<3i", raw)
    if padding not in C_PADDING or sw <= 0 or sh <= 0:
        imp.fail(f"bad options padding={padding} stride=({sw}, {sh})")
    _transpose_conv(imp, op, op.inputs[0], op.inputs[1], arg(op, 2), C_PADDING[padding], sw, sh,
                    0)


def fully_connected(imp, op):
    x, w, b = op.inputs[0], op.inputs[1], arg(op, 2)
    if opt(op, "WeightsFormat") != 0:
        imp.fail("shuffled weights formats are not supported")
    units, in_size = rank(imp, w, 2, "the weights")
    out_ti = op.outputs[0]
    out_shape = imp.shape(out_ti)
    act_code = opt(op, "FusedActivationFunction")
    if len(out_shape) == 2:
        act, out = imp.fused(act_code, out_ti)
    else:
        if 0 in out_shape:
            imp.fail("keep_num_dims needs a static output shape")
        act, final = imp.fused(act_code, out_ti)
        batch = int(np.prod(out_shape[:-1]))
        out = imp.like(out_ti, (batch, units))
        imp.emit("RESHAPE", [out, imp.const(np.asarray(out_shape, np.int32))], [final])
    imp.emit("FULLY_CONNECTED", [imp.operand(x), weights(imp, w, x), bias(imp, b, x, w, units),
                                 act], [out])


def pool(nn_name):
    def convert(imp, op):
        act, out = imp.fused(opt(op, "FusedActivationFunction"), op.outputs[0])
        imp.emit(nn_name, [imp.operand(op.inputs[0]), imp.int32(padding(imp, op)),
                           imp.int32(opt(op, "StrideW", 1)), imp.int32(opt(op, "StrideH", 1)),
                           imp.int32(opt(op, "FilterWidth", 1)),
                           imp.int32(opt(op, "FilterHeight", 1)), act], [out])
    return convert


# ----------------------------------------------------------------------- elementwise
def binary(nn_name, fused=True):
    def convert(imp, op):
        a, b = (imp.operand(i) for i in op.inputs[:2])
        if fused:
            act, out = imp.fused(opt(op, "FusedActivationFunction"), op.outputs[0])
            imp.emit(nn_name, [a, b, act], [out])
        else:
            imp.emit(nn_name, [a, b], [imp.operand(op.outputs[0])])
    return convert


def unary(nn_name):
    def convert(imp, op):
        imp.emit(nn_name, [imp.operand(op.inputs[0])], [imp.operand(op.outputs[0])])
    return convert


def quantize(imp, op):
    """QUANTIZE of a float tensor, or a requantization (int8 <-> uint8, or a new scale) of a
    quantized one: NNAPI's QUANTIZE takes floats only, so DEQUANTIZE then QUANTIZE (exact
    where the scales agree: the int8 -> uint8 outputs of the microWakeWord models)."""
    x, out = op.inputs[0], op.outputs[0]
    if imp.is_float(x):
        imp.emit("QUANTIZE", [imp.operand(x)], [imp.operand(out)])
        return
    tmp = imp.b.tensor(OT.TENSOR_FLOAT32, imp.shape(x))
    imp.emit("DEQUANTIZE", [imp.operand(x)], [tmp])
    imp.emit("QUANTIZE", [tmp], [imp.operand(out)])


def leaky_relu(imp, op):
    x = op.inputs[0]
    t = imp.tensor(x)
    alpha = opt(op, "Alpha", 0.2)
    if imp.is_float(x):
        a = imp.const(np.asarray([alpha], np.float16 if t.type_code == 1 else np.float32))
    else:  # alpha quantized exactly as the delegate does: scale alpha, value 1 (or -1)
        q = 1 if alpha >= 0 else -1
        a = imp.b.constant(np.asarray([127 + q if t.type_code == 3 else q]),
                           imp.quant(t)[0], abs(alpha), 127 if t.type_code == 3 else 0)
    imp.emit("PRELU", [imp.operand(x), a], [imp.operand(op.outputs[0])])


def elu(imp, op):
    x = op.inputs[0]
    imp.emit("ELU", [imp.operand(x), imp.float_scalar(1.0, x)], [imp.operand(op.outputs[0])])


def softmax(imp, op):
    x = op.inputs[0]
    imp.emit("SOFTMAX", [imp.operand(x), imp.float_scalar(opt(op, "Beta", 1.0), x)],
             [imp.operand(op.outputs[0])])


def log_softmax(imp, op):
    x = op.inputs[0]
    imp.emit("LOG_SOFTMAX", [imp.operand(x), imp.float_scalar(1.0, x), imp.int32(-1)],
             [imp.operand(op.outputs[0])])


def dequantize(imp, op):
    x, out = op.inputs[0], op.outputs[0]
    if imp.value(x) is not None:
        imp.folded[out] = dequantized(imp, x)
    elif imp.tensor(x).type_code == 1:
        imp.emit("CAST", [imp.operand(x)], [imp.operand(out)])
    else:
        imp.emit("DEQUANTIZE", [imp.operand(x)], [imp.operand(out)])


def densify(imp, op):
    value = imp.value(op.inputs[0])
    if value is None:
        imp.fail("the input must be a sparse constant")
    imp.folded[op.outputs[0]] = value


def prelu(imp, op):
    x, alpha = op.inputs[:2]
    imp.emit("PRELU", [imp.operand(x), weights(imp, alpha, x)], [imp.operand(op.outputs[0])])


# ----------------------------------------------------------------------- shapes
def reshape_to_output(imp, op):
    out = op.outputs[0]
    shape = imp.shape(out)
    if 0 in shape:
        new = list(opt(op, "NewShapeAsNumpy", None)) if op.options is not None and \
            opt(op, "NewShapeLength") else None
        if new is None and len(op.inputs) > 1:
            new = reshape_target(imp, op.inputs[1])
        if new is None and len(op.inputs) > 1 and imp.value(op.inputs[1]) is not None:
            new = int_list(imp, op, 1, "the shape")
        if new is None:
            imp.fail("the output shape is dynamic and no constant shape is given")
        shape = new
    imp.emit("RESHAPE", [imp.operand(op.inputs[0]), imp.const(np.asarray(shape, np.int32))],
             [imp.operand(out)])


def concatenation(imp, op):
    rank = len(imp.shape(op.inputs[0]))
    axis = opt(op, "Axis")
    out = imp.activation_after(opt(op, "FusedActivationFunction"), op.outputs[0])
    imp.emit("CONCATENATION", [imp.operand(i) for i in op.inputs]
             + [imp.int32(axis % rank if rank else axis)], [out])


def pad(imp, op):
    x = op.inputs[0]
    paddings = imp.const(np.asarray(int_list(imp, op, 1, "the paddings", pairs=True),
                                    np.int32).reshape(-1, 2))
    if op.name == "PADV2" and arg(op, 2) >= 0:
        v = imp.constant_of(op.inputs[2], "the pad value").reshape(-1)[0]
        if imp.is_float(x):
            value = imp.float_scalar(float(v), x)
        else:
            value = imp.int32(int(v))
        imp.emit("PAD_V2", [imp.operand(x), paddings, value], [imp.operand(op.outputs[0])])
    else:
        imp.emit("PAD", [imp.operand(x), paddings], [imp.operand(op.outputs[0])])


def resize(nn_name):
    def convert(imp, op):
        h, w = int_list(imp, op, 1, "the size", count=2)
        imp.emit(nn_name, [imp.operand(op.inputs[0]), imp.int32(w), imp.int32(h),
                           imp.bool(False), imp.bool(opt(op, "AlignCorners", False)),
                           imp.bool(opt(op, "HalfPixelCenters", False))],
                 [imp.operand(op.outputs[0])])
    return convert


def block_op(nn_name):
    def convert(imp, op):
        imp.emit(nn_name, [imp.operand(op.inputs[0]), imp.int32(opt(op, "BlockSize", 1))],
                 [imp.operand(op.outputs[0])])
    return convert


def reduce(nn_name):
    def convert(imp, op):
        axes = imp.const(np.asarray(int_list(imp, op, 1, "the axes"), np.int32))
        keep = opt(op, "KeepDims", False)
        flag = imp.int32(int(keep)) if nn_name == "MEAN" else imp.bool(keep)
        imp.emit(nn_name, [imp.operand(op.inputs[0]), axes, flag], [imp.operand(op.outputs[0])])
    return convert


def strided_slice(imp, op):
    for name in ("EllipsisMask", "NewAxisMask", "Offset"):
        if opt(op, name):
            imp.fail(f"{name} is not supported by NNAPI STRIDED_SLICE")
    ins = [imp.operand(op.inputs[0])]
    for k, what in ((1, "begin"), (2, "end"), (3, "strides")):
        ins.append(imp.const(np.asarray(int_list(imp, op, k, f"the {what}"), np.int32)))
    ins += [imp.int32(opt(op, "BeginMask")), imp.int32(opt(op, "EndMask")),
            imp.int32(opt(op, "ShrinkAxisMask"))]
    imp.emit("STRIDED_SLICE", ins, [imp.operand(op.outputs[0])])


def slice_(imp, op):
    ins = [imp.operand(op.inputs[0])]
    for k, what in ((1, "begin"), (2, "size")):
        ins.append(imp.const(np.asarray(int_list(imp, op, k, f"the {what}"), np.int32)))
    imp.emit("SLICE", ins, [imp.operand(op.outputs[0])])


def transpose(imp, op):
    perm = imp.const(np.asarray(int_list(imp, op, 1, "the permutation"), np.int32))
    imp.emit("TRANSPOSE", [imp.operand(op.inputs[0]), perm], [imp.operand(op.outputs[0])])


def gather(imp, op):
    if opt(op, "BatchDims"):
        imp.fail("batch_dims is not supported by NNAPI GATHER")
    rank = len(imp.shape(op.inputs[0]))
    imp.emit("GATHER", [imp.operand(op.inputs[0]), imp.int32(opt(op, "Axis") % max(rank, 1)),
                        imp.operand(op.inputs[1])], [imp.operand(op.outputs[0])])


def split(imp, op):
    axis = int_list(imp, op, 0, "the axis", count=1)[0]
    imp.emit("SPLIT", [imp.operand(op.inputs[1]), imp.int32(axis),
                       imp.int32(opt(op, "NumSplits", len(op.outputs)))],
             [imp.operand(o) for o in op.outputs])


def split_v(imp, op):
    """SPLIT_V (constant sizes, one of them -1: the rest): SPLIT where the parts are equal,
    else a SLICE per part."""
    x = op.inputs[0]
    shape = imp.shape(x)
    axis = int_list(imp, op, 2, "the axis", count=1)[0]
    if not -len(shape) <= axis < len(shape):
        imp.fail(f"axis {axis} is out of range for rank {len(shape)}")
    axis %= len(shape)
    sizes = [int(v) for v in np.asarray(imp.constant_of(op.inputs[1], "the sizes")).ravel()]
    if len(sizes) != len(op.outputs) or sizes.count(-1) > 1:
        imp.fail(f"sizes {sizes} do not match its {len(op.outputs)} outputs")
    if -1 in sizes:
        sizes[sizes.index(-1)] = shape[axis] - sum(s for s in sizes if s != -1)
    if any(s < 0 for s in sizes) or sum(sizes) != shape[axis]:
        imp.fail(f"sizes {sizes} do not add up to dimension {axis} ({shape[axis]})")
    if len(set(sizes)) == 1:
        imp.emit("SPLIT", [imp.operand(x), imp.int32(axis), imp.int32(len(sizes))],
                 [imp.operand(o) for o in op.outputs])
        return
    start = 0
    for size, o in zip(sizes, op.outputs):
        begin = [0] * len(shape)
        begin[axis] = start
        extent = list(shape)
        extent[axis] = size
        imp.emit("SLICE", [imp.operand(x), imp.const(np.asarray(begin, np.int32)),
                           imp.const(np.asarray(extent, np.int32))], [imp.operand(o)])
        start += size


def arg_minmax(nn_name):
    def convert(imp, op):
        axis = int_list(imp, op, 1, "the axis", count=1)[0]
        imp.emit(nn_name, [imp.operand(op.inputs[0]), imp.int32(axis)],
                 [imp.operand(op.outputs[0])])
    return convert


def batch_matmul(imp, op):
    imp.emit("BATCH_MATMUL", [imp.operand(op.inputs[0]), imp.operand(op.inputs[1]),
                              imp.bool(opt(op, "AdjX", False)), imp.bool(opt(op, "AdjY", False))],
             [imp.operand(op.outputs[0])])


def space_batch(nn_name):
    def convert(imp, op):
        ins = [imp.operand(op.inputs[0]),
               imp.const(np.asarray(int_list(imp, op, 1, "the block shape"), np.int32))]
        if len(op.inputs) > 2:
            ins.append(imp.const(np.asarray(int_list(imp, op, 2, "the paddings", pairs=True),
                                            np.int32).reshape(-1, 2)))
        imp.emit(nn_name, ins, [imp.operand(op.outputs[0])])
    return convert


def l2_normalization(imp, op):
    if opt(op, "FusedActivationFunction"):
        imp.fail("a fused activation is not supported")
    unary("L2_NORMALIZATION")(imp, op)


CONVERTERS = {
    "CONV_2D": conv_2d,
    "DEPTHWISE_CONV_2D": depthwise_conv_2d,
    "TRANSPOSE_CONV": transpose_conv,
    "CUSTOM:Convolution2DTransposeBias": convolution_2d_transpose_bias,
    "FULLY_CONNECTED": fully_connected,
    "AVERAGE_POOL_2D": pool("AVERAGE_POOL_2D"),
    "MAX_POOL_2D": pool("MAX_POOL_2D"),
    "L2_POOL_2D": pool("L2_POOL_2D"),
    "ADD": binary("ADD"),
    "SUB": binary("SUB"),
    "MUL": binary("MUL"),
    "DIV": binary("DIV"),
    "MAXIMUM": binary("MAXIMUM", fused=False),
    "MINIMUM": binary("MINIMUM", fused=False),
    "POW": binary("POW", fused=False),
    "LESS": binary("LESS", fused=False),
    "LESS_EQUAL": binary("LESS_EQUAL", fused=False),
    "GREATER": binary("GREATER", fused=False),
    "GREATER_EQUAL": binary("GREATER_EQUAL", fused=False),
    "EQUAL": binary("EQUAL", fused=False),
    "NOT_EQUAL": binary("NOT_EQUAL", fused=False),
    "RELU": unary("RELU"),
    "RELU6": unary("RELU6"),
    "RELU_N1_TO_1": unary("RELU1"),
    "LOGISTIC": unary("LOGISTIC"),
    "TANH": unary("TANH"),
    "HARD_SWISH": unary("HARD_SWISH"),
    "EXP": unary("EXP"),
    "LOG": unary("LOG"),
    "ABS": unary("ABS"),
    "NEG": unary("NEG"),
    "SQRT": unary("SQRT"),
    "RSQRT": unary("RSQRT"),
    "SIN": unary("SIN"),
    "FLOOR": unary("FLOOR"),
    "CAST": unary("CAST"),
    "QUANTIZE": quantize,
    "LOGICAL_NOT": unary("LOGICAL_NOT"),
    "ELU": elu,
    "LEAKY_RELU": leaky_relu,
    "PRELU": prelu,
    "SOFTMAX": softmax,
    "LOG_SOFTMAX": log_softmax,
    "L2_NORMALIZATION": l2_normalization,
    "DEQUANTIZE": dequantize,
    "DENSIFY": densify,
    "RESHAPE": reshape_to_output,
    "SQUEEZE": reshape_to_output,
    "EXPAND_DIMS": reshape_to_output,
    "CONCATENATION": concatenation,
    "PAD": pad,
    "PADV2": pad,
    "RESIZE_BILINEAR": resize("RESIZE_BILINEAR"),
    "RESIZE_NEAREST_NEIGHBOR": resize("RESIZE_NEAREST_NEIGHBOR"),
    "DEPTH_TO_SPACE": block_op("DEPTH_TO_SPACE"),
    "SPACE_TO_DEPTH": block_op("SPACE_TO_DEPTH"),
    "MEAN": reduce("MEAN"),
    "SUM": reduce("REDUCE_SUM"),
    "REDUCE_MAX": reduce("REDUCE_MAX"),
    "REDUCE_MIN": reduce("REDUCE_MIN"),
    "REDUCE_PROD": reduce("REDUCE_PROD"),
    "REDUCE_ANY": reduce("REDUCE_ANY"),
    "STRIDED_SLICE": strided_slice,
    "SLICE": slice_,
    "TRANSPOSE": transpose,
    "GATHER": gather,
    "SPLIT": split,
    "SPLIT_V": split_v,
    "ARG_MAX": arg_minmax("ARGMAX"),
    "ARG_MIN": arg_minmax("ARGMIN"),
    "BATCH_MATMUL": batch_matmul,
    "SPACE_TO_BATCH_ND": space_batch("SPACE_TO_BATCH_ND"),
    "BATCH_TO_SPACE_ND": space_batch("BATCH_TO_SPACE_ND"),
}
