"""quantized="onnxruntime" on QDQ models (clnn/onnx/qdq.py, clnn/onnx/ops_qfloat.py): the QDQ
units fused are the ones onnxruntime's x86 optimizer fuses (with int8 activations it relabels
int8 QuantizeLinear -> DequantizeLinear pairs as uint8 only where the tensor has one reader,
and fuses Conv / MatMul / Gemm only on uint8), QLinearSoftmax computes onnxruntime's table
softmax bit for bit, and a HardSigmoid left in float rounds as onnxruntime's does."""

import numpy as np
import onnx
import pytest

pytest.importorskip("onnxruntime.quantization")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from clnn.bench import onnx_quant  # noqa: E402
from clnn.cli.run import ClnnRunner  # noqa: E402
from clnn.onnx import load  # noqa: E402
from clnn.onnx.qdq import fuse_qdq  # noqa: E402
from tests.onnx.kit import graph, node  # noqa: E402
from tests.onnx.test_onnx_qlinear import small_model, within  # noqa: E402

RNG = np.random.default_rng(385)
#: the fused operators whose choice follows onnxruntime's (Sigmoid, LeakyRelu and Concat
#: units are fused whatever onnxruntime does: both graphs give the same bits there)
FOLLOWED = ("QLinearConv", "QLinearMatMul", "QGemm", "QLinearAdd", "QLinearMul",
            "QLinearAveragePool", "QLinearGlobalAveragePool", "QLinearSoftmax")


def _w(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def hard_swish_model() -> bytes:
    """Conv, x * HardSigmoid(x), pools, a 1000-way Gemm and Softmax (MobileNetV3's head)."""
    nodes = [node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             node("HardSigmoid", ["c1"], ["h"], alpha=1 / 6),
             node("Mul", ["c1", "h"], ["hs"]),
             node("GlobalAveragePool", ["hs"], ["gp"]),
             node("Flatten", ["gp"], ["f"]),
             node("Gemm", ["f", "wg", "bg"], ["g"], transB=1),
             node("Softmax", ["g"], ["y"], axis=-1)]
    inits = [("w1", _w(16, 3, 3, 3)), ("b1", _w(16, scale=0.1)),
             ("wg", _w(1000, 16, scale=2.0)), ("bg", _w(1000, scale=0.1))]
    return graph(nodes, [("x", [2, 3, 8, 8])], [("y", [2, 1000])], inits,
                 opset=13).SerializeToString()


def ort_fused(path) -> dict:
    """Counts of the FOLLOWED operators in onnxruntime's level-2 optimized graph."""
    import onnxruntime as rt

    opts = rt.SessionOptions()
    opts.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    opts.optimized_model_filepath = str(path) + ".opt.onnx"
    rt.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return _counts(onnx.load(opts.optimized_model_filepath))


def _counts(model) -> dict:
    ops = [n.op_type for n in model.graph.node]
    return {op: ops.count(op) for op in FOLLOWED}


@pytest.mark.parametrize("fmt", ["qdq-u8", "qdq-u8-pc", "qdq-s8", "qdq-s8-pc"])
@pytest.mark.parametrize("which", ["small", "hard_swish"])
def test_units_fused_are_onnxruntimes(tmp_path, fmt, which):
    """Per operator, as many units fused as onnxruntime fuses; with int8 activations the
    convolutions whose input or output has several readers stay in float."""
    data = small_model() if which == "small" else hard_swish_model()
    path = onnx_quant.quantize(data, fmt, str(tmp_path))
    expected = ort_fused(path)
    assert _counts(fuse_qdq(onnx.load(path))) == expected
    if which == "small" and fmt.startswith("qdq-s8"):
        assert expected["QLinearConv"] == 0  # both convolutions' outputs have several readers
    if fmt.startswith("qdq-u8"):
        assert expected["QLinearConv"] > 0


@pytest.mark.parametrize("fmt", ["qdq-u8", "qdq-u8-pc", "qdq-s8", "qdq-s8-pc", "qop-u8",
                                 "qop-s8"])
def test_hard_swish_head_gives_onnxruntimes_bits(tmp_path, reference, cl_device, fmt):
    """HardSigmoid in float between the quantizations, QLinearSoftmax on 1000 classes:
    0 LSB on both devices (as measured)."""
    path = onnx_quant.quantize(hard_swish_model(), fmt, str(tmp_path))
    within(path, [reference, cl_device], max_lsb=0.0, quantized="onnxruntime")


def softmax_model(d: int, dtype, x_scale: float, y_scale: float, rows: int = 16):
    """QuantizeLinear -> QLinearSoftmax (com.microsoft) on [rows, d]."""
    zx = np.asarray(0 if dtype == np.int8 else 128, dtype)
    zy = np.asarray(-128 if dtype == np.int8 else 0, dtype)
    elem = TensorProto.INT8 if dtype == np.int8 else TensorProto.UINT8
    consts = [("xs", np.float32(x_scale)), ("xz", zx), ("ys", np.float32(y_scale)), ("yz", zy)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             helper.make_node("QLinearSoftmax", ["q", "xs", "xz", "ys", "yz"], ["y"],
                              domain="com.microsoft", axis=-1, opset=13)]
    g = helper.make_graph(nodes, "softmax",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, d])],
                          [helper.make_tensor_value_info("y", elem, [rows, d])],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in consts])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                               helper.make_opsetid("com.microsoft", 1)])


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("d,x_scale,y_scale", [(1000, 0.05, 1 / 256), (1000, 0.2, 1 / 255),
                                               (4, 0.1, 1 / 256), (37, 0.03, 1 / 255)])
