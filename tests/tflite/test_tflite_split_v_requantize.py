"""SPLIT_V (SPLIT, or a SLICE per part) and QUANTIZE of a quantized tensor (DEQUANTIZE +
QUANTIZE), which the microWakeWord streaming models use, against ai-edge-litert's built-in
kernels on the reference device."""

import numpy as np
import pytest

from tests.kits.tflite_writer import Graph
from tests.tflite.test_tflite_ops import assert_matches, op_types, run_both

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("sizes, axis, nn", [([2, 2], 3, ["SPLIT"]),
                                             ([1, -1, 2], 1, ["SLICE"] * 3),
                                             ([3, 1], -1, ["SLICE"] * 2)])
def test_split_v(tmp_path, sizes, axis, nn):
    shape = [1, 5, 2, 4]
    ax = axis % 4
    parts = list(sizes)
    if -1 in parts:
        parts[parts.index(-1)] = shape[ax] - sum(p for p in parts if p != -1)
    g = Graph()
    x = g.tensor(shape, "int8", scale=0.1, zero_point=-3, name="x")
    outs = []
    for p in parts:
        s = list(shape)
        s[ax] = p
        outs.append(g.tensor(s, "int8", scale=0.1, zero_point=-3))
    g.op("SPLIT_V", [x, g.tensor([len(sizes)], "int32", data=np.asarray(sizes, np.int32)),
                     g.tensor([], "int32", data=np.asarray(axis, np.int32))], outs,
         "SplitVOptions", NumSplits=len(sizes))
    arr = RNG.integers(-128, 128, shape).astype(np.int8)
    imported, _ = assert_matches(g, [x], outs, [arr], tmp_path, exact=True)
    assert op_types(imported) == nn


@pytest.mark.parametrize("out_type, scale, zp", [("uint8", 0.00390625, 0), ("int8", 0.02, 7),
                                                 ("uint8", 0.005, 100)])
def test_quantize_of_a_quantized_tensor(tmp_path, out_type, scale, zp):
    """The same scale (the microWakeWord models' int8 -> uint8): litert's bits. Another scale:
    TFLite requantizes in integers (a fixed-point multiplier), clnn dequantizes and quantizes
    (NNAPI has no requantizing QUANTIZE), which rounds a value on a tie differently: within the
    1-LSB tolerance (docs/tflite.md, quantized arithmetic's exceptions)."""
    g = Graph()
    x = g.tensor([1, 64], "int8", scale=0.00390625, zero_point=-128, name="x")
    y = g.tensor([1, 64], out_type, scale=scale, zero_point=zp, name="y")
    g.op("QUANTIZE", [x], [y])
    arr = np.arange(-128, 128, 4).astype(np.int8).reshape(1, 64)
    if scale == 0.00390625:
        imported, _ = assert_matches(g, [x], [y], [arr], tmp_path, exact=True)
    else:
        imported, outs, ref = run_both(g, [x], [y], [arr], tmp_path)
        diff = np.abs(outs[0].astype(np.int32) - ref[0].astype(np.int32))
        assert diff.max() <= 1, diff.max()
    assert op_types(imported) == ["DEQUANTIZE", "QUANTIZE"]
