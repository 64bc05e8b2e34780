"""The kernel templates compile to Python modules once per machine (clnn.program_cache
template_modules): a later process renders from the modules kept under the cache root, or
from those ``make`` compiled at install (compile_templates), and compiles no template."""

from __future__ import annotations

import mako.template
import pytest

from clnn.program_cache import rendering

KEY = ("fill", "fill", {"dt": "f16"})


def _compiling_fails(*args, **kwargs):
    raise AssertionError("a template was compiled")


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A process of its own: no lookup made yet, nothing compiled at install."""
    monkeypatch.setattr(rendering, "INSTALLED_TEMPLATES", tmp_path / "installed")
    rendering._lookup.cache_clear()
    yield tmp_path
    rendering._lookup.cache_clear()


def _no_compiles(monkeypatch):
    rendering._lookup.cache_clear()
    monkeypatch.setattr(mako.template, "_compile_text", _compiling_fails)
    monkeypatch.setattr(mako.template, "_compile_module_file", _compiling_fails)


def _render(root) -> str:
    return "".join(rendering._render_parts(*KEY, root=str(root)))


def test_a_later_process_renders_from_the_kept_modules(monkeypatch, fresh):
    root = fresh / "cache"
    first = _render(root)
    folder = rendering.template_modules(str(root))
    assert folder.startswith(str(root / "programs" / "templates"))
    assert folder.endswith(rendering.templates_fingerprint())
    _no_compiles(monkeypatch)
    assert _render(root) == first and "vstore_half_rte(value, i, y)" in first


def test_modules_compiled_at_install_serve_an_empty_cache(monkeypatch, fresh):
    want = _render(fresh / "other")
    installed = rendering.compile_templates(rendering.INSTALLED_TEMPLATES)
    assert rendering.template_modules(str(fresh / "empty")) == str(installed)
    _no_compiles(monkeypatch)
    assert _render(fresh / "empty") == want
    assert not (fresh / "empty" / "programs" / "templates").exists()


def test_modules_older_than_their_template_are_not_taken(monkeypatch, fresh):
    """An edited template (same fingerprint here: only its time) makes Mako write its module
    again, which an installed folder need not allow: the cache root's folder is taken."""
    import os

    installed = rendering.compile_templates(rendering.INSTALLED_TEMPLATES)
    module = installed / "fill.cl.mako.py"
    os.utime(module, (0, 0))
    assert rendering.template_modules(str(fresh / "c")) != str(installed)


def test_another_set_of_templates_compiles_to_another_folder(monkeypatch, fresh, tmp_path):
    templates = tmp_path / "templates"
    templates.mkdir()
    for path in rendering.TEMPLATE_DIR.glob("*.mako"):
        (templates / path.name).write_bytes(path.read_bytes())
    mine = rendering.templates_fingerprint()
    (templates / "fill.cl.mako").write_text("<%def name=\"fill(dt)\">changed</%def>\n")
    monkeypatch.setattr(rendering, "TEMPLATE_DIR", templates)
    rendering.templates_fingerprint.cache_clear()
    try:
        assert rendering.templates_fingerprint() != mine
        assert rendering._render_parts(*KEY, root=str(tmp_path / "c"))[1] == "changed"
    finally:
        rendering.templates_fingerprint.cache_clear()


def test_a_module_that_cannot_be_written_compiles_in_memory(monkeypatch, fresh):
    """A full or read-only cache root: the template is compiled in memory, as before."""
    want = _render(fresh / "first")
    rendering._lookup.cache_clear()

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(mako.template, "_compile_module_file", disk_full)
    assert _render(fresh / "full") == want
