"""``clnn plan MODEL [--pass NAME]`` (clnn/passes/report.py): what each pass produced."""

from __future__ import annotations

import json

import pytest

from clnn.passes.report import PASSES, format_report, plan_report
from tests.kits.pass_models import block_model


def report_without_direct_outputs(cl_device, model):
    return plan_report(cl_device.with_options(tune="off", direct_outputs=False), model)


def test_report_of_each_pass(cl_device):
    model, _, ops = block_model()
    report = plan_report(cl_device.with_options(tune="off"), model)
    (p,) = report["partitions"]
    assert p["device"] == "opencl" and p["planned"] and p["operations"] == list(range(5))
    (node,) = p["fused"]
    assert node["operation"] == ops["CONV_2D"] and node["type"] == "CONV_2D"
    assert [e["kind"] for e in node["epilogue"]] == ["input_pad", "residual", "activation"]
    assert [e["types"] for e in node["epilogue"]] == [["PAD"], ["ADD"], ["RELU"]]
    (sel,) = p["select"]
    assert sel["operation"] == ops["CONV_2D"] and sel["launches"]
    (v,) = sel["variants"]  # the GEMM of the 3x3 convolution over 8 channels... or its path
    assert v["selected_why"].endswith("class default") and v["choice"] == v["selected"]
    assert v["why"].endswith("(tune off)")
    assert report["peak_bytes"] == p["memory"]["peak_bytes"]
    # the RESHAPE's source written straight into the request's output (a direct output on a
    # device sharing the host's memory) leaves the pool empty; else the fused CONV_2D's
    # result lies in it
    direct = report_without_direct_outputs(cl_device, model)
    assert direct["peak_bytes"] > 0
    assert len(p["memory"]["views"]) == 1
    json.dumps(report)  # JSON-ready
    text = format_report(report)
    assert "CONV_2D: input_pad (PAD [0]), residual (ADD [2]), activation (RELU [3])" in text
    assert f"peak pool bytes {report['peak_bytes']}" in text
    for name in PASSES:  # one section each
        assert format_report(report, name).splitlines()[0] == text.splitlines()[0]
    assert "kernels and selected variants:" in format_report(report, "select")
    assert "0 of 1 replaced" in format_report(report, "tune")
    assert "fused nodes" not in format_report(report, "memory")


def test_cli(capsys):
    from clnn.cli.main import main
    from clnn.models import mediapipe as models

    try:
        path = models.model_path("face_detection_short_range.tflite")
    except Exception as e:  # no cached copy and no network
        pytest.skip(f"the model is not available: {e}")
    assert main(["plan", path, "--pass", "fusion"]) == 0
    out = capsys.readouterr().out
    assert "fused nodes:" in out and "residual (ADD" in out and "memory:" not in out
    assert main(["plan", path, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["partitions"][0]["fused"] and report["peak_bytes"] > 0
    assert main(["plan", path, "--device", "reference"]) == 2
