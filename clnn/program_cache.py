"""Rendering Mako kernel templates and building OpenCL programs once per kernel key.

Every kernel lives in ``clnn/templates/<family>.cl.mako`` as one ``<%def>``; the helpers of
``common.mako`` (prefixed ``clnn_``) are prepended to every program. Templates are loaded
through one :class:`mako.lookup.TemplateLookup` with ``strict_undefined=True``, so a missing
template parameter is an error that names the template, def and parameters.

A *kernel key* is ``(family, def name, params)`` where params hold only what changes the
source (op, dtypes, activation, variant); shapes, strides and quantization parameters are
kernel arguments. Programs are memoized per (context, key). Built binaries are cached on disk
keyed by source, options, device and driver version: by pyopencl's binary cache, or, for ICDs
that keep their own cache (PoCL: ``POCL_CACHE_DIR``, ~/.cache/pocl), by the ICD, which pyopencl
then defers to. So a second process does not rebuild a program: measured on PoCL 3.1, four
programs took 0.94 s to build with a cold cache and 0.10 s in a second process (see
:func:`build_stats`; clnn/compilation_cache.py adds a per-model compilation cache on top).

``CLNN_DUMP_CL=dir`` writes every rendered program to ``dir/<family>.<def>.<hash>.cl``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from pathlib import Path

from mako import exceptions as mako_exceptions
from mako.lookup import TemplateLookup

from clnn import paths

TEMPLATE_DIR = Path(__file__).parent / "templates"
_LOOKUP = TemplateLookup(directories=[str(TEMPLATE_DIR)], strict_undefined=True,
                         input_encoding="utf-8")
_LOCK = threading.Lock()

#: what the caches did in this process: renders, builds (with their seconds), memo hits
STATS = {"rendered": 0, "built": 0, "build_s": 0.0, "memo_hits": 0}


def freeze(params: dict) -> tuple:
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))


def render(family: str, name: str, params: dict) -> str:
    """Source of kernel ``name`` of ``<family>.cl.mako`` with the common helpers prepended."""
    try:
        common = _LOOKUP.get_template("common.mako").get_def("prelude").render()
        tmpl = _LOOKUP.get_template(f"{family}.cl.mako")
        body = tmpl.get_def(name).render(**params)
    except Exception as e:
        detail = mako_exceptions.text_error_template().render() if os.environ.get(
            "CLNN_DEBUG") else f"{type(e).__name__}: {e}"
        raise RuntimeError(f"rendering {family}.cl.mako def {name} with {params}: "
                           f"{detail}") from e
    STATS["rendered"] += 1
    src = f"// clnn kernel {family}.{name} {freeze(params)}\n{common}\n{body}\n"
    dump = os.environ.get("CLNN_DUMP_CL")
    if dump:
        os.makedirs(dump, exist_ok=True)
        h = hashlib.sha1(src.encode()).hexdigest()[:10]
        Path(dump, f"{family}.{name}.{h}.cl").write_text(src)
    return src


class ProgramCache:
    """Built programs of one OpenCL context, one per kernel key."""

    def __init__(self, context):
        self.context = context
        self._programs: dict[tuple, object] = {}

    def program(self, family: str, name: str, params: dict):
        import pyopencl as cl

        key = (family, name, freeze(params))
        keys = getattr(_RECORDING, "keys", None)
        if keys is not None and key not in keys:
            keys.append(key)
        prg = self._programs.get(key)
        if prg is not None:
            STATS["memo_hits"] += 1
            return prg
        with _LOCK:
            src = render(family, name, params)
            t0 = time.perf_counter()
            try:
                # pyopencl keeps built binaries on disk keyed by source, options and device
                prg = cl.Program(self.context, src).build(options=["-cl-std=CL1.2"],
                                                          cache_dir=cache_dir())
            except cl.RuntimeError as e:
                raise RuntimeError(f"building {family}.{name} {params}: {e}") from e
            STATS["built"] += 1
            STATS["build_s"] += time.perf_counter() - t0
            self._programs[key] = prg
        notify("build", 1)
        return prg


    def get(self, key: tuple):
        """The built program of a kernel key, or None."""
        return self._programs.get(key)

    def adopt(self, key: tuple, program):
        """Take a program built elsewhere (from a compilation cache's binary) for ``key``."""
        with _LOCK:
            self._programs.setdefault(key, program)


#: listeners of the compile work of a prepare: callables ``(stage, done, total)``, stage "build"
#: (a program built; total None: programs are built as the plans ask for them) or "warm_up"
#: (done of total first kernel launches, clnn.prepared_model.ClPreparedModel.warm_up). The
#: tools draw a progress bar from them (clnn/tools/first_result.py); none by default.
listeners: list = []


def notify(stage: str, done: int, total: int | None = None):
    for listener in list(listeners):
        listener(stage, done, total)


_RECORDING = threading.local()


@contextlib.contextmanager
def recording():
    """Collects, in order, the kernel keys of every program asked for on this thread (the
    compilation cache saves their binaries)."""
    outer = getattr(_RECORDING, "keys", None)
    _RECORDING.keys = keys = []
    try:
        yield keys
    finally:
        _RECORDING.keys = outer
        if outer is not None:
            outer.extend(k for k in keys if k not in outer)


def cache_dir() -> str:
    return str(paths.cache_dir("programs", create=True))


def build_stats() -> dict:
    return dict(STATS)
