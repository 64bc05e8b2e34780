"""``clnn run --compare ... --per-op`` and clnn.suites.divergence.per_op_report: every
intermediate tensor of the OpenCL device against the reference executor and ai-edge-litert,
and a perturbed operation caught exactly where it happens."""

import json

import numpy as np
import pytest

import clnn.execution
import clnn.plan
from clnn.cli.main import main
from clnn.cli.run import random_inputs
from clnn.models import mediapipe as models
from clnn.suites.divergence import format_report, per_op_report
from clnn.tflite import load
from hal.reference.executor import Executor

MODEL = "face_detection_short_range.tflite"


class Target:
    def __init__(self, imported, device, path):
        self.imported, self.device, self.path = imported, device, path


@pytest.fixture(autouse=True)
def no_depthwise_fusion(monkeypatch):
    """A depthwise convolution fused into the 1x1 after it (clnn/kernels/_dwpw.py) has no
    tensor on the device: which are fused follows this machine's tuning cache, so the rows the
    checks below count would too: off for the device of these tests, and for the CLI's (whose
    options come from the environment)."""
    monkeypatch.setenv("CLNN_DWPW", "0")


@pytest.fixture(scope="module")
def path():
    return models.model_path(MODEL)


@pytest.fixture(scope="module")
def target(path, cl_device):
    return Target(load(path), cl_device.with_options(dwpw="off"), path)


def _perturb(monkeypatch, operand: int):
    """The OpenCL run's tensor of ``operand`` gets an error in one element, as a wrong kernel
    would give (after the plan ran, before the report reads it)."""
    real = clnn.execution.enqueue_plan

    def enqueue(queue, plan, values, *args, **kwargs):
        real(queue, plan, values, *args, **kwargs)
        if operand in values:
            arr = np.array(values[operand])
            arr.flat[0] += 0.05 * (1.0 + float(np.max(np.abs(arr))))
            values[operand] = arr

    monkeypatch.setattr(clnn.execution, "enqueue_plan", enqueue)


def _check_clean(report, n_ops):
    rows = report["rows"]
    assert [r["index"] for r in rows] == list(range(n_ops))
    compared = [r for r in rows if r["within"] is not None]
    assert len(compared) > n_ops // 3  # fused rows aside (epilogues take ADDs, pools), compared
    assert all(r["within"] for r in compared), [r for r in compared if not r["within"]]
    assert report["first_divergent"] is None
    for r in compared:
        assert 0 <= r["max_abs"] <= report["tolerance"]["atol"] + 1e-2
    # rows without a device tensor of their own are marked and say why
    for r in rows:
        if r["within"] is None:
            assert r["note"]
    assert any(r["fused_into"] is not None for r in rows)


def test_every_operation_within_tolerance_against_reference(target):
    report = per_op_report(target, "reference")
    assert report["reference"] == "reference" and report["device"] == target.device.name
    _check_clean(report, len(target.imported.model.main.operations))
    # the importer's tensor mapping names the TFLite tensor of most rows
    mapped = [r for r in report["rows"] if all(t is not None for t in r["tflite_tensors"])]
    assert len(mapped) > len(report["rows"]) // 2


def test_every_operation_within_tolerance_against_litert(target):
    report = per_op_report(target, "litert")
    assert report["reference"] == "litert"
    _check_clean(report, len(target.imported.model.main.operations))


