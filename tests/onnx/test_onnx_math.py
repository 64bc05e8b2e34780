"""Element-wise operators (broadcasting), activations, Softmax / LogSoftmax per opset and the
matrix products against onnxruntime, on both devices."""

import numpy as np
import pytest
from onnx import TensorProto

from tests.onnx.kit import check, f32, graph, node, op_types


@pytest.mark.parametrize("op,nn", [("Add", "ADD"), ("Sub", "SUB"), ("Mul", "MUL"),
                                   ("Div", "DIV"), ("Min", "MINIMUM"), ("Max", "MAXIMUM")])
def test_binary_broadcasting(devices, op, nn):
    m = graph([node(op, ["a", "b"])], [("a", [2, 3, 4, 5]), ("b", [3, 1, 5])],
              [("y", [2, 3, 4, 5])])
    b = f32(3, 1, 5) + (3.0 if op == "Div" else 0.0)
    check(m, {"a": f32(2, 3, 4, 5), "b": b}, devices, ops=[nn])


def test_binary_with_constants_and_pow(devices):
    m = graph([node("Mul", ["x", "k"], ["t"]), node("Pow", ["t", "p"], ["u"]),
               node("Sub", ["c", "u"])],
              [("x", [1, 4, 3])], [("y", [1, 4, 3])],
              [("k", np.array(0.5, np.float32)), ("p", np.array([2.0], np.float32)),
               ("c", f32(4, 1))])
    check(m, {"x": f32(1, 4, 3)}, devices, ops=["MUL", "POW", "SUB"])


def test_variadic_sum_min_max_mean(devices):
    ins = [("a", [2, 3]), ("b", [1, 3]), ("c", [2, 1])]
    feeds = {"a": f32(2, 3), "b": f32(1, 3), "c": f32(2, 1)}
    for op, nn in (("Sum", ["ADD", "ADD"]), ("Max", ["MAXIMUM", "MAXIMUM"]),
                   ("Min", ["MINIMUM", "MINIMUM"]), ("Mean", ["ADD", "ADD", "MUL"])):
        m = graph([node(op, ["a", "b", "c"])], ins, [("y", [2, 3])])
        check(m, feeds, devices, ops=nn)


@pytest.mark.parametrize("op,nn", [("Relu", "RELU"), ("Sigmoid", "LOGISTIC"), ("Tanh", "TANH"),
                                   ("Exp", "EXP"), ("Abs", "ABS"), ("Neg", "NEG"),
                                   ("Floor", "FLOOR"), ("HardSwish", "HARD_SWISH"),
                                   ("Sqrt", "SQRT"), ("Log", "LOG"), ("Reciprocal", "DIV")])
def test_unary(devices, op, nn):
    x = f32(2, 3, 4)
    if op in ("Sqrt", "Log", "Reciprocal"):
        x = np.abs(x) + 0.5
    m = graph([node(op, ["x"])], [("x", [2, 3, 4])], [("y", [2, 3, 4])], opset=14)
    check(m, {"x": x}, devices, ops=[nn])


def test_activations_with_attributes(devices):
    x = {"x": f32(1, 3, 4, 4, scale=3.0)}
    io = ([("x", [1, 3, 4, 4])], [("y", [1, 3, 4, 4])])
    check(graph([node("LeakyRelu", ["x"], alpha=0.2)], *io), x, devices, ops=["PRELU"])
    check(graph([node("PRelu", ["x", "s"])], *io, [("s", f32(3, 1, 1))]), x, devices,
          ops=["PRELU"])
    check(graph([node("HardSigmoid", ["x"], alpha=0.3, beta=0.4)], *io), x, devices,
          ops=["MUL", "ADD", "MUL"])
    check(graph([node("HardSigmoid", ["x"])], *io), x, devices)
    check(graph([node("Elu", ["x"], alpha=0.7)], *io), x, devices, ops=["ELU"])


@pytest.mark.parametrize("opset,attrs,inits,ops", [
    (6 + 1, {"min": 0.0, "max": 6.0}, [], ["RELU6"]),
    (7, {"min": -0.5, "max": 0.75}, [], ["MAXIMUM", "MINIMUM"]),
    (11, {}, [("lo", np.array(-1.0, np.float32)), ("hi", np.array(1.0, np.float32))],
     ["RELU1"]),
    (13, {}, [("lo", np.array(0.0, np.float32))], ["RELU"]),
    (13, {}, [("lo", np.array(-0.3, np.float32)), ("hi", np.array(2.0, np.float32))],
     ["MAXIMUM", "MINIMUM"]),
])
def test_clip_attributes_and_inputs(devices, opset, attrs, inits, ops):
    names = ["x"] + [n for n, _ in inits]
    m = graph([node("Clip", names, **attrs)], [("x", [2, 8])], [("y", [2, 8])], inits,
              opset=opset)
    check(m, {"x": f32(2, 8, scale=4.0)}, devices, ops=ops)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset,axis,ops", [
    (11, None, ["RESHAPE", "{nn}", "RESHAPE"]),   # opset < 13: 2-D coercion at axis 1
    (11, 2, ["{nn}"]),                            # the last axis: one axis after all
    (13, None, ["{nn}"]),                         # opset 13: axis -1
    (13, 1, ["{nn}"]),                            # opset 13: the axis alone
])
def test_softmax_axis_semantics(devices, op, opset, axis, ops):
    nn = "SOFTMAX" if op == "Softmax" else "LOG_SOFTMAX"
    attrs = {} if axis is None else {"axis": axis}
    m = graph([node(op, ["x"], **attrs)], [("x", [2, 3, 4])], [("y", [2, 3, 4])], opset=opset)
    check(m, {"x": f32(2, 3, 4)}, devices, ops=[o.format(nn=nn) for o in ops])


