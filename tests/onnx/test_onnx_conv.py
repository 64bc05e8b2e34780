"""Convolutions, pooling and normalizations (NCHW through NNAPI's layout flag) against
onnxruntime, on both devices."""

import numpy as np
import pytest

from tests.onnx.kit import check, f32, graph, node, op_types


def conv_model(w_shape, x_shape, y_shape, bias=True, **attrs):
    ins = ["x", "w", "b"] if bias else ["x", "w"]
    inits = [("w", f32(*w_shape))] + ([("b", f32(w_shape[0]))] if bias else [])
    return graph([node("Conv", ins, **attrs)], [("x", x_shape)], [("y", y_shape)], inits)


@pytest.mark.parametrize("attrs,w,x,y,op", [
    ({"pads": [1, 0, 2, 1]}, (4, 3, 3, 3), (1, 3, 6, 5), (1, 4, 7, 4), "CONV_2D"),
    ({"strides": [2, 1], "dilations": [1, 2]}, (4, 3, 3, 3), (2, 3, 7, 7), (2, 4, 3, 3),
     "CONV_2D"),
    ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, (2, 3, 3, 3), (1, 3, 6, 6), (1, 2, 3, 3),
     "CONV_2D"),
    ({"auto_pad": "SAME_LOWER", "strides": [2, 2]}, (2, 3, 2, 2), (1, 3, 5, 5), (1, 2, 3, 3),
     "CONV_2D"),
    ({"auto_pad": "VALID"}, (2, 3, 3, 3), (1, 3, 5, 5), (1, 2, 3, 3), "CONV_2D"),
    ({"group": 2, "pads": [1, 1, 1, 1]}, (6, 2, 3, 3), (1, 4, 5, 5), (1, 6, 5, 5),
     "GROUPED_CONV_2D"),
    ({"group": 4, "pads": [1, 1, 1, 1]}, (8, 1, 3, 3), (1, 4, 5, 5), (1, 8, 5, 5),
     "DEPTHWISE_CONV_2D"),
    ({"group": 3, "dilations": [2, 2]}, (3, 1, 3, 3), (1, 3, 7, 7), (1, 3, 3, 3),
     "DEPTHWISE_CONV_2D"),
])
def test_conv_variants(devices, attrs, w, x, y, op):
    m = conv_model(w, list(x), list(y), **attrs)
    imported = check(m, {"x": f32(*x)}, devices)
    assert op_types(imported) == [op]


def test_conv_without_bias_and_1d(devices):
    check(conv_model((3, 2, 1, 1), [1, 2, 4, 4], [1, 3, 4, 4], bias=False), {"x": f32(1, 2, 4, 4)},
          devices, ops=["CONV_2D"])
    m = conv_model((4, 2, 3), [1, 2, 9], [1, 4, 5], pads=[1, 1], strides=[2])
    check(m, {"x": f32(1, 2, 9)}, devices, ops=["RESHAPE", "CONV_2D", "RESHAPE"])


def _bn_inits(c):
    return [("g", f32(c)), ("be", f32(c)), ("mu", f32(c)), ("var", np.abs(f32(c)) + 0.5)]


def test_batch_norm_folds_into_the_conv(devices):
    m = graph([node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
               node("BatchNormalization", ["c", "g", "be", "mu", "var"], epsilon=1e-3)],
              [("x", [1, 3, 5, 5])], [("y", [1, 4, 5, 5])],
              [("w", f32(4, 3, 3, 3)), ("b", f32(4)), *_bn_inits(4)])
    check(m, {"x": f32(1, 3, 5, 5)}, devices, ops=["CONV_2D"])


def test_batch_norm_with_a_second_reader_is_mul_add(devices):
    """The Conv output is also a graph output: BatchNormalization stays (MUL + ADD)."""
    m = graph([node("Conv", ["x", "w"], ["c"]),
               node("BatchNormalization", ["c", "g", "be", "mu", "var"])],
              [("x", [1, 3, 4, 4])], [("y", [1, 4, 4, 4]), ("c", [1, 4, 4, 4])],
              [("w", f32(4, 3, 1, 1)), *_bn_inits(4)], opset=9)
    check(m, {"x": f32(1, 3, 4, 4)}, devices, ops=["CONV_2D", "MUL", "ADD"])


@pytest.mark.parametrize("attrs,x,y", [
    ({"strides": [2, 2]}, (1, 3, 3, 3), (1, 2, 7, 7)),
    ({"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}, (1, 3, 4, 4),
     (1, 2, 8, 8)),
])
def test_conv_transpose(devices, attrs, x, y):
    m = graph([node("ConvTranspose", ["x", "w", "b"], **attrs)], [("x", list(x))],
              [("y", list(y))], [("w", f32(3, 2, 3, 3)), ("b", f32(2))])
    check(m, {"x": f32(*x)}, devices, ops=["TRANSPOSE_CONV_2D"])


@pytest.mark.parametrize("op,attrs,y", [
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]}, (1, 2, 3, 3)),
    ("MaxPool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
     (1, 2, 4, 4)),
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, (1, 2, 4, 4)),
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [3, 3], "ceil_mode": 1, "pads": [1, 1, 0, 0]},
     (1, 2, 3, 3)),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, (1, 2, 7, 7)),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
     (1, 2, 7, 7)),
    ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}, (1, 2, 4, 4)),
    ("AveragePool", {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
     (1, 2, 4, 4)),
])
def test_pooling(devices, op, attrs, y):
    m = graph([node(op, ["x"], **attrs)], [("x", [1, 2, 7, 7])], [("y", list(y))])
    check(m, {"x": f32(1, 2, 7, 7)}, devices)


@pytest.mark.parametrize("op,nn", [("GlobalAveragePool", "MEAN"),
                                   ("GlobalMaxPool", "REDUCE_MAX")])
def test_global_pooling(devices, op, nn):
    m = graph([node(op, ["x"])], [("x", [2, 3, 5, 4])], [("y", [2, 3, 1, 1])])
    check(m, {"x": f32(2, 3, 5, 4)}, devices, ops=[nn])


def test_instance_norm_and_lrn(devices):
    m = graph([node("InstanceNormalization", ["x", "s", "b"], epsilon=1e-4)],
              [("x", [2, 3, 4, 5])], [("y", [2, 3, 4, 5])], [("s", f32(3)), ("b", f32(3))])
    check(m, {"x": f32(2, 3, 4, 5)}, devices, ops=["INSTANCE_NORMALIZATION", "MUL", "ADD"])
    m = graph([node("InstanceNormalization", ["x", "s", "b"])],
              [("x", [1, 3, 4, 5])], [("y", [1, 3, 4, 5])],
              [("s", np.full(3, 1.5, np.float32)), ("b", np.full(3, 0.25, np.float32))])
    check(m, {"x": f32(1, 3, 4, 5)}, devices, ops=["INSTANCE_NORMALIZATION"])
    m = graph([node("LRN", ["x"], size=3, alpha=1e-2, beta=0.75, bias=2.0)],
              [("x", [1, 6, 3, 3])], [("y", [1, 6, 3, 3])])
    check(m, {"x": f32(1, 6, 3, 3)}, devices, ops=["LOCAL_RESPONSE_NORMALIZATION"])
