"""benchmarks/layout_families.py's small slice: every hot family (convolution, depthwise,
pooling, resize, normalization, element-wise with broadcasting) runs its NHWC form, its NCHW
form through the layout pass and on the NCHW kernels, each output within float32 rounding
of the reference device's, and the record holds what the full run's does (not timings)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from tests.kits.devices import open_or_skip

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = {"convolution", "depthwise", "pooling", "resize", "normalization", "element-wise"}


def _bench():
    spec = importlib.util.spec_from_file_location(
        "layout_families", ROOT / "benchmarks" / "layout_families.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_small_slice_runs_and_outputs_agree(tmp_path, capsys):
    open_or_skip("opencl")
    out = tmp_path / "layout_families.json"
    _bench().main(["--small", "--iterations", "1", "--json", str(out)])
    record = json.loads(out.read_text())
    rows = record["rows"]
    assert {r["family"] for r in rows} == FAMILIES
    assert record["interleaved"] and set(record["load_average"]) == {"before", "after"}
    for r in rows:
        for way in ("nhwc", "nchw", "nchw_direct"):
            assert r[way + "_err"] <= 1e-4, (r["case"], way, r[way + "_err"])
            assert r[way + "_ms"] > 0 and r[way + "_kernels"], (r["case"], way)
        assert r["nchw_over_nhwc"] > 0 and r["nchw_direct_over_nhwc"] > 0
    printed = capsys.readouterr().out
    assert printed.startswith("load average: ") and f"wrote {out}" in printed
