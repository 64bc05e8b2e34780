"""``clnn bench prepare --models``: a cold process (empty caches) and a warm one (the caches it
left) per model, each split into import, load, prepare and first execution; on a small model
written at test time (the MediaPipe models take minutes cold)."""

import numpy as np
import pytest

from clnn.bench.bench_first_result import bench_model
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


def test_cold_then_warm(small_model):
    open_or_skip("opencl")
    row = bench_model(small_model)
    cold, warm = row["cold"], row["warm"]
    assert "error" not in cold and "error" not in warm, row
    assert cold["compilation_cache"] == "miss" and warm["compilation_cache"] == "hit"
    assert cold["programs_built"] >= 1 and warm["programs_built"] == 0
    for phase in (cold, warm):
        # prepare left nothing to compile for the first execution
        assert phase["programs_built_at_execution"] == 0
        assert phase["kernel_first_launches_at_execution"] == 0
        assert phase["kernel_first_launches_at_prepare"] >= 2
        # (the first execution alone: the request's inputs are made before it)
        parts = phase["import_s"] + phase["load_s"] + phase["prepare_s"] + \
            phase["request_s"] + phase["first_execution_s"]
        assert phase["to_first_result_s"] == pytest.approx(parts, rel=1e-6)
        assert phase["process_s"] > phase["to_first_result_s"] > 0


def test_unknown_model_is_one_line(capsys):
    assert main(["bench", "prepare", "--models", "no_such_model"]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no_such_model" in err
