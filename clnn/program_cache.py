"""Rendering Mako kernel templates and building OpenCL programs once per kernel key.

Every kernel lives in ``clnn/templates/<family>.cl.mako`` as one ``<%def>``; the helpers of
``common.mako`` (prefixed ``clnn_``) are prepended to every program. Templates are loaded
through one :class:`mako.lookup.TemplateLookup` with ``strict_undefined=True``, so a missing
template parameter is an error that names the template, def and parameters.

A *kernel key* is ``(family, def name, params)`` where params hold only what changes the
source (op, dtypes, activation, variant); shapes, strides and quantization parameters are
kernel arguments. Programs are memoized per (context, key); a prepare builds one program per
key (:meth:`ProgramCache.build_together`, the same source whatever the model), keeps each
program's binary under the cache root (``programs/binaries``, :meth:`ProgramCache.save_binary`)
and later builds it from there. Otherwise built binaries are cached on disk
keyed by source, options, device and driver version: by pyopencl's binary cache, or, for ICDs
that keep their own cache (PoCL: ``POCL_CACHE_DIR``, ~/.cache/pocl), by the ICD, which pyopencl
then defers to. So a second process does not rebuild a program, a fraction of a cold build
(:func:`build_stats`; clnn bench prepare, cold against warm; tests/cl/test_cl_device.py
test_second_process_does_not_rebuild; clnn/compilation_cache.py adds a per-model compilation
cache on top).

A program is built without the implementation's builtin header where the device takes that
(:func:`build_program`, :func:`short_builds`; clnn.kernels._builtin_decls declares the builtins
its source calls): PoCL 3.1 reads clang's 895 KB opencl-c.h twice in every build.

A kernel's rendered source is kept under the cache root (``programs/sources``,
:func:`kernel_parts`): a process whose kernels were all rendered before never imports Mako.

``DeviceOptions(dump_cl=dir)`` (``CLNN_DUMP_CL``) writes every program rendered alone to
``dir/<family>.<def>.<hash>.cl``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import re
import sys
import threading
import time
import warnings
from pathlib import Path

from clnn import paths

TEMPLATE_DIR = Path(__file__).parent / "templates"


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


_LOCK = threading.Lock()
#: threads building programs from their kept binaries (ProgramCache._from_binaries)
BINARY_THREADS = 4
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
BUILD_OPTIONS = ["-cl-std=CL1.2"]
#: PoCL's switch between a work-group function compiled for each local size a kernel is
#: launched with (1, its default) and one generic function per kernel (0): see
#: clnn.device.pocl_generic_work_groups
POCL_SPECIALIZATION = "POCL_WORK_GROUP_SPECIALIZATION"


def is_pocl(platform) -> bool:
    return "portable computing language" in platform.name.lower() or \
        "pocl" in platform.version.lower()


#: what every PoCL program binary holds (PoCL serializes the program's folder of its kernel
#: cache: its LLVM bitcode, then each kernel's compiled work-group functions)
_POCL_BITCODE = b"/program.bc"


def binary_usable(platform, binary: bytes) -> bool:
    """Whether a program binary of ``platform`` can be given to clCreateProgramWithBinary
    without taking the process down: PoCL 3.1 aborts (an assertion in
    pocl_binary_get_kernels_metadata) on a binary of its own format that lacks the program's
    bitcode, which it hands out when the bitcode was missing from its kernel cache as the
    binary was taken (another process clearing or filling that cache). Other platforms'
    binaries are checked by their driver, which reports a bad one as an error."""
    return bool(binary) and (not is_pocl(platform) or _POCL_BITCODE in binary)


def memoize_invokers() -> None:
    """Keep pyopencl's argument setters in memory. Every new ``cl.Kernel`` asks pyopencl's
    invoker cache for its generated argument setter, a read of an on-disk SQLite dictionary
    kept with no memory copy (~0.1 ms: ~10 ms over a model's hundred kernels, which share a
    few kernel names and so a few keys). The lookup is wrapped once per process by a memo of
    the same key: what pyopencl would read is what it read the first time (a setter takes the
    kernel as an argument, so kernels may share one). Left as it is where pyopencl has no such
    function, or once wrapped."""
    try:
        from pyopencl import invoker
    except ImportError:  # another pyopencl: nothing to keep
        return
    generate = getattr(invoker, "generate_enqueue_and_set_args", None)
    if generate is None or getattr(generate, "clnn_memo", False):
        return
    memo: dict = {}

    def memoized(*args, **kwargs):
        try:
            key = (args, tuple((k, tuple(v) if isinstance(v, list) else v)
                               for k, v in sorted(kwargs.items())))
            hash(key)
        except TypeError:  # an unhashable argument: pyopencl's own lookup
            return generate(*args, **kwargs)
        found = memo.get(key)
        if found is None:
            found = memo[key] = generate(*args, **kwargs)
        return found

    memoized.clnn_memo = True
    invoker.generate_enqueue_and_set_args = memoized


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


class ProgramCache:
    """Built programs of one OpenCL context, one per kernel key."""

    def __init__(self, context, device=None, options=None):
        """``device``: the device the programs are for, where the context holds others too
        (devices sharing a context each build for their own); ``options``: the device's
        clnn.options.DeviceOptions (``combine``: the kernels a prepare needs built as one
        program, else one program per kernel key; ``compile_helper``; ``dump_cl``;
        ``debug``), the defaults when None."""
        from clnn.options import DeviceOptions

        self.context = context
        self.options = options if options is not None else DeviceOptions()
        self.devices = [device] if device is not None and len(context.devices) > 1 else None
        self._programs: dict[tuple, object] = {}
        #: seconds this cache spent building programs (STATS["build_s"]: every cache's)
        self.build_s = 0.0
        #: id(program) -> (program, its kernel names)
        self._names: dict[int, tuple] = {}
        #: kernel key -> the file of its program's binary (:meth:`_binary_path`)
        self._binaries: dict[tuple, Path | None] = {}
        #: kernel key -> its rendered source (:meth:`source`)
        self._sources: dict[tuple, str] = {}
        self._identity: str | None = None
        #: binary file -> the future of its program, built ahead (:meth:`prefetch`)
        self._prefetched: dict[str, object] = {}
        #: the thread warming the compiler up (:meth:`warm_compiler`), None: not started
        self._warming: threading.Thread | None = None

    def source(self, family: str, name: str, params: dict) -> str:
        """The source of a kernel (:func:`render`), rendered or read from the store once per
        kernel key in this cache (a cold kernel's source is asked for by the binary check,
        the compile queue and its program)."""
        key = (family, name, freeze(params))
        src = self._sources.get(key)
        if src is None:
            src = self._sources[key] = render(family, name, params, self.options)
        return src

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
            src = self.source(family, name, params)
            t0 = time.perf_counter()
            self._binaries[key] = path = self._binary_path(src)
            prg = self._from_binary(path)
            STATS["from_binary"] += prg is not None
            try:
                # pyopencl keeps built binaries on disk keyed by source, options and device
                # (PoCL: its own kernel cache, which pyopencl defers to)
                prg = prg or build_program(self.context, src, self.devices,
                                           self.options.cache_dir)
            except cl.RuntimeError as e:
                raise RuntimeError(f"building {family}.{name} {params}: {e}") from e
            STATS["built"] += 1
            self._spent(t0)
            self._programs[key] = prg
        notify("build", 1)
        return prg


    def _binary_path(self, src: str) -> Path | None:
        """Where the binary of a program of source ``src`` is kept (``binaries`` under
        pyopencl's binary cache, :func:`cache_dir`), named by a hash of the source, the device,
        its driver and the build's settings; None where the context holds several devices and
        none was named."""
        devices = self.devices or self.context.devices
        if len(devices) != 1:
            return None
        if self._identity is None:
            from clnn.options import environ_value

            dev = devices[0]
            self._identity = (f"{dev.platform.version}|{dev.name}|{dev.driver_version}|"
                              f"{BUILD_OPTIONS}|{environ_value(POCL_SPECIALIZATION)}")
        h = hashlib.sha256(f"{self._identity}|{src}".encode()).hexdigest()[:32]
        return Path(cache_dir(self.options.cache_dir)) / "binaries" / f"{h}.bin"

    def _from_binary(self, path: Path | None):
        """The program of the binary kept at ``path`` (:meth:`save_binary`), built; None where
        there is none or it does not build (then built from source). A program made from its
        binary builds in a tenth of the time PoCL takes to find its source in its kernel cache
        (15 programs of iris_landmark: 0.06-0.10 s against 0.63-0.75 s, loaded machine), and
        its kernels come compiled."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self._build_binary(path)

    def _build_binary(self, path: Path | None):
        """:meth:`_from_binary` without its warning filter (the caller sets it: the filters
        are the process's, not a thread's)."""
        import pyopencl as cl

        if path is None:
            return None
        try:
            binary = path.read_bytes()
        except OSError:
            return None
        devices = self.devices or self.context.devices
        if not binary_usable(devices[0].platform, binary):
            LOG.warning("program binary %s is incomplete (no program bitcode): removed, the "
                        "program is built from its source", path)
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        try:
            return cl.Program(self.context, list(devices), [binary]).build(
                options=BUILD_OPTIONS, devices=self.devices)
        except (cl.Error, ValueError):  # (a binary of another driver: built from source)
            return None

    def _from_binaries(self, keys):
        """Build the programs of ``keys`` whose binaries are kept on up to
        :data:`BINARY_THREADS` threads (clBuildProgram leaves the GIL; from a binary it is
        the CPU work of PoCL reading it, 2-4 ms a program: the 15 of iris_landmark took 0.12
        s on one core, 0.08 s on two, loaded machine). A binary that does not build is left
        to :meth:`program` (built from source there)."""
        from concurrent.futures import ThreadPoolExecutor

        warm = [k for k in keys if k not in self._programs and self._binaries.get(k)]
        t0 = time.perf_counter()
        ahead = {k: self._prefetched.pop(str(self._binaries[k]), None) for k in warm}
        rest = [k for k in warm if ahead[k] is None]
        threads = min(BINARY_THREADS, os.cpu_count() or 1, len(rest))
        if threads < 2 and len(rest) == len(warm):
            return
        mine: dict = {}
        if rest:
            with warnings.catch_warnings(), ThreadPoolExecutor(max(threads, 1)) as pool:
                warnings.simplefilter("ignore")
                mine = dict(zip(rest, pool.map(
                    lambda k: self._build_binary(self._binaries[k]), rest)))
        built = [mine[k] if ahead[k] is None else ahead[k].result() for k in warm]
        with _LOCK:
            fresh = [k for k, p in zip(warm, built) if p is not None and k not in self._programs]
            for key, prg in zip(warm, built):
                if key in fresh:
                    self._programs[key] = prg
            STATS["from_binary"] += len(fresh)
            STATS["prefetched"] += sum(ahead[k] is not None for k in fresh)
            STATS["built"] += len(fresh)
            self._spent(t0)
        for _ in fresh:
            notify("build", 1)

    def warm_compiler(self) -> None:
        """On PoCL, compile and link a one-line program on a thread (:meth:`join_warm` waits
        for it): the first link of a process loads the compiler's kernel library (0.4-1.2 s,
        PoCL 3.1), which then overlaps the planning on the other core instead of delaying
        the first program (a prepare that compiles: clnn.prepared_model). Compiled and linked
        (:func:`warm_up`), not built: a build that PoCL finds in its kernel cache loads no
        library, so the warm-up of a process whose cache knows the one-liner (every process
        after the first on a machine: a model never prepared here) did nothing, and the model's
        first program loaded the library (0.3-0.4 s of its compile, clnn bench prepare
        --models, new column)."""
        if self._warming is not None or not is_pocl(self.context.devices[0].platform):
            return
        self._warming = threading.Thread(target=self._warm, daemon=True, name="clnn-compiler")
        self._warming.start()

    def _warm(self) -> None:
        """:func:`warm_up` of this cache's context, where the warm-up started as the model was
        read (clnn.device.warm_early, waited for) did not warm its device up: PoCL's kernel
        library, once loaded, serves every context of the device."""
        early = _EARLY.get("thread")
        if early is not None:
            early.join()
            if _EARLY.get("device") == _identity((self.devices or self.context.devices)[0]):
                return
        warm_up(self.context, self.devices)

    def join_warm(self) -> None:
        """Wait for :meth:`warm_compiler`'s build (none started: at once)."""
        if self._warming is not None:
            self._warming.join()

    def prefetch(self, paths) -> None:
        """Start building the programs of the binary files ``paths`` (those a prepare of the
        same model used before: :func:`keep_binary_list`) on a thread, while the plans are
        made (clBuildProgram leaves the GIL: 1.1 ms a program, 18 programs of
        pose_landmark_full, a fifth of a second process's prepare); :meth:`_from_binaries`
        takes them. A file that does not build gives None there (built as before)."""
        from concurrent.futures import ThreadPoolExecutor

        todo = [p for p in paths if p not in self._prefetched]
        threads = min(BINARY_THREADS, (os.cpu_count() or 1) - 1, len(todo))
        if threads < 1:
            return
        pool = ThreadPoolExecutor(threads, thread_name_prefix="clnn-binaries")
        for p in todo:
            self._prefetched[p] = pool.submit(self._build_binary, Path(p))
        pool.shutdown(wait=False)

    def take_prefetched(self, path: Path | None):
        """The program that :meth:`prefetch` built from the binary file ``path`` (waited
        for), or None where none was started for it or it did not build."""
        future = self._prefetched.pop(str(path), None) if path is not None else None
        return future.result() if future is not None else None

    def binary_files(self, keys) -> list[str]:
        """The binary files of kernel keys whose binaries are known here (:meth:`_kept`)."""
        return [str(self._binaries[k]) for k in dict.fromkeys(keys) if self._binaries.get(k)]

    def save_binary(self, key: tuple, program) -> bool:
        """Keep the binary of ``program`` (the program of kernel key ``key``, built by
        :meth:`program`) for later processes; its kernels are compiled as it is asked for
        (PoCL). False where it was not kept."""
        import pyopencl as cl

        path = self._binaries.get(key)
        if path is None:
            return False
        if path.exists():  # (kept by a helper, or the program came from it)
            return True
        try:
            binary = program.get_info(cl.program_info.BINARIES)[0]
        except cl.Error:
            return False
        if not binary_usable(program.get_info(cl.program_info.DEVICES)[0].platform, binary):
            return False
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(bytes(binary))
            os.replace(tmp, path)
        except OSError:
            return False
        return True

    def kernel(self, family: str, name: str, params: dict):
        """A new kernel object of a kernel key: from the program :meth:`build_together` built
        it in, else from its own program."""
        import pyopencl as cl

        key = (family, name, freeze(params))
        if key in self._programs:
            keys = getattr(_RECORDING, "keys", None)
            if keys is not None and key not in keys:
                keys.append(key)
            STATS["memo_hits"] += 1
            prg = self._programs[key]
        else:
            prg = self.program(family, name, params)
        names = self._names.get(id(prg))
        if names is None or names[0] is not prg:  # asked once per program
            names = self._names[id(prg)] = (
                prg, set(prg.get_info(cl.program_info.KERNEL_NAMES).split(";")))
        renamed = kernel_name(key)
        memoize_invokers()
        return cl.Kernel(prg, renamed if renamed in names[1] else name)

    def build_together(self, keys, spare=None):
        """Build the kernel keys not built yet as one program, each kernel renamed by its key
        (clnn/templates define one kernel name for every variant). Where that program does not
        build (two variants defining the same helper function), then one program per family
        and kernel name, and what still fails is built alone when a plan asks for it.

        On PoCL with a cold kernel cache, a model's kernels are two programs, and a helper
        process compiles the second one's kernels while this process compiles the first's
        (:class:`CompileHelper`, ``spare``: one started ahead, else one is started as the
        first program builds, unless these kernels were built here before:
        :func:`built_marker`); returns the helper (None: no helper, and a spare is
        dismissed)."""
        helper = self._build_together(keys, spare)
        if spare is not None and helper is not spare:
            spare.stop()
        return helper

    def _build_together(self, keys, spare):
        todo = [k for k in dict.fromkeys(keys) if k not in self._programs]
        if not self.options.combine:
            self._build_each(todo, spare)
            return None
        if len(todo) < 2:
            return None
        notify("build", 0, len(todo))  # a progress bar can say how many before the build
        helper = None
        if self.options.compile_helper and CompileHelper.wanted(self.context, len(todo)):
            helper, todo = self._build_halves(todo, spare)
            if not todo:
                return helper
        marker = built_marker(self.context, todo, self.options.cache_dir)
        t0 = time.perf_counter()
        if self._build_group(todo):
            if helper is None and not marker.exists() and \
                    time.perf_counter() - t0 > CompileHelper.WARM_BUILD_S:
                say_compiling(todo, False)
            touch(marker)
            return helper
        groups: list[list] = []  # at most one variant of each kernel per group
        for key in todo:
            for g in groups:
                if all(k[:2] != key[:2] for k in g):
                    g.append(key)
                    break
            else:
                groups.append([key])
        for g in groups:
            if len(g) > 1:
                self._build_group(g)
        return helper

    def _build_each(self, todo, spare):
        """One program per kernel key (the default): a kernel's program is the same whatever
        model needs it, so PoCL's kernel cache (and pyopencl's) serves it to every model
        that uses it. The kernels never compiled on this machine (no binary kept:
        :meth:`save_binary`) are compiled now, on every core where PoCL can
        (:class:`CompileHelper`: this process and helper processes take the kernels from one
        queue, the costliest first); the others come from their binaries. A kernel that does
        not build is left to the plan that asks for it (its error)."""
        cold = [k for k in todo if not self._kept(k)]
        STATS["compiled"] += len(cold)
        helpers = []
        # (by cost: one GEMM alone is worth a helper, a few element-wise kernels are not)
        cost = sum(CompileHelper.COST.get(k[1], 1) for k in cold)
        if spare is None:  # a helper started now joins late (its start-up, a second or more
            cost //= 4     # on a loaded machine): worth it for several GEMMs' work only
        if cold and self.options.compile_helper and CompileHelper.wanted(self.context, cost):
            helpers = CompileHelper.queue_helpers(self.context, len(cold), spare)
            spare = None
        if spare is not None:
            spare.stop()
        if cold:  # (a progress bar: every program built counts)
            notify("build", 0, len(todo))
            say_compiling(cold, len(helpers))
        if helpers:
            self._compile_queue(cold, helpers)
        cold_set = set(cold)
        self._from_binaries([k for k in todo if k not in cold_set])
        for key in todo:
            self._build_one(key, compile_now=key in cold_set)

    def _kept(self, key) -> bool:
        """Whether the binary of ``key``'s program is kept (:meth:`save_binary`); True where
        its source does not render (left to the plan that asks for it: its error) and where no
        binary can be kept (a context of several devices: compiled at the first launches, no
        helper started at every prepare)."""
        try:
            src = self.source(key[0], key[1], dict(key[2]))
        except RuntimeError:
            return True
        path = self._binaries[key] = self._binary_path(src)
        return path is None or path.exists()

    def _compile_queue(self, cold, helpers):
        """Compile ``cold`` (kernel keys) in this process and ``helpers`` from one queue
        (:func:`claim`: each kernel by whoever takes it first), the costliest first; returns
        once every helper is done (the kernels they compiled are then in PoCL's cache)."""
        import shutil
        import tempfile

        order = sorted(cold, key=lambda k: -CompileHelper.COST.get(k[1], 1))
        sources = []
        for family, name, frozen in order:
            try:
                sources.append(self.source(family, name, dict(frozen)))
            except RuntimeError:  # (reported by the plan that asks for it)
                sources.append("")
        claims = tempfile.mkdtemp(prefix="clnn-claims-")
        try:
            kept = [self._binaries.get(k) for k in order]
            helpers = [h for h in helpers if h.give_queue(sources, claims,
                                                          self.options.cache_dir, kept)]
            STATS["queued"] += len(order)
            mine = set()
            for i, key in enumerate(order):
                if sources[i] and claim(claims, i):
                    mine.add(i)
                    STATS["compiled_here"] += 1
                    self._build_one(key, compile_now=True)
            CompileHelper.wait_for(helpers, claims, [i for i, s in enumerate(sources)
                                                     if s and i not in mine])
        finally:
            shutil.rmtree(claims, ignore_errors=True)

    def _build_one(self, key, compile_now: bool = False) -> bool:
        """Build ``key``'s own program (where not built yet); ``compile_now``: and compile its
        kernel now (PoCL compiles a kernel at its first launch, or when the program's binaries
        are asked for); False where it does not build."""
        fresh = key not in self._programs
        try:
            prg = self.program(*key[:2], dict(key[2]))
        except RuntimeError:
            return False
        if compile_now and fresh:
            t0 = time.perf_counter()
            self.save_binary(key, prg)
            self._spent(t0)
        return True

    def _build_halves(self, todo, spare):
        """(the helper, the keys left to build as one program): ``todo`` built as two programs,
        the second one's kernels compiled by a helper process where this machine never built
        these kernels (:func:`built_marker`) and the first program took a compile's time
        (not PoCL's cache); a helper is started as the first program builds (its start-up off
        the path: a warm prepare starts none). A helper not given the job is stopped."""
        first, second = CompileHelper.split(todo)
        marker = built_marker(self.context, todo, self.options.cache_dir)
        before = marker.exists()
        if spare is None and not before:
            spare = CompileHelper.spawn(self.context)
        helper, left = None, todo
        t0 = time.perf_counter()
        if self._build_group(first):
            src = self._group_source(second, self.options.debug, self.options.cache_dir)
            # a build that fast found the program in PoCL's cache: its kernels too
            if src is not None and not before and \
                    time.perf_counter() - t0 > CompileHelper.WARM_BUILD_S:
                helper = spare
                if helper is not None and not helper.give(
                        src, [kernel_name(k) for k in second], self.options.cache_dir):
                    helper = None
                say_compiling(todo, helper is not None)
            left = second
            if self._build_group(second, src):
                touch(marker)
                left = []
        if spare is not None and spare is not helper:
            spare.stop()
        return helper, left

    @staticmethod
    def _group_source(keys, debug: bool = False, root: str | None = None) -> str | None:
        """The source of one program holding the kernels of ``keys``, each renamed by its
        key; None where a kernel does not render or is not one kernel declaration. ``root``:
        the cache root of the store of rendered sources (:func:`kernel_parts`)."""
        parts = []
        common = ""
        for family, name, frozen in keys:
            try:
                common, body = kernel_parts(family, name, dict(frozen), root, debug)
            except RuntimeError:  # reported when a plan asks for the kernel alone
                return None
            new = kernel_name((family, name, frozen))
            body, n = _kernel_decl(name).subn(rf"\g<1>{new}\g<2>", body)
            if n != 1:  # not one kernel declaration: built alone
                return None
            # a macro of one kernel must not reach the next one's source (but for ONCE_
            # guards: helper functions defined once per program)
            undefs = "".join(f"#undef {m}\n" for m in dict.fromkeys(_DEFINE.findall(body))
                             if not m.startswith("ONCE_"))
            parts.append(f"// clnn kernel {family}.{name} {frozen}\n{body}\n{undefs}")
        return f"{common}\n" + "".join(parts)

    def _build_group(self, keys, src: str | None = None) -> bool:
        import pyopencl as cl

        src = src or self._group_source(keys, self.options.debug, self.options.cache_dir)
        if src is None:
            return False
        with _LOCK:
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings():  # a failed try is not the user's concern
                    warnings.simplefilter("ignore")
                    prg = build_program(self.context, src, self.devices,
                                        self.options.cache_dir)
            except cl.RuntimeError:
                self._spent(t0)
                return False
            STATS["built"] += 1
            STATS["combined_kernels"] += len(keys)
            self._spent(t0)
            for key in keys:
                self._programs.setdefault(key, prg)
        notify("build", len(keys))
        return True

    def _spent(self, t0: float):
        dt = time.perf_counter() - t0
        STATS["build_s"] += dt
        self.build_s += dt

    def get(self, key: tuple):
        """The built program of a kernel key, or None."""
        return self._programs.get(key)

    def adopt(self, key: tuple, program):
        """Take a program built elsewhere (from a compilation cache's binary) for ``key``."""
        with _LOCK:
            self._programs.setdefault(key, program)


def built_marker(context, keys, root: str | None = None) -> Path:
    """A file named by the device, the kernels' code, the build's settings and ``keys``
    (kernel keys in a program's order), under pyopencl's binary cache (:func:`cache_dir` of
    ``root``): written once a prepare built them (:func:`touch`), so a later one knows
    them in PoCL's cache before building (no helper process to start: clnn bench prepare,
    second process)."""
    from clnn.options import environ_value

    dev = context.devices[0]
    h = hashlib.sha1(f"{dev.platform.version}|{dev.name}|{dev.driver_version}|"
                     f"{kernels_fingerprint()}|{_code_hash()}|{BUILD_OPTIONS}|"
                     f"{environ_value(POCL_SPECIALIZATION)}|{keys!r}".encode())
    return Path(cache_dir(root)) / "built" / h.hexdigest()


def model_marker(device, model) -> Path:
    """:func:`built_marker` of a whole model on ``device`` (its subgraphs, its constants'
    bytes and the device's options): touched once a prepare warmed its kernels up, read before
    planning (a prepare of a model never built here starts the helper process ahead, its
    start-up overlapping the planning; one built before starts none)."""
    h = hashlib.sha1(repr((model.main, model.referenced, device.options)).encode())
    h.update(hashlib.sha1(model.operand_values).digest())
    return built_marker(device.context, ("model", h.hexdigest()), device.options.cache_dir)


def kept_binary_list(marker: Path) -> list[str]:
    """The binary files a model's last prepare used (:func:`keep_binary_list`), [] where none
    are listed."""
    try:
        return [ln for ln in marker.read_text().splitlines() if ln.endswith(".bin")]
    except (OSError, UnicodeDecodeError):
        return []


def keep_binary_list(marker: Path, files: list[str]):
    """Touch a model's marker (:func:`model_marker`), listing the binary files its prepare
    used (a later prepare builds them ahead: :meth:`ProgramCache.prefetch`)."""
    text = "".join(f"{f}\n" for f in files)
    try:
        if marker.exists() and marker.read_text() == text:
            marker.touch()
            return
        marker.parent.mkdir(parents=True, exist_ok=True)
        tmp = marker.with_name(f"{marker.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, marker)
    except (OSError, UnicodeDecodeError):  # (a read-only cache: no list kept)
        touch(marker)


def claim(claims: str, i: int) -> bool:
    """Take job ``i`` of the queue in directory ``claims`` (a file made only where none is:
    exactly one process takes each job)."""
    try:
        os.close(os.open(os.path.join(claims, str(i)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    except OSError:  # (an unwritable queue: every process compiles what it needs)
        return True
    return True


def touch(path: Path):
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    except OSError:  # (a read-only cache: a helper is started, as on a cold one)
        pass


def _code_hash() -> str:
    """This module's code (it writes a combined program's source)."""
    if not _CODE:
        _CODE.append(hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16])
    return _CODE[0]


_CODE: list = []


def say_compiling(keys, helper: int):
    """Log what a prepare compiles, once its first program took a compile's time (not PoCL's
    cache): the kernels' count and families, before the seconds of compiling them (their
    first launches in the warm-up, clnn.prepared_model.ClPreparedModel.warm_up)."""
    if not LOG.isEnabledFor(logging.INFO):
        return
    kinds: dict[str, int] = {}
    for family, name, _ in keys:
        kinds[f"{family}.{name}"] = kinds.get(f"{family}.{name}", 0) + 1
    what = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in
                     sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    LOG.info("compiling %d OpenCL kernels (%s)%s; a later prepare of the same kernels "
             "takes them from the kernel cache", len(keys), what,
             f" in {int(helper) + 1} processes" if helper else "")


#: listeners of the compile work of a prepare: callables ``(stage, done, total)``, stage "build"
#: (a program built; total None: programs are built as the plans ask for them) or "warm_up"
#: (done of total first kernel launches, clnn.prepared_model.ClPreparedModel.warm_up). The
#: tools draw a progress bar from them (clnn/prepare_cached.py); none by default.
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


#: the program :meth:`ProgramCache.warm_compiler` builds
_WARM_SOURCE = "__kernel void clnn_warm(__global int* x) { x[0] = 1; }"


#: options of a build without the implementation's builtin header (clnn.kernels._builtin_decls:
#: clang's opencl-c.h, which PoCL includes in every program, skipped by its include guard)
SHORT_OPTIONS = [*BUILD_OPTIONS, "-D_OPENCL_H_"]
#: programs built without the builtin header where the device takes them (False: never)
SHORT_BUILDS = True
#: device identity -> whether it builds programs without the builtin header (short_builds)
_SHORT: dict[str, bool] = {}
_SHORT_LOCK = threading.Lock()


def build_program(context, src: str, devices=None, cache_root: str | None = None):
    """The program of ``src`` built for ``devices`` (None: the context's; ``cache_root``:
    the device's ``DeviceOptions.cache_dir``, pyopencl's binary cache under it): without the
    builtin header, its builtins declared by clnn.kernels._builtin_decls, where the device
    takes such programs (:func:`short_builds`) and the declarations cover every builtin
    ``src`` calls (70 ms less front end a program on PoCL 3.1); else, and where that build
    fails, as usual (its errors raised)."""
    import pyopencl as cl

    from clnn.kernels import _builtin_decls as builtin_decls

    where = cache_dir(cache_root)
    if SHORT_BUILDS and builtin_decls.covers(src) and short_builds(context, devices):
        try:
            prg = cl.Program(context, builtin_decls.declarations(src) + src).build(
                options=SHORT_OPTIONS, devices=devices, cache_dir=where)
            STATS["short_built"] += 1
            return prg
        except cl.RuntimeError:  # (built the usual way: the errors, if any, are its)
            pass
    return cl.Program(context, src).build(options=BUILD_OPTIONS, devices=devices,
                                          cache_dir=where)


def _identity(dev) -> str:
    return f"{dev.platform.version}|{dev.name}|{dev.driver_version}"


def short_builds(context, devices=None) -> bool:
    """Whether the device (the first of ``devices``, else of the context) builds programs
    without its builtin header, found once per process and device: the PROBE of
    clnn.kernels._builtin_decls built so, which builds only where the header is left out (it
    defines a function the header declares) and the declarations are taken."""
    import pyopencl as cl

    from clnn.kernels import _builtin_decls as builtin_decls

    ident = _identity((devices or context.devices)[0])
    with _SHORT_LOCK:
        if ident not in _SHORT:
            src = builtin_decls.declarations(builtin_decls.PROBE) + builtin_decls.PROBE
            try:
                cl.Program(context, src).build(options=SHORT_OPTIONS, devices=devices)
                _SHORT[ident] = True
            except cl.Error:
                _SHORT[ident] = False
        return _SHORT[ident]


def warm_up(context, devices=None) -> None:
    """Get the compiler of ``context`` (``devices``: those to build for, None: all) to where
    it compiles a program at its cost, by :func:`compile_and_link` (PoCL loads its kernel
    library at every link, where a build that finds the program in PoCL's kernel cache loads
    none): the PROBE of clnn.kernels._builtin_decls without the builtin header, which also
    says whether the device takes such programs (:func:`short_builds`: it compiles only
    where the header is left out and the declarations are taken), else :data:`_WARM_SOURCE`
    as usual; built where neither can be linked so. Errors ignored (the real builds report
    theirs)."""
    import pyopencl as cl

    from clnn.kernels import _builtin_decls as builtin_decls

    done = "unavailable"
    with contextlib.suppress(Exception):  # (an OpenCL library without these functions)
        probe = builtin_decls.declarations(builtin_decls.PROBE) + builtin_decls.PROBE
        done = compile_and_link(context, probe, devices, SHORT_OPTIONS)
        if done != "unavailable":
            dev = (devices or context.devices)[0]
            with _SHORT_LOCK:
                _SHORT.setdefault(_identity(dev), done != "failed")
        if done == "failed":
            done = compile_and_link(context, _WARM_SOURCE, devices)
    with contextlib.suppress(Exception):
        if done != "linked":
            cl.Program(context, _WARM_SOURCE).build(options=BUILD_OPTIONS, devices=devices)
        short_builds(context, devices)  # (where the probe said nothing)


#: the warm-up started as a model is read (clnn.device.warm_early): "thread", and "device",
#: the identity (:func:`_identity`) of the device it warmed up, once done
_EARLY: dict = {}


def compile_and_link(context, source: str, devices=None, options=None) -> str:
    """clCompileProgram (``options``: :data:`BUILD_OPTIONS` where None) then clLinkProgram of
    ``source`` for ``devices`` (None: the context's), the programs released; called through
    ctypes, which leaves the GIL while they run (pyopencl's link_program holds it: the
    planning on the main thread would wait 0.4 s for PoCL's kernel library to load).
    "linked"; "compiled" (not linked); "failed" (it did not compile); "unavailable" (the
    process's OpenCL library not found, or no program made)."""
    import ctypes

    lib = _opencl_library()
    if lib is None:
        return "unavailable"
    vp, i32 = ctypes.c_void_p, ctypes.c_int32
    lib.clCreateProgramWithSource.restype = vp
    lib.clCreateProgramWithSource.argtypes = [vp, ctypes.c_uint32,
                                              ctypes.POINTER(ctypes.c_char_p), vp,
                                              ctypes.POINTER(i32)]
    lib.clCompileProgram.restype = i32
    lib.clCompileProgram.argtypes = [vp, ctypes.c_uint32, vp, ctypes.c_char_p,
                                     ctypes.c_uint32, vp, vp, vp, vp]
    lib.clLinkProgram.restype = vp
    lib.clLinkProgram.argtypes = [vp, ctypes.c_uint32, vp, ctypes.c_char_p, ctypes.c_uint32,
                                  vp, vp, vp, ctypes.POINTER(i32)]
    lib.clReleaseProgram.argtypes = [vp]
    n = len(devices or ())
    devs = (vp * n)(*[d.int_ptr for d in devices]) if n else None
    err = i32(0)
    text = (ctypes.c_char_p * 1)(source.encode())
    prg = lib.clCreateProgramWithSource(context.int_ptr, 1, text, None, ctypes.byref(err))
    if not prg or err.value:
        return "unavailable"
    linked, done = None, "failed"
    try:
        opts = " ".join(BUILD_OPTIONS if options is None else options).encode()
        if lib.clCompileProgram(prg, n, devs, opts, 0, None, None, None, None) == 0:
            done = "compiled"
            linked = lib.clLinkProgram(context.int_ptr, n, devs, b"", 1, (vp * 1)(prg), None,
                                       None, ctypes.byref(err))
    finally:
        lib.clReleaseProgram(prg)
        if linked:
            lib.clReleaseProgram(linked)
    return "linked" if linked and err.value == 0 else done


@functools.cache
def _opencl_library():
    """The OpenCL library pyopencl loaded (ctypes), found among the process's mapped files
    (Linux), else the system's; None where there is none."""
    import ctypes
    import ctypes.util

    try:
        with open("/proc/self/maps") as f:
            found = [ln.split()[-1] for ln in f if "libOpenCL" in ln and "/" in ln]
    except OSError:
        found = []
    for name in [*dict.fromkeys(found), ctypes.util.find_library("OpenCL")]:
        if name:
            with contextlib.suppress(OSError):
                return ctypes.CDLL(name)
    return None


def record(key: tuple) -> None:
    """Add ``key`` to the programs recorded on this thread (:func:`recording`), if any."""
    keys = getattr(_RECORDING, "keys", None)
    if keys is not None and key not in keys:
        keys.append(key)


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


def _kernel_decl(name: str):
    return re.compile(rf"(__kernel\b[^;{{}}]*?\bvoid\s+){re.escape(name)}(\s*\()")


_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)", re.M)


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
        here = Path(__file__).parent
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


# what the helper process runs: no clnn import (nothing but pyopencl on its path of work).
# It starts PoCL's compiler on a program of its own first (its start-up off the job's path),
# then waits for its job: a program to build and compile; none (its input closed): it exits.
_HELPER_CODE = """
import json, os, sys
import pyopencl as cl
where = json.loads(sys.argv[1])
plat = next(p for p in cl.get_platforms() if p.name == where["platform"])
dev = next(d for d in plat.get_devices() if d.name == where["device"])
ctx = cl.Context([dev])
cl.Program(ctx, "__kernel void clnn_helper_start(__global int* x) { x[0] = 1; }").build()
text = sys.stdin.read()
job = json.loads(text) if text else {}
if "source" in job:
    prg = cl.Program(ctx, job["source"]).build(options=job["options"],
                                               cache_dir=job["cache_dir"])
    prg.get_info(cl.program_info.BINARIES)
for i, src in enumerate(job.get("sources", ())):
    try:  # the queue: a kernel another process took is skipped
        os.close(os.open(os.path.join(job["claims"], str(i)),
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        continue
    try:
        prg = cl.Program(ctx, src).build(options=job["options"], cache_dir=job["cache_dir"])
        binary = prg.get_info(cl.program_info.BINARIES)[0]
        path = (job.get("binaries") or [None] * (i + 1))[i]
        if path and binary:  # kept as the process that needs it would (save_binary)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open("%s.%d.tmp" % (path, os.getpid()), "wb") as f:
                f.write(bytes(binary))
            os.replace("%s.%d.tmp" % (path, os.getpid()), path)
    except Exception:  # the process that needs it reports it
        pass
    open(os.path.join(job["claims"], "%d.done" % i), "w").close()
"""


class CompileHelper:
    """A second process compiling kernels into PoCL's kernel cache while this process compiles
    others. With one program per kernel key (the default), this process and a helper per other
    core take the kernels from one queue (:meth:`give_queue`, :func:`claim`, :meth:`wait_for`);
    with ``combine``, as follows. PoCL compiles a kernel (its work-group function, the bulk of a
    cold prepare: clnn bench prepare) at its first launch, or every kernel of a program when the
    program's binaries are asked for; one process compiles one kernel at a time (threads
    measured no faster), so on a cold cache a model's kernels are split in two programs: this
    process builds both and warms the first up while the helper builds the second and asks for
    its binaries, which compiles its kernels in their order in the source. The warm-up then
    launches the second program's kernels in the opposite order: those the helper compiled come
    from PoCL's cache, the others this process compiles, so the two meet wherever the costs put
    them (clnn.prepared_model.ClPreparedModel.warm_up), and the helper is stopped. Only with
    PoCL's generic work-group functions (clnn.device.pocl_generic_work_groups), which the
    binaries hold; ``DeviceOptions(compile_helper=False)`` turns it off. A helper that fails
    costs nothing but its start: the warm-up compiles what it left."""

    #: kernels to build below which one process does it all
    MIN_KERNELS = 8
    #: a first program built faster than this came from PoCL's cache (a build from the cache
    #: takes a fraction of a compile; the split between the two: clnn bench prepare, cold
    #: against warm)
    WARM_BUILD_S = 0.06
    #: estimated compile cost per kernel def (the rest: 1), to split the kernels in halves
    #: and order the compile queue (the rule: a GEMM or direct convolution costs most, a
    #: depthwise one about 60% of that, im2col half, the pooling, resize and element-wise
    #: kernels least; CPU seconds to build and compile each of four MediaPipe models' kernels
    #: alone (PoCL 3.1, AVX-512): GEMM 0.36-0.63, conv_tile 0.42-0.50, depthwise_slide
    #: 0.22-0.40, im2col_pack 0.20-0.34, conv_cvec 0.15-0.24, the others 0.10-0.20)
    COST = {"gemm": 8, "conv_tile": 7, "conv_cvec": 3, "depthwise_tile": 5, "depthwise_sweep": 5,
            "depthwise_slide": 5, "depthwise_slide_rows": 6, "depthwise": 5, "im2col_pack": 4}

    def __init__(self, proc, names: list):
        self.proc = proc
        self._take(names)

    def _take(self, names):
        #: the kernel names (clnn.program_cache.kernel_name) the helper compiles, in its order
        self.names = list(names)
        self._rank = {n: len(self.names) - i for i, n in enumerate(self.names)}

    @classmethod
    def wanted(cls, context, n_kernels: int) -> bool:
        """Whether a helper may compile half of ``n_kernels`` on this context (callers check
        the device's ``compile_helper`` option first)."""
        if n_kernels < cls.MIN_KERNELS:
            return False
        from clnn.options import environ_value

        return is_pocl(context.devices[0].platform) and \
            environ_value(POCL_SPECIALIZATION) == "0"

    @classmethod
    def split(cls, keys: list) -> tuple[list, list]:
        """(this process's keys, the helper's), halves by estimated cost."""
        load = [0, 0]
        mine, helper = [], []
        for key in sorted(keys, key=lambda k: -cls.COST.get(k[1], 1)):
            side = 0 if load[0] <= load[1] else 1
            load[side] += cls.COST.get(key[1], 1)
            (mine if side == 0 else helper).append(key)
        order = {k: i for i, k in enumerate(keys)}
        return sorted(mine, key=order.get), sorted(helper, key=order.get)

    @classmethod
    def spawn(cls, context, nice: int = 0):
        """A helper started ahead of its job (its start-up overlaps the planning), or None
        where it cannot start; :meth:`give` hands it the job, :meth:`stop` dismisses it.
        ``nice``: the helper's niceness increment (a background compile: executions first)."""
        import json
        import subprocess
        import sys

        dev = context.devices[0]
        where = json.dumps({"platform": dev.platform.name, "device": dev.name})
        try:
            proc = subprocess.Popen([sys.executable, "-c", _HELPER_CODE, where],
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL,
                                    preexec_fn=(lambda: os.nice(nice)) if nice else None)
        except OSError:
            return None
        return cls(proc, [])

    def give(self, source: str, names: list, cache_root: str | None = None) -> bool:
        """Hand the helper its program; False where it is gone. ``cache_root``: the device's
        ``DeviceOptions.cache_dir`` (pyopencl's binaries go under it, :func:`cache_dir`)."""
        job = {"source": source, "options": BUILD_OPTIONS, "cache_dir": cache_dir(cache_root)}
        if not self._send(job):
            return False
        self._take(names)
        return True

    def _send(self, job: dict) -> bool:
        """Write ``job`` to the helper's input from a thread, False where the helper is gone:
        the helper reads it once its compiler started, and a job larger than the pipe holds
        (a chain's source, a queue of sources) kept the writer waiting until then (0.6-0.9 s
        of an execution that asked for a chain, pose_landmark_full, loaded machine)."""
        import json

        if self.proc.poll() is not None:
            return False
        data = json.dumps(job).encode()

        def write():
            with contextlib.suppress(OSError, ValueError):  # (a helper stopped first)
                self.proc.stdin.write(data)
                self.proc.stdin.close()

        threading.Thread(target=write, daemon=True).start()
        return True

    @classmethod
    def queue_helpers(cls, context, n_kernels: int, spare=None) -> list:
        """Helpers for a queue of ``n_kernels`` kernels: one per core but this process's (at
        most one per two kernels), ``spare`` (one started ahead) the first of them."""
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # (not Linux)
            cores = os.cpu_count() or 1
        n = min(cores - 1, n_kernels // 2)
        helpers = [spare] if spare is not None else []
        while len(helpers) > n:
            helpers.pop().stop()
        while len(helpers) < n:
            h = cls.spawn(context)
            if h is None:
                break
            helpers.append(h)
        return helpers

    def give_queue(self, sources: list, claims: str, cache_root: str | None = None,
                   binaries: list | None = None) -> bool:
        """Hand the helper the queue of kernel sources (claims: its directory, :func:`claim`;
        ``binaries``: where each program's binary is kept, ProgramCache.save_binary, or None);
        False where it is gone."""
        job = {"sources": sources, "claims": claims, "options": BUILD_OPTIONS,
               "cache_dir": cache_dir(cache_root),
               "binaries": [str(p) if p else None for p in binaries or ()]}
        if not self._send(job):
            return False
        self.names = ["queue"]  # (a job: stop() does not close its input again)
        return True

    @staticmethod
    def wait_for(helpers: list, claims: str, theirs: list, timeout: float = 600.0):
        """Until the helpers compiled the jobs ``theirs`` of the queue in ``claims`` (each
        marks one done), then stop them (one still starting took none: not waited for). A
        helper gone first leaves its kernels to this process (compiled at their launch)."""
        t_end = time.monotonic() + timeout
        left = [os.path.join(claims, f"{i}.done") for i in theirs]
        while left and time.monotonic() < t_end and \
                any(h.proc.poll() is None for h in helpers):
            left = [p for p in left if not os.path.exists(p)]
            if left:
                time.sleep(0.005)
        for h in helpers:
            h.stop()

    def order(self, name: str) -> int:
        """Where this process launches kernel ``name`` in the warm-up: its own kernels first
        (-1), then the helper's from its last one back."""
        return self._rank.get(name, -1)

    def stop(self):
        """The warm-up is done (whatever the helper still compiles is compiled already), or
        the helper has no job."""
        if not self.names:  # no job (a warm cache): stopped at once, not left starting up
            with contextlib.suppress(OSError, ValueError):  # on the other core
                self.proc.stdin.close()
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 (a helper that ignores SIGTERM)
            self.proc.kill()
            self.proc.wait()
