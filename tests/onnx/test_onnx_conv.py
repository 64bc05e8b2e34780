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


def test_batch_norm_with_a_second_reader_is_a_depthwise_1x1(devices):
    """The Conv output is also a graph output: BatchNormalization stays, as one 1x1
    DEPTHWISE_CONV_2D (the scale its filter, the shift its bias)."""
    m = graph([node("Conv", ["x", "w"], ["c"]),
               node("BatchNormalization", ["c", "g", "be", "mu", "var"])],
              [("x", [1, 3, 4, 4])], [("y", [1, 4, 4, 4]), ("c", [1, 4, 4, 4])],
              [("w", f32(4, 3, 1, 1)), *_bn_inits(4)], opset=9)
    check(m, {"x": f32(1, 3, 4, 4)}, devices, ops=["CONV_2D", "DEPTHWISE_CONV_2D"])


def test_batch_norm_after_a_concat_then_relu(devices):
    """DenseNet's pre-activation: Concat -> BatchNormalization -> Relu, the BatchNormalization
    a 1x1 DEPTHWISE_CONV_2D; a rank-3 input stays MUL + ADD."""
    m = graph([node("Concat", ["x", "z"], ["c"], axis=1),
               node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["n"]),
               node("Relu", ["n"], ["y"])],
              [("x", [1, 3, 5, 6]), ("z", [1, 2, 5, 6])], [("y", [1, 5, 5, 6])], _bn_inits(5))
    check(m, {"x": f32(1, 3, 5, 6), "z": f32(1, 2, 5, 6)}, devices,
          ops=["CONCATENATION", "DEPTHWISE_CONV_2D", "RELU"])
    # DenseNet's Caffe2 form: BatchNormalization -> Mul -> Add, folded into the one depthwise
    m = graph([node("Concat", ["x", "z"], ["c"], axis=1),
               node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["n"]),
               node("Mul", ["k", "n"], ["m"]), node("Add", ["m", "a"], ["s"]),
               node("Relu", ["s"], ["y"])],
              [("x", [1, 3, 5, 6]), ("z", [1, 2, 5, 6])], [("y", [1, 5, 5, 6])],
              [*_bn_inits(5), ("k", f32(1, 5, 1, 1)), ("a", f32(5, 1, 1))])
    check(m, {"x": f32(1, 3, 5, 6), "z": f32(1, 2, 5, 6)}, devices,
          ops=["CONCATENATION", "DEPTHWISE_CONV_2D", "RELU"])
    m = graph([node("BatchNormalization", ["x", "g", "be", "mu", "var"])],
              [("x", [2, 3, 7])], [("y", [2, 3, 7])], _bn_inits(3))
    check(m, {"x": f32(2, 3, 7)}, devices, ops=["MUL", "ADD"])


@pytest.mark.parametrize("attrs,x,y", [
    ({"strides": [2, 2]}, (1, 3, 3, 3), (1, 2, 7, 7)),
    ({"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}, (1, 3, 4, 4),
     (1, 2, 8, 8)),
])
def test_conv_transpose(devices, attrs, x, y):
    m = graph([node("ConvTranspose", ["x", "w", "b"], **attrs)], [("x", list(x))],
              [("y", list(y))], [("w", f32(3, 2, 3, 3)), ("b", f32(2))])
    check(m, {"x": f32(*x)}, devices, ops=["TRANSPOSE_CONV_2D"])


def test_grouped_conv_transpose_is_split_per_group(devices):
    m = graph([node("ConvTranspose", ["x", "w", "b"], group=2, strides=[2, 2])],
              [("x", [1, 4, 3, 3])], [("y", [1, 6, 7, 7])], [("w", f32(4, 3, 3, 3)), ("b", f32(6))])
    check(m, {"x": f32(1, 4, 3, 3)}, devices,
          ops=["SPLIT", "TRANSPOSE_CONV_2D", "TRANSPOSE_CONV_2D", "CONCATENATION"])


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


def test_mul_add_by_channel_constants_fold_into_the_conv(devices):
    """A Conv -> BatchNormalization -> Mul -> Add chain (Caffe2's scale layers) is one
    CONV_2D."""
    m = graph([node("Conv", ["x", "w"], ["c"]),
               node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["n"]),
               node("Mul", ["k", "n"], ["m"]), node("Add", ["m", "a"])],
              [("x", [1, 3, 4, 4])], [("y", [1, 4, 4, 4])],
              [("w", f32(4, 3, 1, 1)), *_bn_inits(4), ("k", f32(1, 4, 1, 1)),
               ("a", f32(4, 1, 1))])
    check(m, {"x": f32(1, 3, 4, 4)}, devices, ops=["CONV_2D"])


