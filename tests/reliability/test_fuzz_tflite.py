"""Malformed .tflite files (issue "Hostile input", defect 4): every file ends in
TfliteImportError naming what is wrong, or loads and runs with a HAL status; never another
exception, a crash, a hang or a memory blow-up (the cases run in memory-limited workers:
clnn/suites/fuzz_tflite.py). Base models: two synthetic ones written here, plus MediaPipe's
hand_recrop, fetched into the model cache once (``clnn models fetch``)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from clnn.suites.fuzz_tflite import run_fuzz
from clnn.suites.fuzz_tflite_bases import synthetic_bases
from clnn.tflite import TfliteImportError, load

FAST_REAL = ("hand_recrop.tflite",)


def _summary(report) -> str:
    lines = [f"{report['counts']}"]
    for f in report["failures"][:10]:
        lines.append(f"seed {f['seed']}: {f['message']} [{f.get('case', '')}] "
                     f"(reproduce: clnn fuzz tflite --count 1 --seed {f['seed']})")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def real_models():
    """The MediaPipe models the suite mutates, fetched once (as tests/tflite does); skipped only
    where they cannot be downloaded."""
    from clnn.models import mediapipe as models

    try:
        return models.fetch(list(FAST_REAL) + ["face_detection_full_range_sparse.tflite"])
    except models.FetchError as e:
        pytest.skip(f"the MediaPipe models cannot be fetched: {e}")


def test_thousands_of_malformed_files_end_in_import_error_or_a_status(real_models):
    count = 2500
    report = run_fuzz(count, seed=0, real=FAST_REAL, workers=2)
    c = report["counts"]
    assert not report["failures"], _summary(report)
    assert c["rejected"] + c["ran"] == count
    # both outcomes occur, and every rejection came from a check that names the problem
    assert c["rejected"] > count // 2 and c["ran"] > 50, c
    assert c["rejected_by_guard"] == 0, [r["message"] for r in report["results"]
                                         if r.get("guard")][:5]
    assert all(r["message"] for r in report["results"] if r["outcome"] == "rejected")


def test_a_subset_also_runs_on_opencl():
    pytest.importorskip("pyopencl")
    report = run_fuzz(120, seed=100_000, real=(), workers=1, opencl_every=1)
    assert not report["failures"], _summary(report)
    ran = [r for r in report["results"] if r["outcome"] == "ran"]
    assert ran and all("opencl" in r["statuses"] for r in ran)


def test_a_hung_case_is_a_failure_that_names_its_seed():
    # a timeout no case can meet: each case "hangs", the worker is replaced, and every seed
    # is reported once, with where it was
    report = run_fuzz(2, seed=40, real=(), workers=1, timeout=0.001)
    assert [f["seed"] for f in report["failures"]] == [40, 41], _summary(report)
    assert all(f["message"].startswith("hang") for f in report["failures"])
    assert report["counts"]["failure"] == 2


def test_a_crashed_worker_is_a_failure_that_names_its_seed():
    # a memory limit too small to import the importer: the worker dies before each case
    report = run_fuzz(2, seed=7, real=(), workers=1, memory_limit=64 << 20)
    assert [f["seed"] for f in report["failures"]] == [7, 8], _summary(report)
    assert all(f["message"].startswith("worker died") for f in report["failures"])


@pytest.fixture(scope="module")
def conv_model() -> bytes:
    return synthetic_bases()["synthetic_conv"]


def test_every_truncation_is_rejected_with_a_sentence(conv_model):
    for cut in range(len(conv_model)):
        with pytest.raises(TfliteImportError) as e:
            load(conv_model[:cut])
        assert len(str(e.value).split()) >= 4, (cut, str(e.value))


@pytest.mark.parametrize("raw, match", [
    (b"\x08\0\0\0TFL3", "model at byte 8 lies outside"),
    (b"\x08\0\0\0TFL3" + b"\0" * 8, "vtable"),
    (b"\0\0\0\0TFL3", "vtable|model"),
    (b"abcdTFL2", "identifier"),
    (b"", "identifier"),
])
def test_short_and_synthetic_headers(raw, match):
    with pytest.raises(TfliteImportError, match=match):
        load(raw)


def _tensor_shape_offsets(raw: bytes):
    """Byte offsets of each tensor's shape vector data (via the tflite reader)."""
    import tflite

    g = tflite.Model.GetRootAs(raw, 0).Subgraphs(0)
    tensors = [g.Tensors(i) for i in range(g.TensorsLength())]
    return [t._tab.Vector(t._tab.Offset(4)) for t in tensors]


