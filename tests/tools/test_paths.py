"""clnn's one cache directory (clnn/paths.py): a root given (a device's
DeviceOptions.cache_dir), else $CLNN_CACHE_DIR (the tools'), else $XDG_CACHE_HOME/clnn, and every
cache (programs, capabilities, models) under it."""

from __future__ import annotations

import sys

import pytest

from clnn import paths
from clnn.options import DeviceOptions


def test_a_given_root_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path / "env"))
    assert paths.cache_dir("models", root=str(tmp_path / "given")) == \
        tmp_path / "given" / "models"


def test_clnn_cache_dir_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path / "mine"))
    assert paths.cache_dir("models") == tmp_path / "mine" / "models"


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_CACHE_HOME is the Linux convention")
def test_xdg_cache_home_is_honoured(monkeypatch, tmp_path):
    monkeypatch.delenv("CLNN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.cache_dir() == tmp_path / "xdg" / "clnn"
    made = paths.cache_dir("programs", create=True)
    assert made.is_dir() and made == tmp_path / "xdg" / "clnn" / "programs"


def test_every_cache_lives_under_it(monkeypatch, tmp_path):
    from clnn import capabilities, program_cache
    from clnn.models import mediapipe as models

    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path))

    class FakeDevice:  # what capabilities.identity and cache_path read
        fallback = True
        options = DeviceOptions(cache_dir=str(tmp_path / "given"))
        platform = type("P", (), {"name": "p", "version": "1"})()
        cl_device = type("D", (), {"name": "d", "driver_version": "2"})()

    assert program_cache.cache_dir() == str(tmp_path / "programs")
    assert models.cache_dir() == str(tmp_path / "models")
    # a device's caches: under its options' root
    assert capabilities.cache_path(FakeDevice()).parent == tmp_path / "given" / "capabilities"
