"""tests/weights.json (scripts/test_weights.py): the order make test starts the files in."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("test_weights",
                                                  ROOT / "scripts" / "test_weights.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_weights_name_test_files_that_exist():
    weights = json.loads((ROOT / "tests" / "weights.json").read_text())
    assert weights and all(w >= 0 for w in weights.values())
    missing = [f for f in weights if not (ROOT / f).is_file()]
    assert not missing, f"stale entries (run scripts/test_weights.py): {missing}"


def test_a_junit_report_becomes_seconds_per_file(tmp_path):
    report = tmp_path / "j.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.cl.test_a" name="t1" time="2.5"/>'
        '<testcase classname="tests.cl.test_a.TestGroup" name="t2" time="1.0"/>'
        '<testcase classname="tests.hal.test_b" name="t3" time="7"/>'
        '</testsuite></testsuites>')
    assert _script().weights(str(report)) == {"tests/hal/test_b.py": 7.0,
                                              "tests/cl/test_a.py": 3.5}
