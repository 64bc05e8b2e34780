"""QuantizeLinear / DequantizeLinear and QLinearConv / QLinearMatMul on NNAPI's quantized types,
against onnxruntime on both devices. Tolerance: one quantization step of the output (rounding
of the requantization differs between runtimes by at most one step)."""

import numpy as np
import pytest
from onnx import TensorProto

from tests.onnx.kit import check, f32, graph, node, op_types

U8, I8 = np.uint8, np.int8


def qparams(prefix, scale, zp, dtype):
    return [(f"{prefix}_s", np.array(scale, np.float32)), (f"{prefix}_z", np.array(zp, dtype))]


@pytest.mark.parametrize("dtype,zp", [(U8, 128), (I8, -3)])
def test_quantize_dequantize_round_trip(devices, dtype, zp):
    m = graph([node("QuantizeLinear", ["x", "q_s", "q_z"], ["q"]),
               node("DequantizeLinear", ["q", "q_s", "q_z"])],
              [("x", [2, 3, 4])], [("y", [2, 3, 4])], qparams("q", 0.05, zp, dtype))
    check(m, {"x": f32(2, 3, 4)}, devices, ops=["QUANTIZE", "DEQUANTIZE"], atol=0.05 + 1e-6)


def test_dequantized_constant_weights_are_folded(devices):
    w = np.random.default_rng(3).integers(-100, 100, (4, 3, 1, 1)).astype(I8)
    m = graph([node("DequantizeLinear", ["wq", "w_s", "w_z"], ["w"]),
               node("Conv", ["x", "w"])],
              [("x", [1, 3, 4, 4])], [("y", [1, 4, 4, 4])],
              [("wq", w), *qparams("w", 0.01, 0, I8)])
    check(m, {"x": f32(1, 3, 4, 4)}, devices, ops=["CONV_2D"])


def _qconv_model(dtype, per_channel, group=1, zp=10):
    rng = np.random.default_rng(5)
    c, o = 4, 4 if group == 4 else 6
    w = rng.integers(-60, 60, (o, c // group, 3, 3)).astype(I8 if per_channel else dtype)
    if not per_channel and dtype == U8:
        w = rng.integers(100, 160, (o, c // group, 3, 3)).astype(U8)
    w_s = np.linspace(0.005, 0.02, o).astype(np.float32) if per_channel else \
        np.array(0.01, np.float32)
    w_z = np.zeros(o if per_channel else (), w.dtype) if per_channel or dtype == I8 else \
        np.array(128, U8)
    bias = rng.integers(-500, 500, o).astype(np.int32)
    inits = [*qparams("x", 0.03, zp, dtype), ("w", w), ("w_s", w_s), ("w_z", w_z),
             *qparams("y", 0.05, zp, dtype), ("b", bias), *qparams("o", 0.05, zp, dtype)]
    nodes = [node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
             node("QLinearConv", ["xq", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z", "b"],
                  ["yq"], pads=[1, 1, 1, 1], group=group),
             node("DequantizeLinear", ["yq", "o_s", "o_z"])]
    return graph(nodes, [("x", [1, c, 5, 5])], [("y", [1, o, 5, 5])], inits)


@pytest.mark.parametrize("dtype,per_channel,group,op", [
    (U8, False, 1, "CONV_2D"), (I8, False, 1, "CONV_2D"), (U8, True, 1, "CONV_2D"),
    (I8, True, 1, "CONV_2D"), (U8, True, 4, "DEPTHWISE_CONV_2D")])
def test_qlinear_conv(devices, dtype, per_channel, group, op):
    imported = check(_qconv_model(dtype, per_channel, group), {"x": f32(1, 4, 5, 5)}, devices,
                     atol=0.05 + 1e-6)
    assert op_types(imported) == ["QUANTIZE", op, "DEQUANTIZE"]


@pytest.mark.parametrize("a_type,b_type", [(U8, U8), (U8, I8), (I8, I8)])
def test_qlinear_matmul(devices, a_type, b_type):
    rng = np.random.default_rng(9)
    b = rng.integers(0 if b_type == U8 else -100, 200 if b_type == U8 else 100,
                     (5, 3)).astype(b_type)
    zb = 100 if b_type == U8 else 2
    inits = [*qparams("a", 0.02, 5, a_type), ("b", b), *qparams("b", 0.01, zb, b_type),
             *qparams("y", 0.04, 3, a_type)]
    nodes = [node("QuantizeLinear", ["x", "a_s", "a_z"], ["aq"]),
             node("QLinearMatMul", ["aq", "a_s", "a_z", "b", "b_s", "b_z", "y_s", "y_z"],
                  ["yq"]),
             node("DequantizeLinear", ["yq", "y_s", "y_z"])]
    m = graph(nodes, [("x", [2, 5])], [("y", [2, 3])], inits)
    check(m, {"x": f32(2, 5)}, devices, ops=["QUANTIZE", "FULLY_CONNECTED", "DEQUANTIZE"],
          atol=0.04 + 1e-6)


def test_quantized_model_input(devices):
    """A uint8 graph input takes the scale and zero point of the DequantizeLinear reading it."""
    m = graph([node("DequantizeLinear", ["x", "s", "z"])], [("x", [2, 3], TensorProto.UINT8)],
              [("y", [2, 3])], [("s", np.array(0.1, np.float32)), ("z", np.array(7, U8))])
    imported = check(m, {"x": np.arange(6, dtype=U8).reshape(2, 3) * 20}, devices)
    assert imported.inputs[0].dtype == np.uint8


def test_uint8_input_read_by_qlinear_conv(devices):
    """A uint8 graph input read by a QLinearConv (onnxruntime's QOperator models quantize
    outside the graph) takes the node's input scale and zero point."""
    m = _qconv_model(U8, False)
    del m.graph.node[0]  # no QuantizeLinear: the graph input is xq itself
    m.graph.input[0].name = "xq"
    m.graph.input[0].type.tensor_type.elem_type = TensorProto.UINT8
    xq = np.random.default_rng(2).integers(0, 255, (1, 4, 5, 5)).astype(U8)
    imported = check(m, {"xq": xq}, devices, atol=0.05 + 1e-6)
    assert imported.inputs[0].dtype == np.uint8
    assert op_types(imported) == ["CONV_2D", "DEQUANTIZE"]