@pytest.mark.parametrize("op,attrs", [("MaxPool", {"kernel_shape": [3], "strides": [2]}),
                                      ("AveragePool", {"kernel_shape": [2], "pads": [1, 0]})])
def test_pooling_1d(devices, op, attrs):
    from tests.onnx.kit import ort

    x = f32(1, 2, 9)
    probe = graph([node(op, ["x"], **attrs)], [("x", [1, 2, 9])], [("y", None)])
    shape = list(ort(probe, {"x": x})[0].shape)
    m = graph([node(op, ["x"], **attrs)], [("x", [1, 2, 9])], [("y", shape)])
    check(m, {"x": x}, devices, ops=["RESHAPE", op.upper().replace("POOL", "_POOL_2D"),
                                     "RESHAPE"])


def test_random_fills_replace_constant_of_shape_weights(devices):
    """tests/kits/onnx_fills.py (for the light_* models): the fills become random initializers
    and the folded Conv + BatchNormalization still matches onnxruntime."""
    from onnx import TensorProto, helper

    from tests.kits.onnx_fills import randomize_fills

    def fill(name, shape):
        return [node("ConstantOfShape", [name + "_shape"], [name],
                     value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]))], \
            [(name + "_shape", np.array(shape, np.int64))]

    nodes, inits = [], []
    for name, shape in (("w", [4, 3, 3, 3]), ("g", [4]), ("be", [4]), ("mu", [4]),
                        ("var", [4])):
        n, i = fill(name, shape)
        nodes += n
        inits += i
    nodes += [node("Conv", ["x", "w"], ["c"]),
              node("BatchNormalization", ["c", "g", "be", "mu", "var"])]
    m = randomize_fills(graph(nodes, [("x", [1, 3, 5, 5])], [("y", [1, 4, 3, 3])], inits))
    assert "ConstantOfShape" not in {n.op_type for n in m.graph.node}
    out = check(m, {"x": f32(1, 3, 5, 5)}, devices, ops=["CONV_2D"])
    assert out.outputs[0].shape == (1, 4, 3, 3)


def test_instance_norm_1d(devices):
    m = graph([node("InstanceNormalization", ["x", "s", "b"])], [("x", [2, 3, 7])],
              [("y", [2, 3, 7])], [("s", f32(3)), ("b", f32(3))])
    check(m, {"x": f32(2, 3, 7)}, devices,
          ops=["RESHAPE", "INSTANCE_NORMALIZATION", "MUL", "ADD", "RESHAPE"])


@pytest.mark.parametrize("m", [0, 2, 4])
def test_conv3x3_paths_and_nchw_pointwise_against_onnxruntime(devices, m):
    """A 3x3 stride-1 Conv over 64 channels (NCHW: Winograd by default, each path forced
    here) then a 1x1 Conv (the input planes read in place) against onnxruntime."""
    w1, w2 = f32(64, 64, 3, 3, scale=0.1), f32(32, 64, 1, 1, scale=0.1)
    model = graph([node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1]),
                   node("Relu", ["c"], ["r"]), node("Conv", ["r", "w2", "b2"], ["y"])],
                  [("x", (2, 64, 10, 9))], [("y", (2, 32, 10, 9))],
                  [("w1", w1), ("b1", f32(64)), ("w2", w2), ("b2", f32(32))])
    reference, cl_device = devices
    check(model, {"x": f32(2, 64, 10, 9)}, [reference, cl_device.with_options(winograd=m)])
