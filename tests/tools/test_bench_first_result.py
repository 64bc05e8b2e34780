"""``clnn bench prepare --models``: a cold process (empty caches), a second one (the caches it
left) and a new model on caches other models warmed, each split into its phases (import, load,
planning, tuning, compile, zero execution, the rest of prepare, first execution); on small
models written at test time (the MediaPipe models take minutes cold)."""

import os

import numpy as np
import pytest

from clnn.bench.bench_first_result import PHASES, bench_model, new_model_rows, print_table
from clnn.cli.main import main
from tests.kits.devices import open_or_skip
from tests.kits.tflite_writer import Graph


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    g = Graph()
    x = g.tensor([1, 4, 4, 2], name="a")
    c = g.tensor([1, 4, 4, 2], data=np.linspace(-1, 1, 32, dtype=np.float32).reshape(1, 4, 4, 2))
    s = g.tensor([1, 4, 4, 2])
    y = g.tensor([1, 4, 4, 2], name="out")
    g.op("ADD", [x, c], [s], "AddOptions")
    g.op("LOGISTIC", [s], [y])
    path = tmp_path_factory.mktemp("firstresult") / "small.tflite"
    path.write_bytes(g.write(inputs=[x], outputs=[y]))
    return str(path)


def test_cold_then_second(small_model, capsys):
    open_or_skip("opencl")
    row = bench_model(small_model)
    cold, second = row["cold"], row["second"]
    assert "error" not in cold and "error" not in second, row
    for phase in (cold, second):
        # prepare left nothing to compile for the first execution
        assert phase["programs_built_at_execution"] == 0
        assert phase["kernel_first_launches_at_execution"] == 0
        assert phase["kernel_first_launches_at_prepare"] >= 2
        assert phase["tune_s"] == 0  # (the default measures nothing)
        parts = sum(phase[f"{p}_s"] for p in PHASES)
        assert phase["to_first_result_s"] == pytest.approx(parts, rel=1e-6)
        assert phase["prepare_s"] == pytest.approx(
            sum(phase[f"{p}_s"] for p in ("plan", "tune", "compile", "zero", "other")))
        assert phase["process_s"] > phase["to_first_result_s"] > 0
    # the second process builds the same programs, from the kernel cache
    assert second["programs_built"] == cold["programs_built"] >= 1
    assert second["compile_build_s"] < cold["compile_build_s"]
    print_table([row])
    out = capsys.readouterr().out
    assert "small.tflite" in out and "cold" in out and "second" in out and "%" in out


def test_new_model_runs_on_caches_the_others_warmed(small_model, tmp_path, monkeypatch):
    """Each model runs last on caches every other model warmed (halves, down to one)."""
    from clnn.bench import bench_first_result as bench

    seen: dict = {}

    def fake(path, caches):
        marks = os.path.join(caches, "clnn", "ran")
        before = sorted(os.listdir(marks)) if os.path.isdir(marks) else []
        os.makedirs(marks, exist_ok=True)
        open(os.path.join(marks, path), "w").close()
        seen.setdefault(path, []).append(before)
        return {"before": before}

    monkeypatch.setattr(bench, "run_phase", fake)
    (tmp_path / "clnn").mkdir()
    out: dict = {}
    names = ["a", "b", "c", "d", "e"]
    new_model_rows(names, str(tmp_path), out)
    for n in names:
        assert out[n]["before"] == sorted(set(names) - {n})
    assert sum(len(v) for v in seen.values()) < len(names) ** 2


def test_unknown_model_is_one_line(capsys):
    assert main(["bench", "prepare", "--models", "no_such_model"]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no_such_model" in err
