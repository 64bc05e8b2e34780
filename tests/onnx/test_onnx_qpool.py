"""QLinearAveragePool / QLinearGlobalAveragePool with quantized="onnxruntime"
(clnn/onnx/ops_qfloat.py): onnxruntime's bits on both devices, for windows with pads at
either end, count_include_pad 0 and 1, ceil_mode, strides other than the kernel, a window as
large as the input (onnxruntime's integer global path) and global pools over thousands of
elements; equal input and output scales make exact halves (the rounding ties) frequent."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from clnn.cli.run import ClnnRunner
from clnn.onnx import load
from tests.onnx.kit import graph, ort

MS = "com.microsoft"
RNG = np.random.default_rng(3808)
TYPES = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}

#: (input shape, attributes; None: QLinearGlobalAveragePool)
POOLS = [
    ((1, 5, 13, 11), dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0)),
    ((1, 5, 13, 11), dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)),
    ((2, 4, 12, 12), dict(kernel_shape=[2, 2], strides=[2, 2])),
    ((1, 6, 15, 9), dict(kernel_shape=[5, 3], strides=[2, 1], pads=[2, 0, 1, 1],
                         count_include_pad=0, ceil_mode=1)),
    ((1, 3, 10, 14), dict(kernel_shape=[4, 4], strides=[3, 3], pads=[0, 2, 2, 0],
                          count_include_pad=1)),
    ((1, 8, 7, 7), dict(kernel_shape=[7, 7], count_include_pad=1)),
    ((1, 16, 56, 56), None),
    ((2, 3, 9, 13), None),
]
#: (x scale, x zp, y scale, y zp) per type
SCALES = {np.uint8: [(0.02, 128, 0.02, 128), (0.0173, 3, 0.0109, 250)],
          np.int8: [(0.03, 0, 0.03, 0), (0.011, -100, 0.0071, 17)]}


def pool_model(shape, attrs, dtype, q):
    t = TYPES[dtype]
    inits = [("xs", np.float32(q[0])), ("xz", dtype(q[1])), ("ys", np.float32(q[2])),
             ("yz", dtype(q[3]))]
    if attrs is None:
        op, out = "QLinearGlobalAveragePool", [shape[0], shape[1], 1, 1]
        n = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS)
    else:
        op, out = "QLinearAveragePool", None
        n = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, **attrs)
    m = graph([n], [("x", list(shape), t)], [("y", out, t)], inits, opset=13)
    m.opset_import.append(helper.make_opsetid(MS, 1))
    return m


@pytest.mark.parametrize("dtype", [np.uint8, np.int8], ids=["u8", "s8"])
@pytest.mark.parametrize("shape,attrs", POOLS, ids=[f"pool{i}" for i in range(len(POOLS))])
def test_qlinear_pools_give_onnxruntimes_bits(shape, attrs, dtype, reference, cl_device):
    info = np.iinfo(dtype)
    for q in SCALES[dtype]:
        model = pool_model(shape, attrs, dtype, q)
        x = RNG.integers(info.min, info.max + 1, shape).astype(dtype)
        expected = np.asarray(ort(model, {"x": x})[0])
        imported = load(model.SerializeToString(), quantized="onnxruntime")
        for device in (reference, cl_device):
            out = ClnnRunner(imported, device).run([x])[0][0]
            assert out.shape == expected.shape
            diff = out.astype(np.int32) - expected.astype(np.int32)
            assert not diff.any(), (device.name, q, int(np.count_nonzero(diff)), expected.size)
