"""A QDQ int8 Conv with quantized="onnxruntime" (clnn/onnx/mlas_conv.py): onnxruntime runs it
as DequantizeLinear -> float Conv -> QuantizeLinear through MLAS, and clnn's CONV_CHUNKED
gives MLAS's float sums bit for bit on both devices (onnxruntime with clnn's thread count,
clnn.onnx.mlas_conv.ORT_THREADS). The float Conv alone is compared too (the Conv's output a
graph output: its float32 bits), and a plain float sum must differ from it somewhere (the
order matters on this data). Seeded shapes: pointwise and 3 x 3, strides 1 and 2, K below
and above MLAS's panels (128 terms and more), output positions split between threads, more
filters than positions."""

import numpy as np
import pytest
from onnx import helper

from clnn.cli.run import ClnnRunner
from clnn.onnx import load
from clnn.onnx.mlas_conv import ORT_THREADS, chunks, single_row_kernel
from tests.onnx.kit import graph

ort_rt = pytest.importorskip("onnxruntime")

#: (input channels, filters, height, width, kernel, stride, pad)
CASES = [(8, 6, 9, 11, 3, 1, 1), (40, 24, 20, 20, 3, 1, 1), (200, 32, 12, 12, 1, 1, 0),
         (300, 16, 30, 30, 1, 1, 0), (64, 48, 33, 31, 3, 2, 1), (96, 96, 26, 26, 3, 1, 1),
         (64, 96, 8, 8, 3, 1, 1)]  # more filters than positions: im2col, then MlasGemm


def qdq_conv(x_shape, w, bias_q, sx, sw, sy, float_out=False):
    """x (float) -> QuantizeLinear int8 -> DequantizeLinear -> Conv (DequantizeLinear of the
    int8 ``w`` per channel and the int32 bias) -> QuantizeLinear int8 -> DequantizeLinear;
    ``float_out``: the Conv's float output is the graph's output instead."""
    k, pad, stride = w.shape[2], (w.shape[2] - 1) // 2, x_shape[4]
    o = w.shape[0]
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "z8"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx", "z8"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wf"], axis=0),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["bf"], axis=0),
             helper.make_node("Conv", ["xf", "wf", "bf"], ["c"], kernel_shape=[k, k],
                              pads=[pad] * 4, strides=[stride] * 2),
             helper.make_node("QuantizeLinear", ["c", "sy", "z8"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "sy", "z8"], ["y"])]
    sb = (np.float32(sx) * sw).astype(np.float32)
    inits = [("sx", np.float32(sx)), ("z8", np.int8(0)), ("w", w), ("sw", sw),
             ("zw", np.zeros(o, np.int8)), ("b", bias_q), ("sb", sb),
             ("zb", np.zeros(o, np.int32)), ("sy", np.float32(sy))]
    out = "c" if float_out else "y"
    return graph(nodes, [("x", list(x_shape[:4]))], [(out, None)], inits, opset=13)


def ort_threads(model, x):
    opts = ort_rt.SessionOptions()
    opts.intra_op_num_threads = ORT_THREADS
    opts.inter_op_num_threads = 1
    s = ort_rt.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


def case_data(case, seed):
    c, o, h, w_, k, stride, _pad = case
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (1, c, h, w_)).astype(np.float32)
    w = rng.integers(-127, 128, (o, c, k, k)).astype(np.int8)
    sw = rng.uniform(0.5, 2, o).astype(np.float32) * np.float32(1 / 127)
    bias = rng.integers(-3000, 3000, o).astype(np.int32)
    sy = np.float32(np.sqrt(c * k * k) / 127 / 3)  # results spread over most of the range
    return x, w, sw, bias, (1, c, h, w_, stride), sy


@pytest.mark.parametrize("case", CASES, ids=[f"c{c[0]}o{c[1]}k{c[4]}s{c[5]}" for c in CASES])
def test_qdq_int8_conv_gives_onnxruntimes_bits(case, reference, cl_device):
    x, w, sw, bias, shape, sy = case_data(case, 3838 + case[0])
    sx = np.float32(1 / 127)
    for float_out in (True, False):
        model = qdq_conv(shape, w, bias, sx, sw, sy, float_out)
        expected = np.asarray(ort_threads(model, x))
        imported = load(model.SerializeToString(), quantized="onnxruntime")
        for device in (reference, cl_device):
            got = ClnnRunner(imported, device).run([x])[0][0].reshape(expected.shape)
            assert np.array_equal(got.view(np.int32), expected.view(np.int32)), (
                device.name, float_out, int(np.count_nonzero(got != expected)), got.size)
        if float_out:  # the order matters on this data: float64 sums rounded once differ
            xq = np.clip(np.rint(x / sx), -128, 127).astype(np.float32) * sx
            wf = (w.astype(np.float32) * sw.reshape(-1, 1, 1, 1)).astype(np.float32)
            assert _plain_sum_differs(xq, wf, case, expected)


def _plain_sum_differs(xq, wf, case, expected) -> bool:
    k, stride, pad = case[4], case[5], case[6]
    xp = np.pad(xq[0].astype(np.float64), ((0, 0), (pad, pad), (pad, pad)))
    oh, ow = expected.shape[2:]
    acc = np.zeros(expected.shape[1:], np.float64)
    for ky in range(k):
        for kx in range(k):
            win = xp[:, ky:ky + stride * (oh - 1) + 1:stride, kx:kx + stride * (ow - 1) + 1:stride]
            acc += np.einsum("oc,chw->ohw", wf[:, :, ky, kx].astype(np.float64), win)
    return bool(np.any(acc.astype(np.float32) != expected[0]))


def test_chunks_follow_mlas_panels():
    # im2col, two threads: segments of ceil(n / 2) rounded up to 16 positions; K panels of
    # 128 while a segment has at least 128 positions, longer ones (up to all of K) below
    assert set(chunks(96, 2704, 864, False, threads=2)) == {128}
    assert set(chunks(16, 20, 576, False, threads=2)) == {576}  # 16 + 4 positions: one panel
    # pointwise: N > M threads over blocks of 16 positions; else one SGEMM over all
    assert set(chunks(24, 900, 300, True, threads=2)) == {128}
    assert set(chunks(64, 16, 300, True, threads=1)) == {300}  # one panel of all K
    assert len(chunks(7, 1000, 50, True)) == 1000
    # more filters than positions: the threaded SGEMM's panels over all 64 positions (256),
    # not a 32-position segment's (512)
    assert set(chunks(96, 64, 576, False, threads=2)) == {256}
    assert single_row_kernel(1, 100, 9, False) and single_row_kernel(8, 1, 9, False)
    assert single_row_kernel(3, 2, 40000, True, threads=2)  # filters 2 + 1 between threads
    assert not single_row_kernel(96, 64, 576, False, threads=2)


def test_the_thread_count_is_the_comparisons():
    from clnn.cli import onnx_run

    assert ORT_THREADS == onnx_run.ORT_THREADS  # clnn's onnxruntime runs use the panels' count
