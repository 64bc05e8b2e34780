"""clnn's one cache directory (clnn/paths.py): a root given (a device's
DeviceOptions.cache_dir, or $CLNN_CACHE_DIR as an entry point reads it), else
$XDG_CACHE_HOME/clnn, and every cache (programs, capabilities, models) under it."""

from __future__ import annotations

import sys

import pytest

from clnn import paths
from clnn.options import DeviceOptions


def test_a_given_root_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path / "env"))
    assert paths.cache_dir("models", root=str(tmp_path / "given")) == \
        tmp_path / "given" / "models"


def test_paths_never_read_clnn_cache_dir(monkeypatch, tmp_path):
    """The variable is the entry points' (clnn.options.cache_root_from_environ); the lab's
    model fetchers are such entry points."""
    from clnn.models import mediapipe as models
    from clnn.options import cache_root_from_environ

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path / "mine"))
    assert paths.cache_dir("models") == paths.cache_dir("models", root=paths.default_root())
    assert cache_root_from_environ() == str(tmp_path / "mine")
    assert models.cache_dir() == str(tmp_path / "mine" / "models")


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_CACHE_HOME is the Linux convention")
def test_xdg_cache_home_is_honoured(monkeypatch, tmp_path):
    monkeypatch.delenv("CLNN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.cache_dir() == tmp_path / "xdg" / "clnn"
    made = paths.cache_dir("programs", create=True)
    assert made.is_dir() and made == tmp_path / "xdg" / "clnn" / "programs"


def test_every_cache_lives_under_it(tmp_path):
    from clnn import capabilities, program_cache

    root = str(tmp_path / "given")

    class FakeDevice:  # what capabilities.identity and cache_path read
        fallback = True
        options = DeviceOptions(cache_dir=root)
        platform = type("P", (), {"name": "p", "version": "1"})()
        cl_device = type("D", (), {"name": "d", "driver_version": "2"})()

    # a device's caches: under its options' root
    assert program_cache.cache_dir(root) == str(tmp_path / "given" / "programs")
    assert capabilities.cache_path(FakeDevice()).parent == tmp_path / "given" / "capabilities"
