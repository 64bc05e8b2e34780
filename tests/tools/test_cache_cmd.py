"""``clnn cache info|clear``: counts and sizes per kind, clear keeps the models (and PoCL's
shared cache) unless named, one-line errors."""

import json

import pytest

from clnn.cli.main import main


@pytest.fixture
def caches(tmp_path, monkeypatch):
    root, pocl = tmp_path / "clnn", tmp_path / "pocl"
    monkeypatch.setenv("CLNN_CACHE_DIR", str(root))
    monkeypatch.setenv("POCL_CACHE_DIR", str(pocl))
    sizes = {"programs": [10, 20], "imports": [40], "compilation": [300], "capabilities": [7],
             "models": [1000, 2000, 3000], "pocl": [50]}
    for kind, lengths in sizes.items():
        d = (pocl if kind == "pocl" else root / kind) / "sub"
        d.mkdir(parents=True)
        for n, length in enumerate(lengths):
            (d / f"f{n}").write_bytes(b"x" * length)
    return sizes


def _info(capsys):
    assert main(["cache", "info", "--json"]) == 0
    return {r["kind"]: r for r in json.loads(capsys.readouterr().out)["kinds"]}


def test_info_counts_files_and_bytes(caches, capsys):
    rows = _info(capsys)
    for kind, lengths in caches.items():
        assert (rows[kind]["files"], rows[kind]["bytes"]) == (len(lengths), sum(lengths)), kind
    assert rows["tuning"]["files"] == 0 and rows["downloads"]["bytes"] == 0
    assert main(["cache", "info"]) == 0
    text = capsys.readouterr().out
    assert "models" in text and "3 files" in text


def test_clear_keeps_models_and_pocl_unless_named(caches, capsys):
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert "cleared programs: 2 files" in out and "kept: models" in out
    rows = _info(capsys)
    assert all(rows[k]["files"] == 0 for k in ("programs", "imports", "compilation",
                                               "capabilities"))
    assert rows["models"]["files"] == 3 and rows["pocl"]["files"] == 1
    assert main(["cache", "clear", "models", "pocl"]) == 0
    capsys.readouterr()
    rows = _info(capsys)
    assert rows["models"]["files"] == 0 and rows["pocl"]["files"] == 0


def test_unknown_kind_is_one_line(caches, capsys):
    assert main(["cache", "clear", "everything"]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown cache kind 'everything'" in err
    assert _info(capsys)["models"]["files"] == 3
