"""``clnn support`` on the corpus models of the detection operations: every operation on
OpenCL, and an execution of each runs every partition with an OpenCL plan (no host partition),
with the corpus's expected outputs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from clnn.cli.support import run_support_cli
from clnn.suites.corpus import array_of, read_corpus_file
from clnn.suites.cts import build_model, compare_output
from hal.builder import make_request, read_outputs

CORPUS = Path(os.environ.get("CLNN_CTS_CORPUS",
                             Path(__file__).resolve().parents[2].parent / "shared/cts/public"))
SPECS = ["V1_3__bbox_graph_quant8_signed", "V1_2__detection_postprocess", "V1_2__topk_v2",
         "V1_2__heatmap_max_keypoint", "V1_2__roi_pooling"]


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")
@pytest.mark.parametrize("spec", SPECS)
def test_detection_corpus_models_have_no_host_partition(cl_device, spec, capsys):
    path = CORPUS / f"{spec}.json.gz"
    assert run_support_cli(str(path), as_json=True) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["supported"] == report["total"] > 0, report
    test = read_corpus_file(str(path))["tests"][0]
    model = build_model(test)
    prepared = cl_device.prepare_model(model)
    sg = test["main"]
    inputs = [array_of(sg["operands"][i]) for i in sg["inputIndexes"]]
    req = make_request(model, inputs, [1 << 20] * len(model.main.output_indexes))
    result = prepared.execute_synchronously(req)
    assert result.status == 0, result
    assert all(p.on_cl for p in prepared.partitions)
    assert all(plan is not None for p in prepared.partitions for plan in p.plans.values())
    outs = read_outputs(model, req, result.output_shapes)
    for o, got in zip((sg["operands"][i] for i in sg["outputIndexes"]), outs):
        assert compare_output(test, o, got) is None