def test_qlinear_softmax_is_onnxruntimes(reference, cl_device, dtype, d, x_scale, y_scale):
    """onnxruntime's table softmax, floor(1 / y_scale) and all, bit for bit."""
    from tests.onnx.kit import ort

    model = softmax_model(d, dtype, x_scale, y_scale)
    x = (RNG.standard_normal((16, d)) * 40 * x_scale).astype(np.float32)
    expected = ort(model, {"x": x})[0]
    imported = load(model.SerializeToString(), quantized="onnxruntime")
    for device in (reference, cl_device):
        out = ClnnRunner(imported, device).run([x])[0][0]
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("q", [(1.156968, 133, 0.23072845, 0, 0.5857039, 0),
                               (0.0371, 7, 0.0193, 250, 0.0417, 128)])
def test_dequantize_linear_rounds_once(q, reference, cl_device):
    """DequantizeLinear -> Sum -> QuantizeLinear (a residual Sum the quantizer leaves in
    float): (q - zp) * scale with one float32 rounding as onnxruntime computes it (NNAPI's
    DEQUANTIZE with TFLite's bits rounds q * scale - zp * scale twice), so the float sum and
    its quantization are onnxruntime's bits."""
    from tests.onnx.kit import ort

    u8 = TensorProto.UINT8
    inits = [("s1", np.float32(q[0])), ("z1", np.uint8(q[1])), ("s2", np.float32(q[2])),
             ("z2", np.uint8(q[3])), ("s3", np.float32(q[4])), ("z3", np.uint8(q[5]))]
    nodes = [node("DequantizeLinear", ["a", "s1", "z1"], ["da"]),
             node("DequantizeLinear", ["b", "s2", "z2"], ["db"]),
             node("Sum", ["da", "db"], ["t"]),
             node("QuantizeLinear", ["t", "s3", "z3"], ["y"])]
    shape = [1, 16, 32, 32]
    model = graph(nodes, [("a", shape, u8), ("b", shape, u8)],
                  [("t", shape), ("y", shape, u8)], inits, opset=13)
    rng = np.random.default_rng(3839)
    feeds = {k: rng.integers(0, 256, shape).astype(np.uint8) for k in ("a", "b")}
    expected = ort(model, feeds)
    imported = load(model.SerializeToString(), quantized="onnxruntime")
    for device in (reference, cl_device):
        outs, _ = ClnnRunner(imported, device).run([feeds["a"], feeds["b"]])
        for got, want in zip(outs, expected):
            assert np.array_equal(got, want), (device.name, np.count_nonzero(got != want))


def test_int8_float_conv_gives_onnxruntimes_bits(reference, cl_device):
    """An int8 DequantizeLinear -> Conv -> QuantizeLinear that onnxruntime's x86 build leaves in
    float (no uint8 relabelling without a QuantizeLinear -> DequantizeLinear pair): clnn sums
    the float convolution in MLAS's order (clnn/onnx/mlas_conv.py; here one onnxruntime
    thread and clnn's two give the same panels), with the float bias quantized to int32 as
    onnxruntime's BiasQuantization transformer does (mlas_conv.ort_bias: without it one
    element of 18,432 was 1 off), so even the elements whose exact value (float64) lies
    within a hair of a rounding half, which a sum in another order moved by 1, are
    onnxruntime's."""
    from tests.onnx.kit import ort

    i8 = TensorProto.INT8
    rng = np.random.default_rng(3838)
    w = rng.integers(-127, 128, (32, 64, 3, 3)).astype(np.int8)
    inits = [("xs", np.float32(0.0213)), ("xz", np.int8(-5)), ("w", w),
             ("ws", np.float32(0.0031)), ("wz", np.int8(0)),
             ("b", (rng.standard_normal(32) * 0.1).astype(np.float32)),
             ("ys", np.float32(0.0517)), ("yz", np.int8(3))]
    nodes = [node("DequantizeLinear", ["x", "xs", "xz"], ["dx"]),
             node("DequantizeLinear", ["w", "ws", "wz"], ["dw"]),
             node("Conv", ["dx", "dw", "b"], ["c"], pads=[1, 1, 1, 1]),
             node("QuantizeLinear", ["c", "ys", "yz"], ["y"])]
    out = [1, 32, 24, 24]
    model = graph(nodes, [("x", [1, 64, 24, 24], i8)], [("y", out, i8)], inits, opset=13)
    x = rng.integers(-128, 128, (1, 64, 24, 24)).astype(np.int8)
    expected = ort(model, {"x": x})[0]
    dx = (x.astype(np.float32) + np.float32(5)) * np.float32(0.0213)
    dw = (w.astype(np.float32) * np.float32(0.0031)).astype(np.float64)
    padded = np.pad(dx.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    exact = np.tile(inits[5][1].astype(np.float64)[:, None, None], (1, 24, 24))
    for i in range(3):
        for j in range(3):
            exact += np.einsum("oc,chw->ohw", dw[:, :, i, j], padded[0, :, i:i + 24, j:j + 24])
    t = exact[None] / np.float64(np.float32(0.0517))
    near_half = np.abs(t - np.floor(t) - 0.5) < 1e-3
    imported = load(model.SerializeToString(), quantized="onnxruntime")
    for device in (reference, cl_device):
        got = ClnnRunner(imported, device).run([x])[0][0]
        assert np.array_equal(got, expected), (device.name, np.count_nonzero(got != expected))
    assert np.count_nonzero(near_half) > 0  # the data has the elements an order moves
