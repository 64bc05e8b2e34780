"""Machine-readable and conventional output of the clnn command line: --version, --json on
every listing command, clnn cts --junit and its JSON report, pytest-style -k expressions, and a
help sentence on every flag of every command."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import xml.etree.ElementTree as ET

import pytest

import clnn
from clnn.cli.main import build_parser, main
from clnn.suites.cts import Result, Summary
from clnn.suites.cts_report import junit_tree
from clnn.suites.kexpr import KeywordError, compile_expression, matches
from tests.kits.devices import open_or_skip
from tests.kits.paths import CORPUS

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")
#: two of the smallest corpus files, copied into tmp_path at test time (never committed)
SMALL = ("V1_3__add_int32.json.gz", "V1_2__logical_not.json.gz")


def _json_out(capsys, argv) -> object:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


# ----------------------------------------------------------------------------- --version
def test_version_prints_the_package_version_and_the_platform_versions(capsys):
    assert main(["--version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"clnn {clnn.__version__}"
    assert lines[1].startswith("hal ") and "OpenCL" in lines[1]


# ----------------------------------------------------------------------------- --json
def test_devices_json_lists_the_reference_and_every_opencl_device(capsys):
    rows = _json_out(capsys, ["devices", "--json"])
    assert rows[0]["index"] == "reference"
    for row in rows:
        assert {"index", "name", "type", "platform", "version", "driver", "compute_units",
                "fp16", "fp64", "default"} <= set(row)
    assert sum(1 for r in rows if r["default"]) <= 1


def test_models_list_json_gives_full_paths_and_presence(capsys, tmp_path):
    from clnn.models.mediapipe import MODELS

    rows = _json_out(capsys, ["models", "list", "--json", "--cache-dir", str(tmp_path)])
    assert [r["name"] for r in rows] == sorted(MODELS)
    for r in rows:
        assert r["path"] == str(tmp_path / r["name"]) and os.path.isabs(r["path"])
        assert r["present"] is False  # an empty directory holds none of them
        assert r["sha256"] == MODELS[r["name"]]


def test_models_json_is_refused_for_fetch(capsys, tmp_path):
    assert main(["models", "fetch", "--json", "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("clnn models: --json") and "\n" not in err


@needs_corpus
def test_support_json_lists_each_operation_with_its_reason(capsys):
    open_or_skip("opencl")
    out = _json_out(capsys, ["support", str(CORPUS / SMALL[0]), "--json"])
    assert out["model"] == "add_int32" and out["device"].startswith("opencl")
    assert out["total"] == len(out["operations"]) == 1
    op = out["operations"][0]
    assert op["operation"] == "ADD" and isinstance(op["supported"], bool) and op["reason"]
    assert out["supported"] == sum(o["supported"] for o in out["operations"])


# ----------------------------------------------------------------------------- junit / JSON
@pytest.fixture
def tiny_corpus(tmp_path):
    """Two small corpus files, and a third: the first with a wrong expected output."""
    if not CORPUS.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    d = tmp_path / "corpus"
    d.mkdir()
    for name in SMALL:
        shutil.copy(CORPUS / name, d / name)
    with gzip.open(CORPUS / SMALL[0], "rt") as f:
        doc = json.load(f)
    doc["spec"] = "broken_add"
    for t in doc["tests"]:
        t["name"] = "broken_" + t["name"]
        sg = t["main"]
        out = sg["operands"][sg["outputIndexes"][0]]
        out["data"] = [v + 7 for v in out["data"]]
    with gzip.open(d / "broken_add.json.gz", "wt") as f:
        json.dump(doc, f)
    return d


# the elements, attributes and children the common JUnit XML schema (Jenkins / Ant, read by
# GitLab, GitHub Actions reporters, ...) allows: element -> (attributes, children)
JUNIT_SHAPE = {
    "testsuites": ({"name", "tests", "failures", "errors", "skipped", "time", "disabled"},
                   {"testsuite"}),
    "testsuite": ({"name", "tests", "failures", "errors", "skipped", "time", "timestamp",
                   "hostname", "id", "package", "disabled", "file"},
                  {"properties", "testcase", "system-out", "system-err"}),
    "properties": (set(), {"property"}),
    "property": ({"name", "value"}, set()),
    "testcase": ({"name", "classname", "time", "assertions", "status", "file", "line"},
                 {"skipped", "error", "failure", "system-out", "system-err"}),
    "failure": ({"message", "type"}, set()),
    "error": ({"message", "type"}, set()),
    "skipped": ({"message"}, set()),
}
REQUIRED = {"testsuite": {"name", "tests"}, "testcase": {"name", "classname"},
            "property": {"name", "value"}}


def _check_junit_shape(el):
    attrs, children = JUNIT_SHAPE[el.tag]
    assert set(el.attrib) <= attrs, (el.tag, set(el.attrib) - attrs)
    assert REQUIRED.get(el.tag, set()) <= set(el.attrib), el.tag
    for key in ("tests", "failures", "errors", "skipped"):
        if key in el.attrib:
            assert int(el.get(key)) >= 0
    if "time" in el.attrib:
        assert float(el.get("time")) >= 0
    for child in el:
        assert child.tag in children, (el.tag, child.tag)
        _check_junit_shape(child)


def test_cts_junit_and_json_reports(tiny_corpus, tmp_path, capsys):
    junit, report = tmp_path / "cts.xml", tmp_path / "cts.json"
    status = main(["cts", str(tiny_corpus), "-j", "1", "--junit", str(junit),
                   "--json", str(report)])
    assert status == 1  # broken_add fails
    capsys.readouterr()

    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    _check_junit_shape(root)
    suites = root.findall("testsuite")
    assert sorted(s.get("name") for s in suites) == ["add_int32", "broken_add", "logical_not"]
    cases = 0
    for s in suites:
        tcs = s.findall("testcase")
        cases += len(tcs)
        assert int(s.get("tests")) == len(tcs)
        assert int(s.get("failures")) == sum(1 for t in tcs if t.find("failure") is not None)
        assert abs(float(s.get("time")) - sum(float(t.get("time")) for t in tcs)) < 1e-3
        for t in tcs:
            assert t.get("classname") == s.get("name")
            assert t.get("name").endswith((" [static]", " [dynamic]"))
            assert float(t.get("time")) >= 0
    assert int(root.get("tests")) == cases
    broken = next(s for s in suites if s.get("name") == "broken_add")
    failure = broken.find("testcase").find("failure")
    assert failure is not None and "values differ" in failure.get("message")
    assert "values differ" in failure.text
    assert int(root.get("failures")) == int(broken.get("failures")) > 0

    doc = json.loads(report.read_text())
    run = doc["run"]
    assert run["clnn_version"] == clnn.__version__ and run["mode"] == "sync"
    assert run["device"]["name"] == "reference" and run["device"]["version"]
    assert run["corpus"] == str(tiny_corpus) and run["date"][:2] == "20"
    assert "fallback" in run
    assert doc["summary"]["total"] == len(doc["tests"]) == cases
    assert doc["summary"]["seconds"] >= sum(t["seconds"] for t in doc["tests"]) * 0.5
    assert all(t["seconds"] >= 0 for t in doc["tests"])


def test_junit_marks_unsupported_as_skipped_and_errors_as_errors():
    s = Summary()
    s.add(Result("spec_a", "t1", "static", "unsupported", "device does not support X"))
    s.add(Result("spec_a", "t1", "dynamic", "error", "RuntimeError: boom\ntraceback", 0.5))
    s.add(Result("spec_b", "t2", "static", "passed", "", 0.25))
    root = ET.fromstring(ET.tostring(junit_tree(s).getroot()))
    _check_junit_shape(root)
    a = root.find("testsuite[@name='spec_a']")
    assert (a.get("skipped"), a.get("errors"), a.get("failures")) == ("1", "1", "0")
    skipped = a.find("testcase[@name='t1 [static]']/skipped")
    assert skipped.get("message") == "device does not support X"
    error = a.find("testcase[@name='t1 [dynamic]']/error")
    assert error.get("message") == "RuntimeError: boom" and "traceback" in error.text
    b = root.find("testsuite[@name='spec_b']")
    assert b.find("testcase").get("time") == "0.250000" and len(b.find("testcase")) == 0


# ----------------------------------------------------------------------------- -k
@pytest.mark.parametrize("expr, spec, name, expected", [
    ("conv", "conv2d_v1_2", "conv_float", True),              # plain substring, as before
    ("CONV", "x", "conv_float", True),                        # case-insensitive, as pytest
    ("conv*", "x", "conv_float", True),                       # a glob, as before
    ("*quant8", "add_quant8", "other", True),
    ("conv and not relaxed", "x", "conv_float_relaxed", False),
    ("conv and not relaxed", "x", "conv_float", True),
    ("add or mul", "mul_v1", "mul_quant8", True),
    ("add or mul", "sub", "sub_float", False),
    ("add or mul and quant8", "add", "add_float", True),      # and binds tighter than or
    ("(add or mul) and quant8", "add", "add_float", False),
    ("not add and float", "add", "add_float", False),         # not binds tightest
    ("not (add and quant8)", "add", "add_float", True),
])
def test_k_expressions(expr, spec, name, expected):
    assert matches(expr, spec, name) is expected


@pytest.mark.parametrize("expr", ["", "add and", "and add", "(add or mul", "add)",
                                  "add mul", "not", "add or or mul"])
def test_bad_k_expressions_are_refused(expr):
    with pytest.raises(KeywordError):
        compile_expression(expr)


def test_bad_k_expression_is_a_one_line_usage_error(tmp_path, capsys):
    assert main(["cts", str(tmp_path), "-k", "add and (mul"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("clnn cts: -k expression")
    assert main(["cts", str(tmp_path), "-k", "   "]) == 2  # only blanks: nothing to match
    assert "it is empty" in capsys.readouterr().err


def test_cts_k_expression_selects_tests(tiny_corpus, capsys):
    from clnn.suites.corpus import iter_corpus

    names = {t["name"] for _, _, t in iter_corpus(tiny_corpus, "ADD and not broken")}
    assert names == {"add_int32"}
    names = {t["name"] for _, _, t in iter_corpus(tiny_corpus, "(add or logical) and not broken")}
    assert names == {"add_int32", "logical_not"}


# ----------------------------------------------------------------------------- help walk
def _actions_without_help(parser, path):
    missing = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:
            continue
        where = " ".join(path) + " " + ("/".join(action.option_strings) or action.dest)
        text = (action.help or "").strip()
        if len(text.split()) < 2:  # a sentence says something: more than one word
            missing.append(where)
        if isinstance(action, argparse._SubParsersAction):
            helped = {c.dest for c in action._choices_actions if (c.help or "").strip()}
            for name, sub in action.choices.items():
                if name not in helped:
                    missing.append(f"{' '.join(path)} {name} (the command)")
                missing += _actions_without_help(sub, [*path, name])
    return missing


def test_every_flag_of_every_command_has_help():
    parser = build_parser()
    assert _actions_without_help(parser, ["clnn"]) == []


def test_help_walk_finds_a_flag_without_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub.choices["devices"].add_argument("--bare", action="store_true")
    assert _actions_without_help(parser, ["clnn"]) == ["clnn devices --bare"]
