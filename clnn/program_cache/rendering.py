"""Kernel templates rendered: Mako lookups, templates compiled once per machine, rendered
sources kept under the cache root, kernel names and the kernels' fingerprint
(clnn.program_cache)."""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import sys
import threading
from pathlib import Path

from clnn import paths

TEMPLATE_DIR = Path(__file__).parent.parent / "templates"


#: where ``make`` compiles the templates at install (:func:`compile_templates`): beside the
#: installed packages, so that a process on an empty cache directory compiles none either
INSTALLED_TEMPLATES = Path(sys.prefix, "share", "clnn", "templates")
#: the file that marks a folder of compiled templates complete
_COMPLETE = "complete"


@functools.cache
def _lookup(root: str | None = None, keep: bool = True):
    """The TemplateLookup of cache root ``root``, made at the first render (mako, and the
    pygments its error pages import, stay off the path of a process that only restores
    compiled programs). Templates compile to Python modules kept in :func:`template_modules`
    (compiled once per machine, not in every process that renders: 0.15-0.3 s of a prepare);
    ``keep`` False: compiled in memory, kept nowhere."""
    return _new_lookup(template_modules(root) if keep else None)


def _new_lookup(module_directory: str | None):
    """A TemplateLookup of the kernel templates keeping their modules in ``module_directory``
    (None: in memory)."""
    from mako.lookup import TemplateLookup

    return TemplateLookup(directories=[str(TEMPLATE_DIR)], strict_undefined=True,
                          input_encoding="utf-8", module_directory=module_directory)


@functools.cache
def templates_fingerprint() -> str:
    """A hash of the templates and of the Mako that compiles them: names the folder of their
    compiled modules (another checkout's templates, or another Mako, compile to another)."""
    import mako

    h = hashlib.sha256(mako.__version__.encode() + b"\0")
    for path in sorted(TEMPLATE_DIR.glob("*.mako")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _fresh(folder: Path) -> bool:
    """Whether ``folder`` holds a complete set of compiled templates that Mako takes as they
    are (each module newer than its template: else Mako would write it again)."""
    try:
        if not (folder / _COMPLETE).exists():
            return False
        return all((folder / f"{t.name}.py").stat().st_mtime >= t.stat().st_mtime
                   for t in TEMPLATE_DIR.glob("*.mako"))
    except OSError:
        return False


def template_modules(root: str | None = None) -> str | None:
    """The folder Mako keeps the compiled templates in: the one compiled at install
    (:data:`INSTALLED_TEMPLATES`) where it holds these templates, else ``programs/templates``
    under the cache root ``root`` (compiled there as they are first rendered); each named by
    :func:`templates_fingerprint`. None (compiled in memory) where neither can be written."""
    fp = templates_fingerprint()
    installed = INSTALLED_TEMPLATES / fp
    if _fresh(installed):
        return str(installed)
    try:
        return str(paths.cache_dir("programs", "templates", fp, root=root, create=True))
    except OSError:
        return None


def compile_templates(folder: Path = INSTALLED_TEMPLATES) -> Path:
    """Compile every template, and the Python modules Mako makes of them, into
    ``folder/<fingerprint>`` (``make`` does at install); returns that folder. Written beside
    it, then renamed: a process never reads part of one."""
    import compileall
    import shutil
    import tempfile

    final = folder / templates_fingerprint()
    if _fresh(final):
        return final
    folder.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".compiling-", dir=folder))
    try:
        lookup = _new_lookup(str(work))
        for path in sorted(TEMPLATE_DIR.glob("*.mako")):
            lookup.get_template(path.name)
        if not compileall.compile_dir(str(work), quiet=1, legacy=False):
            raise RuntimeError(f"compiling the templates' modules in {work} failed")
        (work / _COMPLETE).write_text(f"{TEMPLATE_DIR}\n")
        for old in folder.iterdir():  # (other templates' modules: no process of these reads)
            if old.is_dir() and old != work:
                shutil.rmtree(old, ignore_errors=True)
        os.replace(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


#: the lines saying what a prepare compiles or measures (INFO: what takes seconds, a cold
#: kernel cache; a tool's progress bar shows them, clnn.prepare_cached.build_progress; quiet
#: unless the application configures logging)
LOG = logging.getLogger("clnn")

#: what the caches did in this process: renders, builds (with their seconds), memo hits; of
#: programs built one per kernel key: kernels compiled (no binary kept), of them those queued
#: for this process and its helpers and those compiled here, programs made from their binary;
#: programs built without the builtin header (build_program)
STATS = {"rendered": 0, "built": 0, "build_s": 0.0, "memo_hits": 0, "combined_kernels": 0,
         "chains_built": 0, "sources_read": 0, "queued": 0, "compiled_here": 0,
         "compiled": 0, "from_binary": 0, "prefetched": 0, "short_built": 0}

def freeze(params: dict) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))


def _render_with(lookup, family: str, name: str, params: dict) -> tuple[str, str]:
    common = lookup.get_template("common.mako").get_def("prelude").render()
    body = lookup.get_template(f"{family}.cl.mako").get_def(name).render(**params)
    return common, body


