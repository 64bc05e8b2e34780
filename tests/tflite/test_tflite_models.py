"""Real MediaPipe models (clnn.models.mediapipe fetches them once into the cache) imported and run
on the reference and OpenCL devices, checked against ai-edge-litert; the ``clnn run``,
``clnn models`` and ``clnn bench models`` commands."""

import json
import os
import zipfile

import numpy as np
import pytest

from clnn.cli.main import main
from clnn.cli.run import ClnnRunner, LiteRtRunner, compare, random_inputs
from clnn.devices import open_device
from clnn.models import mediapipe as models
from clnn.tflite import TfliteImportError, load

#: small models covering DENSIFY, Convolution2DTransposeBias, HARD_SWISH, PAD, CONCATENATION
SMALL = ["face_detection_short_range.tflite", "selfie_segmentation.tflite",
         "face_detection_full_range_sparse.tflite"]


@pytest.fixture(scope="session")
def model_paths():
    return models.fetch(SMALL + ["face_landmark_with_attention.tflite"])


@pytest.mark.parametrize("name", SMALL)
def test_model_matches_litert(model_paths, device, name):
    path = model_paths[name]
    imported = load(path)
    inputs = random_inputs(imported)
    outs, _ = ClnnRunner(imported, device).run(inputs)
    ref, _ = LiteRtRunner(path).run(imported, inputs)
    assert [o.shape for o in outs] == [r.shape for r in ref]
    for row, b in zip(compare(outs, ref), ref):
        # |a - b| <= 1e-4 + 1e-3 * max|b|
        assert row["within_tolerance"], (name, row, float(np.max(np.abs(b))))


def test_import_maps_the_mediapipe_specifics(model_paths):
    seg = load(model_paths["selfie_segmentation.tflite"])
    types = [o.type.name for o in seg.model.main.operations]
    assert "TRANSPOSE_CONV_2D" in types and "HARD_SWISH" in types
    assert "DEQUANTIZE" not in types  # the float16 weights were folded
    assert seg.inputs[0].name == "input_1" and seg.inputs[0].shape == (1, 256, 256, 3)
    sparse = load(model_paths["face_detection_full_range_sparse.tflite"])
    names = [o.type.name for o in sparse.model.main.operations]
    assert "DEQUANTIZE" not in names and "CONV_2D" in names
    assert sparse.operators.count("DENSIFY") == 46  # all folded into constants
    assert [o.name for o in sparse.outputs] == ["Identity", "Identity_1"]


def test_model_with_mediapipe_custom_ops_names_the_operator(model_paths):
    with pytest.raises(TfliteImportError,
                       match=r"operator 192 \(CUSTOM:Landmarks2TransformMatrix\)"):
        load(model_paths["face_landmark_with_attention.tflite"])


