"""Imported .tflite models kept under clnn's cache root (clnn.tflite.import_cache): a later
load of the same file reads the kept import (the same model, inputs and outputs, without the
``tflite`` package), other limits or other bytes import afresh, a bad entry is imported again,
bytes are never kept, and the entries are bounded."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import clnn.tflite
from clnn.tflite import TfliteImportError, import_cache
from tests.kits.tflite_writer import Graph

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _model_bytes(scale: float = 1.0) -> bytes:
    g = Graph()
    x = g.tensor([1, 4, 4, 2])
    w = g.tensor([3, 1, 1, 2], data=np.full((3, 1, 1, 2), scale, np.float32))
    b = g.tensor([3], data=np.arange(3, dtype=np.float32))
    y = g.tensor([1, 4, 4, 3])
    g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", Padding=1, StrideW=1, StrideH=1)
    return g.write([x], [y])


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _entries(root) -> list:
    return sorted((root / "cache" / "imports").glob("*.bin"))


def test_second_load_reads_the_kept_import(root):
    path = root / "m.tflite"
    path.write_bytes(_model_bytes())
    fresh = clnn.tflite.load(str(path), cache=False)
    assert _entries(root) == []
    first = clnn.tflite.load(str(path))
    assert len(_entries(root)) == 1
    hits = import_cache.STATS["hits"]
    kept = clnn.tflite.load(str(path))
    assert import_cache.STATS["hits"] == hits + 1
    for got in (first, kept):
        assert got.model.main == fresh.model.main
        assert got.model.operand_values == fresh.model.operand_values
        assert [bytes(p.view()) for p in got.model.pools] == \
            [bytes(p.view()) for p in fresh.model.pools]
        # (the pools are the model's alone: a prepare reads their constants in place)
        assert all(p.private for p in got.model.pools)
        assert (got.inputs, got.outputs) == (fresh.inputs, fresh.outputs)
        assert got.operators == fresh.operators == ["CONV_2D"]
        assert got.tensor_operands == fresh.tensor_operands


def test_other_bytes_or_limits_import_afresh(root):
    path = root / "m.tflite"
    path.write_bytes(_model_bytes(1.0))
    clnn.tflite.load(str(path))
    path.write_bytes(_model_bytes(2.0))
    hits = import_cache.STATS["hits"]
    got = clnn.tflite.load(str(path))
    assert import_cache.STATS["hits"] == hits
    fresh = clnn.tflite.load(str(path), cache=False)
    assert [bytes(p.view()) for p in got.model.pools] == \
        [bytes(p.view()) for p in fresh.model.pools]
    assert got.model.operand_values == fresh.model.operand_values
    with pytest.raises(TfliteImportError, match="bytes"):
        clnn.tflite.load(str(path), max_tensor_bytes=8)
    assert len(_entries(root)) == 2


def test_bad_entry_is_imported_again(root):
    path = root / "m.tflite"
    path.write_bytes(_model_bytes())
    clnn.tflite.load(str(path))
    (entry,) = _entries(root)
    entry.write_bytes(b"clnn-payload-v2\n" + b"\xff" * 40)
    hits = import_cache.STATS["hits"]
    got = clnn.tflite.load(str(path))
    assert import_cache.STATS["hits"] == hits
    assert got.operators == ["CONV_2D"]
    assert import_cache.read(entry) is not None  # written again


def test_bytes_and_unreadable_files(root):
    clnn.tflite.load(_model_bytes())
    assert _entries(root) == []
    with pytest.raises(TfliteImportError, match="cannot read"):
        clnn.tflite.load(str(root / "missing.tflite"))


def test_entries_are_bounded(root):
    for k in range(4):
        path = root / f"m{k}.tflite"
        path.write_bytes(_model_bytes(1.0 + k))
        clnn.tflite.load(str(path))
    folder = root / "cache" / "imports"
    kept = _entries(root)
    os.utime(kept[0], (1, 1))  # the least recently used
    import_cache.evict(folder, max_entries=3)
    assert len(_entries(root)) == 3 and kept[0] not in _entries(root)
    import_cache.evict(folder, max_bytes=kept[1].stat().st_size)
    assert len(_entries(root)) == 1


def test_a_process_loading_a_kept_import_never_imports_tflite(root):
    path = root / "m.tflite"
    path.write_bytes(_model_bytes())
    code = ("import json, sys, clnn.tflite; m = clnn.tflite.load(sys.argv[1]); "
            "print(json.dumps(['tflite' in sys.modules, m.operators]))")
    env = dict(os.environ, CLNN_CACHE_DIR=str(root / "cache"), PYTHONPATH=ROOT)
    runs = [json.loads(subprocess.run([sys.executable, "-c", code, str(path)], env=env,
                                      capture_output=True, text=True, check=True,
                                      cwd=ROOT).stdout) for _ in range(2)]
    assert runs == [[True, ["CONV_2D"]], [False, ["CONV_2D"]]]


def test_an_entry_cut_short_is_imported_again(root):
    path = root / "m.tflite"
    path.write_bytes(_model_bytes())
    want = clnn.tflite.load(str(path), cache=False)
    clnn.tflite.load(str(path))
    (entry,) = _entries(root)
    whole = entry.read_bytes()
    for cut in (len(whole) - 1, len(whole) // 2, 5):
        entry.write_bytes(whole[:cut])
        assert import_cache.read(entry) is None
        got = clnn.tflite.load(str(path))
        assert got.model.main == want.model.main
        assert [bytes(p.view()) for p in got.model.pools] == \
            [bytes(p.view()) for p in want.model.pools]
        assert entry.read_bytes() == whole  # (written again)


def test_the_file_hashed_in_pieces_names_the_entry_its_bytes_name(root):
    data = _model_bytes() + bytes(range(256)) * 3000  # (several pieces of the hash's buffer)
    path = root / "m.bin"
    path.write_bytes(data)
    with open(path, "rb", buffering=0) as f:
        digest = import_cache.file_hash(f)
    limits = (1, 2)
    assert import_cache.entry_path(digest, limits, None) == \
        import_cache.entry_path(data, limits, None)
    assert import_cache.entry_path(digest, limits, None) != \
        import_cache.entry_path(data[:-1], limits, None)
    # (the digest may name several entries: entry_path does not consume it)
    assert import_cache.entry_path(digest, (3, 4), None) == \
        import_cache.entry_path(data, (3, 4), None)
