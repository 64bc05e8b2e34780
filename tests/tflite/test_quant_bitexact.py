"""Quantized operations bit for bit against ai-edge-litert's built-in kernels: single-operation
.tflite models with random shapes and parameters (tests/kits/quant_cases.py), on the reference
device (3 seeds per operation and type) and on OpenCL without fallback (1 seed), plus the
rounding corners each TFLite kernel has. The long sweep: scripts/quant_bitexact.py."""

import numpy as np
import pytest

from tests.kits.quant_cases import OPS, case, clnn_outputs, litert_outputs, lsb, run_case
from tests.kits.tflite_writer import Graph

pytest.importorskip("ai_edge_litert")

CASES = [(op, dt) for op, types in OPS.items() for dt in types]


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_reference_matches_litert_builtin(reference, op, dtype):
    for seed in range(3):
        c = case(op, dtype, seed)
        assert run_case(c, {"reference": reference}) == {"reference": 0}, (seed, c.params)


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_opencl_matches_litert_builtin(cl_device, op, dtype):
    c = case(op, dtype, 100)
    assert run_case(c, {"opencl": cl_device}) == {"opencl": 0}, c.params


def _fc_model(x_zp, acc_to_out, bias):
    """A 1x1 int8 FULLY_CONNECTED whose output is bias * acc_to_out (a power of two: 1/4 is
    multiplier 2^30 with a right shift of 1 after the exact doubling high multiply)."""
    g = Graph()
    x = g.tensor([1, 1], "int8", scale=1.0, zero_point=x_zp, name="x")
    w = g.tensor([1, 1], "int8", data=np.ones((1, 1), np.int8), scale=1.0, zero_point=0)
    b = g.tensor([1], "int32", data=np.asarray([bias], np.int32), scale=1.0, zero_point=0)
    y = g.tensor([1, 1], "int8", scale=1.0 / acc_to_out, zero_point=0, name="y")
    g.op("FULLY_CONNECTED", [x, w, b], [y], "FullyConnectedOptions")
    return g.write([x], [y])


@pytest.mark.parametrize("acc", [-90, -26, -6, 6, 26])
def test_gemm_ties_round_upward(reference, cl_device, acc):
    """acc / 4 exactly half-way: TFLite's GEMM rounds the ties of the final shift upward
    (gemmlowp's RoundingDivideByPOT: away from zero)."""
    model = _fc_model(0, 0.25, acc)
    x = [np.zeros((1, 1), np.int8)]
    want = int(np.floor(acc / 4 + 0.5))
    assert litert_outputs(model, x)[0].item() == want
    for device in (reference, cl_device):
        assert clnn_outputs(model, x, device)[0].item() == want


def _depthwise(channels):
    g = Graph()
    x = g.tensor([1, 1, 1, channels], "int8", scale=1.0, zero_point=0, name="x")
    w = g.tensor([1, 1, 1, channels], "int8", data=np.ones((1, 1, 1, channels), np.int8),
                 scale=np.ones(channels, np.float32), zero_point=np.zeros(channels, np.int64),
                 quantized_dimension=3)
    b = g.tensor([channels], "int32", data=np.zeros(channels, np.int32),
                 scale=np.ones(channels, np.float32), zero_point=np.zeros(channels, np.int64))
    y = g.tensor([1, 1, 1, channels], "int8", scale=4.0, zero_point=0, name="y")
    g.op("DEPTHWISE_CONV_2D", [x, w, b], [y], "DepthwiseConv2DOptions", Padding=1,
         StrideW=1, StrideH=1, DepthMultiplier=1, DilationWFactor=1, DilationHFactor=1)
    return g.write([x], [y])


def test_depthwise_int8_rounds_blocks_of_8_upward_and_the_rest_away(reference, cl_device):
    """-6 / 4 on 10 channels: -1 on the block of 8 (vector code), -2 on the 2 left over."""
    model = _depthwise(10)
    x = [np.full((1, 1, 1, 10), -6, np.int8)]
    want = [-1] * 8 + [-2] * 2
    assert litert_outputs(model, x)[0].reshape(-1).tolist() == want
    for device in (reference, cl_device):
        assert clnn_outputs(model, x, device)[0].reshape(-1).tolist() == want


def test_quantize_vector_blocks_and_scalar_tail(reference, cl_device):
    """x / scale = k + 0.5 exactly: ties to even on the first 8 values, away on the rest."""
    g = Graph()
    x = g.tensor([1, 10], "float32", name="x")
    y = g.tensor([1, 10], "int8", scale=0.5, zero_point=0, name="y")
    g.op("QUANTIZE", [x], [y])
    model = g.write([x], [y])
    v = [np.asarray([[0.25, 0.75, -0.25, -0.75, 1.25, 1.75, 2.25, -1.25, 0.25, -0.75]],
                    np.float32)]
    want = [0, 2, 0, -2, 2, 4, 4, -2, 1, -2]
    assert litert_outputs(model, v)[0].reshape(-1).tolist() == want
    for device in (reference, cl_device):
        assert clnn_outputs(model, v, device)[0].reshape(-1).tolist() == want


def test_lsb_counts_float_outputs_in_ulps():
    a = np.asarray([1.0, 2.0], np.float32)
    assert lsb(a, a) == 0
    assert lsb(a, np.nextafter(a, np.float32(3))) == 1
    assert lsb(np.asarray([3, -4], np.int8), np.asarray([1, -4], np.int8)) == 2