# ------------------------------------------------------------------ clnn run
def test_run_json_compare_litert(model_paths, capsys, tmp_path):
    path = model_paths["face_detection_short_range.tflite"]
    x = np.random.default_rng(1).random((1, 128, 128, 3), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    rc = main(["run", path, "--input", f"input={tmp_path / 'x.npy'}", "--iterations", "3",
               "--compare", "litert", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert report["latency"]["iterations"] == 3
    assert report["latency"]["min_ms"] <= report["latency"]["median_ms"]
    assert [o["name"] for o in report["outputs"]] == ["regressors", "classificators"]
    assert report["outputs"][0]["shape"] == [1, 896, 16]
    assert all(o["compare"]["within_tolerance"] for o in report["outputs"])


def test_run_profile_on_opencl(model_paths, capsys):
    try:
        open_device("opencl")
    except Exception as e:
        pytest.skip(f"no OpenCL device: {e}")
    path = model_paths["face_detection_short_range.tflite"]
    rc = main(["run", path, "--device", "opencl", "--iterations", "2", "--profile",
               "--compare", "reference", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0
    rows = [r for r in report["profile"] if r["operation"] is not None]
    assert rows and all(r["ms"] >= 0 for r in rows)
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    assert rows == sorted(rows, key=lambda r: -r["ms"])
    assert "CONV_2D" in {r["type"] for r in rows}
    # the roofline view: a rate per operation with kernel time, and totals per type
    assert all(r["rate"] > 0 for r in rows if r["ms"] > 0)
    assert report["peak"]["gflops"] > 0 and report["peak"]["gbs"] > 0
    assert {t["type"] for t in report["profile_totals"]} == {r["type"] for r in rows
                                                             if r["ms"] > 0}
    # on a device that chains its launches (clnn/chain.py), the profile times them inside
    # their chain (clnn/bench/chain_profile.py): as the latency runs ran them
    from clnn import chain
    from clnn.bench import chain_profile

    dev = open_device("opencl")
    if chain.enabled(dev.cl_device) and chain_profile.cycle_rate(dev.context) is not None:
        timed = [r for r in rows if r["ms"] > 0]
        assert sum(bool(r.get("chained")) for r in timed) >= len(timed) - 2, timed
    mem = report["memory"]  # the liveness-planned pool is smaller than the tensors it holds
    assert 0 < mem["pool_bytes"] < mem["tensor_bytes"]
    assert mem["constant_bytes"] > 0 and mem["launches"] > 0


def test_run_text_report_and_bad_input(model_paths, capsys):
    path = model_paths["face_detection_short_range.tflite"]
    assert main(["run", path, "--iterations", "1"]) == 0
    out = capsys.readouterr().out
    assert "regressors: [1, 896, 16]" in out and "latency: 1 timed run after the first" in out
    assert main(["run", path, "--input", "nosuch=x.npy"]) == 1
    assert "no input named 'nosuch'" in capsys.readouterr().err


def test_run_reports_an_unimportable_model(model_paths, capsys):
    assert main(["run", model_paths["face_landmark_with_attention.tflite"]]) == 1
    assert "Landmarks2TransformMatrix" in capsys.readouterr().err


# ------------------------------------------------------------------ models / bench
def test_bench_models_json(model_paths, capsys):
    rc = main(["bench", "models", "--models", "face_detection_short_range.tflite",
               "--iterations", "2", "--rounds", "3", "--device", "reference", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert rc == 0
    (row,) = result["models"]
    assert row["model"] == "face_detection_short_range.tflite"
    assert row["clnn_ms"] > 0 and row["litert_ms"] > 0
    assert row["ratio"] == pytest.approx(row["clnn_ms"] / row["litert_ms"], rel=0.02)
    assert row["within_tolerance"] and result["litert_threads"] == 2
    # interleaved rounds: a median per round and side, their spread, the run's load average
    assert result["rounds"] == 3 and len(row["clnn_round_ms"]) == len(row["litert_round_ms"]) == 3
    assert set(row["spread"]) == {"clnn", "litert"} and all(v >= 0 for v in row["spread"].values())
    assert row["unstable"] == (max(row["spread"].values()) > 0.20)
    assert set(result["load_average"]) == {"before", "after"}
    assert result["median_ratio"] == pytest.approx(row["ratio"], rel=0.01)
    assert isinstance(result["warnings"], list)


def test_fetch_from_a_local_wheel_checks_hashes(model_paths, tmp_path):
    name = "face_detection_short_range.tflite"
    wheel = tmp_path / "mediapipe-0.10.14-fake.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.write(model_paths[name], f"mediapipe/modules/face_detection/{name}")
        z.writestr("mediapipe/modules/hand_recrop/hand_recrop.tflite", b"not the model")
    cache = tmp_path / "cache"
    paths = models.fetch([name], str(cache), wheel=str(wheel))
    assert os.path.getsize(paths[name]) == os.path.getsize(model_paths[name])
    with pytest.raises(models.FetchError, match="unexpected SHA-256"):
        models.fetch(["hand_recrop"], str(cache), wheel=str(wheel))
    assert not os.path.exists(cache / "hand_recrop.tflite")
    with pytest.raises(models.FetchError, match="not in"):
        models.fetch(["iris_landmark"], str(cache), wheel=str(wheel))
    with pytest.raises(KeyError, match="unknown model"):
        models.model_path("nosuch")


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path))
    assert models.cache_dir() == os.path.join(str(tmp_path), "models")