def test_perturbed_operation_is_the_first_divergent(target, monkeypatch):
    clean = per_op_report(target, "reference")
    depthwise = [r for r in clean["rows"]
                 if r["operation"] == "DEPTHWISE_CONV_2D" and r["within"]]
    victim = depthwise[len(depthwise) // 2]
    _perturb(monkeypatch, victim["outputs"][0])
    for reference in ("reference", "litert"):
        report = per_op_report(target, reference)
        assert report["first_divergent"] == victim["index"]
        row = report["rows"][victim["index"]]
        assert row["within"] is False and row["max_abs"] > 0.05
        assert all(r["within"] is not False for r in report["rows"][:victim["index"]])


def test_inputs_given_are_the_inputs_run(target):
    inputs = [x + 0.25 for x in random_inputs(target.imported, seed=3)]
    report = per_op_report(target, "reference", inputs=inputs)
    assert report["first_divergent"] is None
    assert all(r["within"] in (True, None) for r in report["rows"])


def test_reference_executor_keeps_every_operand(target):
    imported = target.imported
    inputs = random_inputs(imported)
    ex = Executor(imported.model)
    values = ex.run_keeping_all(None, inputs)
    sg = imported.model.main
    for operation in sg.operations:
        assert all(o in values for o in operation.outputs)
    outputs = Executor(imported.model).run_subgraph(None, inputs)
    for o, arr in zip(sg.output_indexes, outputs):
        np.testing.assert_array_equal(values[o], arr)


def test_cli_json_parses(path, capsys):
    rc = main(["run", path, "--device", "opencl", "--compare", "reference", "--per-op",
               "--json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert report["first_divergent"] is None
    assert len(report["rows"]) == len(load(path).model.main.operations)
    assert set(report["rows"][0]) >= {"index", "operation", "outputs", "tflite_tensors",
                                      "max_abs", "max_rel", "within", "fused_into"}


def test_cli_text_highlights_first_divergent(path, target, capsys, monkeypatch):
    clean = per_op_report(target, "reference")
    victim = [r for r in clean["rows"] if r["operation"] == "CONV_2D" and r["within"]][1]
    _perturb(monkeypatch, victim["outputs"][0])
    rc = main(["run", path, "--device", "opencl", "--compare", "litert", "--per-op"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 1
    marked = [line for line in out if line.lstrip().startswith(">>")]
    assert len(marked) == 1
    assert marked[0].split()[1] == str(victim["index"])
    assert "OUT OF TOLERANCE" in marked[0] and "first divergent" in marked[0]
    assert out[-1].startswith(f"first divergent operation: {victim['index']} (CONV_2D)")


def test_text_of_a_clean_report(target):
    lines = format_report(per_op_report(target, "reference"))
    assert not any(line.lstrip().startswith(">>") for line in lines)
    assert lines[-1] == "every compared operation is within tolerance"


def test_per_op_needs_compare(path, capsys):
    assert main(["run", path, "--per-op"]) == 2
    assert "--per-op" in capsys.readouterr().err


def test_litert_needs_the_model_file(target):
    with pytest.raises(ValueError, match="model file"):
        per_op_report(Target(target.imported, target.device, None), "litert")


def test_litert_with_a_mediapipe_custom_operation(cl_device):
    # Convolution2DTransposeBias exists only with litert's default resolver: the fallback path
    seg = models.model_path("selfie_segmentation.tflite")
    imported = load(seg)
    report = per_op_report(Target(imported, cl_device.with_options(dwpw="off"), seg), "litert")
    _check_clean(report, len(imported.model.main.operations))
    # the custom operation's result is compared: on its own row, or (its kernel running the
    # LOGISTIC after it, clnn/fusion) on the row of the operation fused into it
    (tc,) = [r for r in report["rows"] if r["operation"] == "TRANSPOSE_CONV_2D"]
    carried = [r for r in report["rows"] if r["fused_into"] == tc["index"]]
    assert tc["within"] is not None or (carried and all(r["within"] for r in carried))


def test_wrong_kernel_input_caught_where_it_enters(target, monkeypatch):
    # the device's copy of one convolution's weights is off, so its kernel computes a wrong
    # tensor and every operation after it inherits the error: the first divergent row is
    # that convolution's, not a later one
    clean = per_op_report(target, "reference")
    sg = target.imported.model.main
    victim = [r for r in clean["rows"] if r["operation"] == "CONV_2D" and r["within"]][2]
    weights = sg.operations[victim["index"]].inputs[1]

    class WrongWeights(clnn.plan.Executor):
        def constants(self, index):
            values = dict(super().constants(index))
            if index is None:
                values[weights] = values[weights] * 1.5
            return values

    monkeypatch.setattr(clnn.plan, "Executor", WrongWeights)
    report = per_op_report(target, "reference")
    assert report["first_divergent"] == victim["index"]
    later = [r for r in report["rows"][victim["index"] + 1:] if r["within"] is False]
    assert later  # the error travels on, yet the report names where it started


def test_per_op_refuses_profile(path, capsys):
    assert main(["run", path, "--device", "opencl", "--compare", "reference", "--per-op",
                 "--profile"]) == 2
    assert "--profile" in capsys.readouterr().err


def test_cli_per_op_plot_names_the_first_divergent(path, target, tmp_path, capsys, monkeypatch):
    """``--per-op --plot FILE.html``: the error per operation, the first divergent labelled."""
    pytest.importorskip("matplotlib")
    clean = per_op_report(target, "reference")
    victim = [r for r in clean["rows"] if r["operation"] == "CONV_2D" and r["within"]][1]
    _perturb(monkeypatch, victim["outputs"][0])
    page = tmp_path / "per_op.html"
    rc = main(["run", path, "--device", "opencl", "--compare", "reference", "--per-op",
               "--plot", str(page)])
    capsys.readouterr()
    assert rc == 1 and page.exists()
    html = page.read_text()
    assert "<svg" in html and f"{victim['index']} CONV_2D" in html
    assert "DEPTHWISE_CONV_2D" in html  # every operation of the model is named