def test_huge_shape_is_rejected_before_allocation(conv_model):
    data = bytearray(conv_model)
    at = _tensor_shape_offsets(conv_model)[3]  # y [1, 4, 4, 3], an activation
    struct.pack_into("<i", data, at + 4, 0x7FFFFFFF)
    with pytest.raises(TfliteImportError, match=r"tensor 3 \(y\).*limit per tensor"):
        load(bytes(data))


def test_negative_dimension_is_named(conv_model):
    data = bytearray(conv_model)
    struct.pack_into("<i", data, _tensor_shape_offsets(conv_model)[0], -5)
    with pytest.raises(TfliteImportError, match=r"tensor 0 \(x\).*negative dimension"):
        load(bytes(data))


def test_flipped_operator_code_index_is_named(conv_model):
    import tflite

    g = tflite.Model.GetRootAs(conv_model, 0).Subgraphs(0)
    op = g.Operators(0)
    data = bytearray(conv_model)
    struct.pack_into("<I", data, op._tab.Pos + op._tab.Offset(4), 200)
    with pytest.raises(TfliteImportError, match="operator 0: opcode index 200 is out of range"):
        load(bytes(data))


def test_intact_bases_load_and_run():
    from clnn.devices import open_device
    from hal.builder import make_request
    from hal.errors import ErrorStatus

    dev = open_device("reference")
    for name, raw in synthetic_bases().items():
        m = load(raw)
        prepared = dev.prepare_model(m.model)
        req = make_request(m.model, [np.ones(io.shape, io.dtype) for io in m.inputs])
        assert prepared.execute_synchronously(req).status == ErrorStatus.NONE, name


@pytest.fixture
def sparse_model(real_models) -> bytes:
    with open(real_models["face_detection_full_range_sparse.tflite"], "rb") as f:
        return f.read()


def _csr_vector(raw: bytes, tensor: int, which: str) -> tuple[int, int, int]:
    """(data offset, length, element size) of a SPARSE_CSR level's segments or indices."""
    import tflite

    t = tflite.Model.GetRootAs(raw, 0).Subgraphs(0).Tensors(tensor)
    sp = t.Sparsity()
    dm = next(sp.DimMetadata(k) for k in range(sp.DimMetadataLength())
              if sp.DimMetadata(k).Format() == 1)
    kind = getattr(dm, f"Array{which}Type")()
    table = getattr(dm, f"Array{which}")()
    vec = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}[kind]()
    vec.Init(table.Bytes, table.Pos)
    return vec._tab.Vector(vec._tab.Offset(4)), vec.ValuesLength(), {1: 4, 2: 2, 3: 1}[kind]


@pytest.mark.parametrize("which, value, match", [
    ("Segments", 255, "segments are not an increasing run"),  # negative repeat counts
    ("Indices", 250, "indices outside"),
])
def test_corrupted_sparsity_is_named(which, value, match, sparse_model):
    raw = sparse_model
    start, length, size = _csr_vector(raw, 14, which)
    assert length > 2
    data = bytearray(raw)
    data[start + size:start + 2 * size] = value.to_bytes(size, "little")
    with pytest.raises(TfliteImportError, match=rf"tensor 14 \(.*\): .*{match}"):
        load(bytes(data))