@pytest.mark.parametrize("attrs,a_shape,c_shape", [
    ({}, (3, 5), (4,)),
    ({"transB": 1, "alpha": 0.5, "beta": 2.0}, (3, 5), (1, 4)),
    ({"transA": 1}, (5, 3), (3, 4)),
    ({}, (3, 5), None),
])
def test_gemm_constant_b(devices, attrs, a_shape, c_shape):
    b = f32(4, 5) if attrs.get("transB") else f32(5, 4)
    inits = [("b", b)] + ([("c", f32(*c_shape))] if c_shape else [])
    m = graph([node("Gemm", ["a", "b"] + (["c"] if c_shape else []), **attrs)],
              [("a", list(a_shape))], [("y", [3, 4])], inits)
    imported = check(m, {"a": f32(*a_shape)}, devices)
    assert "FULLY_CONNECTED" in op_types(imported)


def test_gemm_and_matmul_with_variable_b(devices):
    m = graph([node("Gemm", ["a", "b", "c"], transB=1, alpha=2.0)],
              [("a", [3, 5]), ("b", [4, 5])], [("y", [3, 4])], [("c", f32(4))])
    check(m, {"a": f32(3, 5), "b": f32(4, 5)}, devices, ops=["BATCH_MATMUL", "MUL", "ADD"])
    m = graph([node("MatMul", ["a", "b"])], [("a", [2, 3, 5]), ("b", [2, 5, 4])],
              [("y", [2, 3, 4])])
    check(m, {"a": f32(2, 3, 5), "b": f32(2, 5, 4)}, devices, ops=["BATCH_MATMUL"])
    m = graph([node("MatMul", ["a", "b"])], [("a", [2, 2, 3, 5]), ("b", [5, 4])],
              [("y", [2, 2, 3, 4])])
    check(m, {"a": f32(2, 2, 3, 5), "b": f32(5, 4)}, devices,
          ops=["RESHAPE", "BATCH_MATMUL"])


def test_matmul_constant_b(devices):
    m = graph([node("MatMul", ["a", "b"])], [("a", [3, 5])], [("y", [3, 4])], [("b", f32(5, 4))])
    check(m, {"a": f32(3, 5)}, devices, ops=["FULLY_CONNECTED"])
    m = graph([node("MatMul", ["a", "b"])], [("a", [2, 3, 5])], [("y", [2, 3, 4])],
              [("b", f32(5, 4))])
    check(m, {"a": f32(2, 3, 5)}, devices, ops=["FULLY_CONNECTED", "RESHAPE"])


def test_comparison_outputs_bool(devices):
    m = graph([node("Greater", ["a", "b"])], [("a", [2, 3]), ("b", [2, 3])],
              [("y", [2, 3], TensorProto.BOOL)])
    check(m, {"a": f32(2, 3), "b": f32(2, 3)}, devices, ops=["GREATER"])


def test_softmax_opset_11_with_a_dynamic_batch(devices):
    m = graph([node("Softmax", ["x"])], [("x", ["N", 3, 4])], [("y", ["N", 3, 4])], opset=11)
    imported = check(m, {"x": f32(2, 3, 4)}, devices, ops=["RESHAPE", "SOFTMAX", "RESHAPE"])
    assert imported.inputs[0].shape == (0, 3, 4)


def test_constant_nodes_are_folded(devices):
    from onnx import helper

    c = helper.make_tensor("c", TensorProto.FLOAT, [3], [1.0, -2.0, 0.5])
    m = graph([node("Constant", [], ["k"], value=c), node("Constant", [], ["e"], value_float=2.0),
               node("Pow", ["k", "e"], ["k2"]), node("Mul", ["x", "k2"])],
              [("x", [2, 3])], [("y", [2, 3])])
    check(m, {"x": f32(2, 3)}, devices, ops=["MUL"])


@pytest.mark.parametrize("sa,sb,const_b", [((5,), (5, 4), True), ((2, 3, 5), (5,), True),
                                            ((5,), (2, 5, 4), False), ((3, 5), (5,), False)])
def test_matmul_with_a_vector(devices, sa, sb, const_b):
    y = list(np.matmul(np.zeros(sa), np.zeros(sb)).shape)
    inputs = [("a", list(sa))] + ([] if const_b else [("b", list(sb))])
    inits = [("b", f32(*sb))] if const_b else []
    m = graph([node("MatMul", ["a", "b"])], inputs, [("y", y)], inits)
    feeds = {"a": f32(*sa), **({} if const_b else {"b": f32(*sb)})}
    check(m, feeds, devices)