def _render_parts(family: str, name: str, params: dict, debug: bool = False,
                  root: str | None = None) -> tuple[str, str]:
    """(common helpers, the kernel's own source) of kernel ``name`` of ``<family>.cl.mako``
    (templates compiled under the cache root ``root``: :func:`_lookup`)."""
    try:
        try:
            common, body = _render_with(_lookup(root), family, name, params)
        except OSError:  # (a module not written: the cache full or read-only) in memory
            common, body = _render_with(_lookup(root, False), family, name, params)
    except Exception as e:
        if debug:
            from mako import exceptions as mako_exceptions  # (pygments: off the import path)

            detail = mako_exceptions.text_error_template().render()
        else:
            detail = f"{type(e).__name__}: {e}"
        raise RuntimeError(f"rendering {family}.cl.mako def {name} with {params}: "
                           f"{detail}") from e
    STATS["rendered"] += 1
    return common, body


def kernel_parts(family: str, name: str, params: dict, root: str | None = None,
                 debug: bool = False) -> tuple[str, str]:
    """:func:`_render_parts`, from the store of rendered sources under the cache root ``root``
    (a device's ``DeviceOptions.cache_dir``; :func:`stored`) where a process rendered them
    before: a process whose kernels were all rendered before neither imports Mako nor
    compiles a template (a third of iris_landmark's prepare on a warm kernel cache); rendered
    afresh with ``debug`` (its tracebacks)."""
    if debug:
        return _render_parts(family, name, params, True, root=root)
    what = repr((family, name, freeze(params)))
    common, _, body = stored(root, what, lambda: _SPLIT.join(
        _render_parts(family, name, params, root=root))).partition(_SPLIT)
    return common, body


#: between the common helpers and the kernel's source in a stored file (no OpenCL C has it)
_SPLIT = "\0\n"


def stored(root: str | None, what: str, make) -> str:
    """The text of ``what`` (a kernel key's repr) in ``sources`` under pyopencl's binary
    cache (:func:`cache_dir` of ``root``), named by a hash of the templates and kernel
    families' code (:func:`kernels_fingerprint`) and ``what``; else ``make()``, stored there
    (written whole, then renamed: a reader never sees part of one). An unreadable or
    unwritable store: rendered every time."""
    if what in _REMEMBERED:
        return _REMEMBERED[what]
    h = hashlib.sha256(f"{kernels_fingerprint()}|{what}".encode()).hexdigest()[:32]
    path = Path(cache_dir(root)) / "sources" / f"{h}.cl"
    try:
        text = path.read_text()
        if _SPLIT in text:  # (else not one of these files)
            STATS["sources_read"] += 1
            return text
    except (OSError, UnicodeDecodeError):
        pass
    text = make()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{h}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError:
        pass
    return text


def render(family: str, name: str, params: dict, options=None) -> str:
    """Source of kernel ``name`` of ``<family>.cl.mako`` with the common helpers prepended;
    ``options`` (clnn.options.DeviceOptions): ``debug`` (full Mako tracebacks), ``dump_cl``
    (the directory the source is written to), ``cache_dir`` (the store of rendered sources,
    :func:`kernel_parts`)."""
    debug = bool(options is not None and options.debug)
    root = options.cache_dir if options is not None else None
    common, body = kernel_parts(family, name, params, root, debug)
    src = f"// clnn kernel {family}.{name} {freeze(params)}\n{common}\n{body}\n"
    dump = options.dump_cl if options is not None else None
    if dump:
        os.makedirs(dump, exist_ok=True)
        h = hashlib.sha1(src.encode()).hexdigest()[:10]
        Path(dump, f"{family}.{name}.{h}.cl").write_text(src)
    return src


def source_text(key: tuple, root: str | None = None) -> str:
    """Kernel key ``key``'s rendered source as :func:`stored` keeps it (what
    :func:`remember_source` takes back)."""
    common, body = kernel_parts(key[0], key[1], dict(key[2]), root)
    return f"{common}{_SPLIT}{body}"


def remember_source(key: tuple, text: str) -> None:
    """Keep the stored text (:func:`stored`) of kernel key ``key``'s rendered source for this
    process (a compilation cache restores the sources of the kernels its chains run:
    clnn.compilation_cache), so that it is neither rendered nor read from the store."""
    if _SPLIT in text:
        _REMEMBERED[repr(tuple(key))] = text


#: kernel key's repr -> its rendered source's stored text (:func:`remember_source`)
_REMEMBERED: dict[str, str] = {}


def kernel_decl(name: str):
    return re.compile(rf"(__kernel\b[^;{{}}]*?\bvoid\s+){re.escape(name)}(\s*\()")


DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)", re.M)


def kernel_name(key: tuple) -> str:
    """The name of a kernel key's kernel inside a program built by
    :meth:`ProgramCache.build_together`: its def name and a hash of the key."""
    return f"{key[1]}_{hashlib.sha1(repr(key).encode()).hexdigest()[:10]}"


_FINGERPRINT: list = []


def kernels_fingerprint() -> str:
    """A hash of what decides the kernels' sources and arguments: the templates and the kernel
    families' code (a compilation cache saved by other kernels must not be restored: its
    programs would take other arguments)."""
    if not _FINGERPRINT:
        h = hashlib.sha256()
        here = Path(__file__).parent.parent
        for path in sorted([*TEMPLATE_DIR.glob("*.mako"), *(here / "kernels").glob("*.py")]):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        _FINGERPRINT.append(h.hexdigest()[:16])
    return _FINGERPRINT[0]


def cache_dir(root: str | None = None) -> str:
    """pyopencl's binary cache: ``programs`` under ``root`` (a device's
    ``DeviceOptions.cache_dir``; None: the user cache directory, clnn.paths)."""
    return str(paths.cache_dir("programs", root=root, create=True))


def build_stats() -> dict:
    return dict(STATS)
