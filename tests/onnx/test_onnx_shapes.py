"""Shapes onnx's shape inference leaves unknown (clnn/onnx/shapes.py): Reshape targets computed
by Shape -> Gather / Slice -> Concat (-> Cast / Unsqueeze) chains, as paddle2onnx exports
them, and the operators after them. Each graph is first shown to defeat onnx's inference, then
imported with every operand's shape known and checked against onnxruntime on both devices."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto

from clnn.onnx import load
from tests.onnx.kit import check, f32, graph, node

I64 = TensorProto.INT64
I32 = TensorProto.INT32


def i64(*v):
    return np.asarray(v, np.int64)


def unknown_to_onnx(model, name) -> bool:
    """Whether onnx's shape inference (with data propagation) leaves ``name`` without a full
    shape."""
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    for vi in [*inferred.graph.value_info, *inferred.graph.output]:
        if vi.name == name:
            tt = vi.type.tensor_type
            return not tt.HasField("shape") or any(
                not d.HasField("dim_value") for d in tt.shape.dim)
    return True


def every_shape_known(imported):
    tensors = [o for o in imported.model.main.operands if o.type.name.startswith("TENSOR")]
    return all(o.dimensions and 0 not in o.dimensions for o in tensors)


def paddle_head(opset=12):
    """Conv, then a flatten whose target is Shape -> Cast(int32) -> Slice -> Cast(int64) ->
    Concat with a constant, then MatMul + Add + Softmax (ch_ppocr_mobile_v2.0_cls's tail)."""
    nodes = [
        node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        node("GlobalAveragePool", ["c"], ["p"]),
        node("Shape", ["p"], ["s"]),
        node("Cast", ["s"], ["s32"], to=I32),
        node("Slice", ["s32", "st", "en", "ax"], ["b32"]),
        node("Cast", ["b32"], ["b"], to=I64),
        node("Concat", ["b", "minus1"], ["target"], axis=0),
        node("Reshape", ["p", "target"], ["flat"]),
        node("MatMul", ["flat", "fc"], ["mm"]),
        node("Add", ["mm", "bias"], ["logits"]),
        node("Softmax", ["logits"], ["y"], axis=-1),
    ]
    inits = [("w", f32(6, 3, 3, 3)), ("st", i64(0)), ("en", i64(1)), ("ax", i64(0)),
             ("minus1", i64(-1)), ("fc", f32(6, 4)), ("bias", f32(4))]
    return graph(nodes, [("x", ["N", 3, "H", "W"])], [("y", ["N", "K"])], inits, opset=opset)


def attention(opset=11):
    """A transformer block's attention as paddle2onnx writes it (ch_PP-OCRv4_rec): the qkv
    Reshape target from Shape -> Gather -> Unsqueeze -> Concat, a rank-5 Transpose with a
    size-1 axis, Gathers of q / k / v, then MatMul, Softmax, Transpose and a Reshape back
    whose target is computed too."""
    t, h, d = 6, 2, 4
    c = h * d
    nodes = [
        node("MatMul", ["x", "wqkv"], ["qkv"]),  # [1, T, 3C]
        node("Shape", ["x"], ["sx"]),
        node("Gather", ["sx", "one"], ["tn"], axis=0),
        node("Unsqueeze", ["tn"], ["tn1"], **({"axes": [0]} if opset < 13 else {})),
        node("Concat", ["zero1", "tn1", "dims5"], ["t5"], axis=0),
        node("Reshape", ["qkv", "t5"], ["q5"]),  # [1, T, 3, h, d]
        node("Transpose", ["q5"], ["qt"], perm=[2, 0, 3, 1, 4]),  # [3, 1, h, T, d]
        node("Gather", ["qt", "zero"], ["q"], axis=0),
        node("Gather", ["qt", "one"], ["k"], axis=0),
        node("Gather", ["qt", "two"], ["v"], axis=0),
        node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        node("MatMul", ["q", "kt"], ["att"]),
        node("Softmax", ["att"], ["sm"], axis=-1),
        node("MatMul", ["sm", "v"], ["o"]),  # [1, h, T, d]
        node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        node("Concat", ["zero1", "tn1", "cdim"], ["t3"], axis=0),
        node("Reshape", ["ot", "t3"], ["y"]),
    ]
    if opset >= 13:
        nodes[3] = node("Unsqueeze", ["tn", "zero1"], ["tn1"])
    inits = [("wqkv", f32(c, 3 * c, scale=0.3)), ("one", np.asarray(1, np.int64)),
             ("zero", np.asarray(0, np.int64)), ("two", np.asarray(2, np.int64)),
             ("zero1", i64(0)), ("dims5", i64(3, h, d)), ("cdim", i64(c))]
    return graph(nodes, [("x", [1, "T", c])], [("y", [1, "T", "C"])], inits, opset=opset), t, c


@pytest.mark.parametrize("opset", [11, 12])
def test_paddle_flatten_target_from_shape_arithmetic(devices, opset):
    model = paddle_head(opset)
    assert unknown_to_onnx(model, "mm")  # the gap: onnx leaves the MatMul without a shape
    feeds = {"x": f32(1, 3, 10, 12)}
    imported = check(model, feeds, devices, shapes={"x": (1, 3, 10, 12)})
    assert every_shape_known(imported)
    assert imported.outputs[0].shape == (1, 4)


def test_without_fixed_shapes_the_dynamic_dimension_stays_dynamic(reference):
    """Only the open dimensions stay open: the batch's 0 in the folded target copies the
    input's batch, the rest is known; two batch sizes run."""
    model = paddle_head()
    imported = load(model.SerializeToString(), shapes=None)
    assert imported.outputs[0].shape == (0, 4)
    imported = load(model.SerializeToString(), shapes={"x": (2, 3, 7, 9)})
    assert imported.outputs[0].shape == (2, 4) and every_shape_known(imported)
    check(model, {"x": f32(2, 3, 7, 9)}, [reference], shapes={"x": (2, 3, 7, 9)})


@pytest.mark.parametrize("opset", [11, 13])
def test_attention_with_computed_targets_and_a_rank5_transpose(devices, opset):
    model, t, c = attention(opset)
    assert unknown_to_onnx(model, "y")
    imported = check(model, {"x": f32(1, t, c)}, devices, shapes={"x": (1, t, c)})
    assert every_shape_known(imported)
    assert imported.outputs[0].shape == (1, t, c)


def test_shapes_after_the_target_flow_through_several_operators(devices):
    """A computed Reshape target feeding Transpose -> Conv -> Relu -> Reshape (computed
    again): each operator's output shape comes from the one before."""
    nodes = [
        node("Shape", ["x"], ["s"]),
        node("Gather", ["s", "idx"], ["hw"], axis=0),  # [H, W]
        node("Cast", ["hw"], ["hw32"], to=I32),
        node("Cast", ["hw32"], ["hw64"], to=I64),
        node("Concat", ["one3", "hw64"], ["tgt"], axis=0),  # [1, 3, H, W]
        node("Reshape", ["x", "tgt"], ["r"]),
        node("Transpose", ["r"], ["tr"], perm=[0, 1, 3, 2]),
        node("Conv", ["tr", "w"], ["cv"]),
        node("Relu", ["cv"], ["rl"]),
        node("Shape", ["rl"], ["s2"]),
        node("Slice", ["s2", "st", "en"], ["nc"]),
        node("Concat", ["nc", "minus1"], ["tgt2"], axis=0),
        node("Reshape", ["rl", "tgt2"], ["y"]),
    ]
    inits = [("idx", i64(2, 3)), ("one3", i64(1, 3)), ("w", f32(5, 3, 3, 3)),
             ("st", i64(0)), ("en", i64(2)), ("minus1", i64(-1))]
    model = graph(nodes, [("x", ["N", 3, "H", "W"])], [("y", ["N", "C", "K"])], inits, opset=12)
    assert unknown_to_onnx(model, "y")
    imported = check(model, {"x": f32(1, 3, 9, 7)}, devices, shapes={"x": (1, 3, 9, 7)})
    assert every_shape_known(imported)
    assert imported.outputs[0].shape == (1, 5, 35)  # 7x9 transposed, 3x3 valid conv


#: rapidocr-onnxruntime's PaddleOCR models (clnn models fetch --onnx), with the input shapes
#: clnn/models/onnx.py gives them
PADDLE = ["ch_ppocr_mobile_v2.0_cls_infer.onnx", "ch_PP-OCRv4_det_infer.onnx",
          "ch_PP-OCRv4_rec_infer.onnx"]


@pytest.fixture(scope="module")
def paddle_paths():
    from clnn.models.onnx import FetchError, fetch_onnx

    try:
        return fetch_onnx(PADDLE)
    except FetchError as e:
        pytest.skip(f"the PaddleOCR models are not fetched and cannot be: {e}")


def text_image(shape, seed=0):
    """Three lines of dark strokes on white, normalized to [-1, 1] as PaddleOCR feeds its
    detector."""
    rng = np.random.default_rng(seed)
    _, c, h, w = shape
    img = np.ones((h, w), np.float32)
    for row in (h * 5 // 24, h // 2, h * 3 // 4):
        x = 8
        while x < w - 12:
            sw, sh = int(rng.integers(2, 5)), int(rng.integers(8, 13))
            img[row:row + sh, x:x + sw] = -1.0
            img[row + sh // 2, x:x + sw + 3] = -1.0
            x += sw + int(rng.integers(2, 5))
    return np.broadcast_to(img, (1, c, h, w)).astype(np.float32).copy()


@pytest.mark.parametrize("name", PADDLE)
def test_paddle2onnx_models_match_onnxruntime(paddle_paths, reference, cl_device, name):
    from clnn.cli.onnx_run import OrtRunner
    from clnn.cli.run import ClnnRunner, compare, random_inputs
    from clnn.models.onnx import model_shapes

    path = paddle_paths[name]
    imported = load(path, shapes=model_shapes(path))
    assert every_shape_known(imported)
    inputs = random_inputs(imported)
    if name == "ch_PP-OCRv4_det_infer.onnx":  # noise has no text: its map would be all 0
        inputs = [text_image(imported.inputs[0].shape)]
    expected = OrtRunner(path).run(imported, inputs)[0]
    assert float(np.ptp(expected[0])) > 0.1  # outputs that move
    for device in (reference, cl_device):
        outs, _ = ClnnRunner(imported, device).run(inputs)
        assert [o.shape for o in outs] == [np.shape(e) for e in expected]
        for row in compare(outs, expected):
            assert row["within_tolerance"], (name, device.name, row)
