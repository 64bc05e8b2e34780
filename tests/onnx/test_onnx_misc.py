"""Operators beyond the issue's list (DepthToSpace / SpaceToDepth, Tile, Expand, Where,
ArgMax / ArgMin, TopK, LayerNormalization, Softplus, Ceil) against onnxruntime on both
devices."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from clnn.onnx import OnnxImportError, load
from tests.onnx.kit import check, f32, graph, node

I64 = np.int64


def test_depth_to_space_and_back(devices):
    m = graph([node("DepthToSpace", ["x"], blocksize=2)], [("x", [1, 8, 2, 3])],
              [("y", [1, 2, 4, 6])])
    check(m, {"x": f32(1, 8, 2, 3)}, devices, ops=["DEPTH_TO_SPACE"])
    m = graph([node("SpaceToDepth", ["x"], blocksize=2)], [("x", [1, 2, 4, 6])],
              [("y", [1, 8, 2, 3])])
    check(m, {"x": f32(1, 2, 4, 6)}, devices, ops=["SPACE_TO_DEPTH"])
    m = graph([node("DepthToSpace", ["x"], blocksize=2, mode="CRD")], [("x", [1, 8, 2, 3])],
              [("y", [1, 2, 4, 6])])
    check(m, {"x": f32(1, 8, 2, 3)}, devices, ops=["GATHER", "DEPTH_TO_SPACE"])


def test_tile_and_expand(devices):
    m = graph([node("Tile", ["x", "r"])], [("x", [2, 3])], [("y", [4, 9])],
              [("r", np.array([2, 3], I64))])
    check(m, {"x": f32(2, 3)}, devices, ops=["TILE"])
    m = graph([node("Expand", ["x", "s"])], [("x", [3, 1])], [("y", [2, 3, 4])],
              [("s", np.array([2, 1, 4], I64))])
    check(m, {"x": f32(3, 1)}, devices, ops=["RESHAPE", "TILE"])


def test_where_broadcasts_constants(devices):
    m = graph([node("Greater", ["x", "zero"], ["c"]), node("Where", ["c", "x", "k"])],
              [("x", [2, 5])], [("y", [2, 5])],
              [("zero", np.array(0.0, np.float32)), ("k", np.array(-1.0, np.float32))])
    check(m, {"x": f32(2, 5)}, devices, ops=["GREATER", "SELECT"])


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("keep", [0, 1])
def test_argmax_argmin(devices, op, keep):
    y = [2, 1, 4] if keep else [2, 4]
    m = graph([node(op, ["x"], axis=1, keepdims=keep)], [("x", [2, 3, 4])],
              [("y", y, TensorProto.INT64)])
    check(m, {"x": f32(2, 3, 4)}, devices)


def test_topk(reference):
    """TOPK_V2 has no OpenCL kernel: the reference device only."""
    m = graph([helper.make_node("TopK", ["x", "k"], ["v", "i"])], [("x", [3, 6])],
              [("v", [3, 2]), ("i", [3, 2], TensorProto.INT64)], [("k", np.array([2], I64))])
    check(m, {"x": f32(3, 6)}, [reference], ops=["TOPK_V2"])


@pytest.mark.parametrize("axis,unit_scale", [(-1, False), (1, False), (-1, True)])
def test_layer_norm(devices, axis, unit_scale):
    scale_shape = [4] if axis == -1 else [3, 4]
    scale = np.ones(scale_shape, np.float32) if unit_scale else f32(*scale_shape)
    m = graph([node("LayerNormalization", ["x", "s", "b"], axis=axis, epsilon=1e-3)],
              [("x", [2, 3, 4])], [("y", [2, 3, 4])], [("s", scale), ("b", f32(*scale_shape))])
    check(m, {"x": f32(2, 3, 4)}, devices)


def test_softplus_and_ceil(devices):
    m = graph([node("Softplus", ["x"])], [("x", [2, 6])], [("y", [2, 6])])
    check(m, {"x": f32(2, 6, scale=4.0)}, devices, ops=["EXP", "ADD", "LOG"])
    m = graph([node("Ceil", ["x"])], [("x", [2, 6])], [("y", [2, 6])])
    check(m, {"x": f32(2, 6, scale=4.0)}, devices, ops=["NEG", "FLOOR", "NEG"])


def test_erf_and_gelu(devices):
    """NNAPI has no ERF: a rational-polynomial form (abs error < 1.5e-7) of NNAPI arithmetic."""
    x = {"x": np.concatenate([f32(2, 20, scale=2.0), np.zeros((2, 1), np.float32)], axis=1)}
    m = graph([node("Erf", ["x"])], [("x", [2, 21])], [("y", [2, 21])])
    check(m, x, devices)
    for approximate in ("none", "tanh"):
        m = graph([node("Gelu", ["x"], approximate=approximate)], [("x", [2, 21])],
                  [("y", [2, 21])], opset=20)
        check(m, x, devices)


def test_other_domains_are_refused():
    """Operators of other domains (com.microsoft's fused ones) have no mapping."""
    m = graph([helper.make_node("FusedGemm", ["x"], ["y"], domain="com.microsoft")],
              [("x", [2, 3])], [("y", [2, 3])])
    with pytest.raises(OnnxImportError, match=r"domain 'com.microsoft' has no NNAPI mapping$"):
        load(m.SerializeToString())


def test_mish(devices):
    m = graph([node("Mish", ["x"])], [("x", [2, 6])], [("y", [2, 6])], opset=18)
    check(m, {"x": f32(2, 6, scale=3.0)}, devices, ops=["EXP", "ADD", "LOG", "TANH", "MUL"])


@pytest.mark.parametrize("op,attrs", [("Selu", {}), ("Selu", {"alpha": 1.2, "gamma": 0.8}),
                                      ("Celu", {"alpha": 0.7})])
def test_selu_celu(devices, op, attrs):
    m = graph([node(op, ["x"], **attrs)], [("x", [2, 6])], [("y", [2, 6])], opset=13)
    check(m, {"x": f32(2, 6, scale=2.0)}, devices)


def test_image_scaler_of_opset_8(devices):
    """ImageScaler (an experimental operator of opsets < 9, in old model-zoo files): the
    checker does not know it any more; onnxruntime still runs it."""
    m = graph([node("ImageScaler", ["x"], scale=0.5, bias=[1.0, -2.0, 3.0])],
              [("x", [1, 3, 2, 2])], [("y", [1, 3, 2, 2])], opset=8)
    check(m, {"x": f32(1, 3, 2, 2)}, devices, ops=["MUL", "ADD"], checked=False)
