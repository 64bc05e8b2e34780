"""The time to a first result as a user sees it: `clnn run` prepares through the compilation
cache under clnn's cache directory by default (a second run restores it; --no-cache skips it),
reports prepare and first-execution times apart, and draws a progress bar of the compile work
only when asked (stderr a terminal), never in pipes or tests."""

import json
import os

import numpy as np
import pytest

from clnn.cli.main import main
from clnn.prepare_cached import build_progress
from tests.kits.devices import open_or_skip
from tests.kits.tflite_writer import Graph


@pytest.fixture(scope="module")
def add_model(tmp_path_factory):
    g = Graph()
    x = g.tensor([1, 8], name="a")
    c = g.tensor([1, 8], data=np.arange(8, dtype=np.float32).reshape(1, 8))
    y = g.tensor([1, 8], name="out")
    g.op("ADD", [x, c], [y], "AddOptions")
    path = tmp_path_factory.mktemp("firstresult") / "add.tflite"
    path.write_bytes(g.write(inputs=[x], outputs=[y]))
    return str(path)


def _run(capsys, *args):
    assert main(["run", *args, "--device", "opencl", "--iterations", "2", "--warmup", "0",
                 "--json"]) == 0
    cap = capsys.readouterr()
    return json.loads(cap.out), cap.err


def _files(root):
    d = os.path.join(root, "compilation")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def test_run_uses_the_compilation_cache_by_default(add_model, capsys, monkeypatch, tmp_path):
    open_or_skip("opencl")
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path))
    first, err = _run(capsys, add_model)
    assert first["compilation_cache"] == "miss"
    saved = _files(tmp_path)
    assert len(saved) == 2  # one model-cache and one data-cache file
    second, _ = _run(capsys, add_model)
    assert second["compilation_cache"] == "hit"
    assert _files(tmp_path) == saved
    for report in (first, second):
        assert isinstance(report["prepare_s"], float) and report["prepare_s"] > 0
        assert report["first_execution_s"] == pytest.approx(report["latency"]["first_ms"] / 1e3)
    assert second["outputs"] == first["outputs"]
    # not a terminal: no progress bar, nothing but the warnings on stderr
    assert "building" not in err and "compiling" not in err and "\r" not in err


def test_no_cache_prepares_afresh_and_stores_nothing(add_model, capsys, monkeypatch, tmp_path):
    open_or_skip("opencl")
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path))
    report, _ = _run(capsys, add_model, "--no-cache")
    assert report["compilation_cache"] == "off"
    assert _files(tmp_path) == []


def test_text_report_names_prepare_and_first_execution(add_model, capsys, monkeypatch,
                                                       tmp_path):
    open_or_skip("opencl")
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path))
    assert main(["run", add_model, "--device", "opencl", "--iterations", "2"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "prepared in" in head and "(compilation cache: miss)" in head
    assert "first execution" in head


def test_progress_bar_when_enabled(capsys):
    """Enabled (a terminal), the bar counts the builds and the warm-up's kernel launches."""
    from clnn.cli.demo import build_model
    from clnn.device import ClDevice

    open_or_skip("opencl")
    device = ClDevice()  # a fresh program cache: the kernels are built
    with build_progress(enabled=True):
        prepared = device.prepare_model(build_model(seed=7))
    err = capsys.readouterr().err
    launches = prepared.pool_report()["launches"]
    assert f"compiling {launches} kernel launches" in err
    if device.options.combine:
        assert "building" in err and "kernels" in err
    with build_progress(enabled=False):
        device.prepare_model(build_model(seed=8))
    assert capsys.readouterr().err == ""


def test_progress_shows_what_compiles_on_a_terminal_only(capsys):
    """clnn's INFO lines (what a prepare compiles or measures) reach stderr under the tools'
    progress bar; without it (pipes, tests, an application that leaves logging alone) they do
    not, and the log is as it was after the block."""
    from clnn.program_cache import LOG

    level, propagate = LOG.level, LOG.propagate
    with build_progress(enabled=True):
        LOG.info("compiling 3 OpenCL kernels (gemm.gemm)")
    assert "clnn: compiling 3 OpenCL kernels (gemm.gemm)" in capsys.readouterr().err
    assert (LOG.level, LOG.propagate) == (level, propagate)
    with build_progress(enabled=False):
        LOG.info("compiling 3 OpenCL kernels (gemm.gemm)")
    assert capsys.readouterr().err == ""
