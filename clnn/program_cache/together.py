"""Kernel keys built together: as one program (a helper process compiling its second half), or
as one program each from one compile queue; the markers of kernels built before
(clnn.program_cache)."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
import warnings
from pathlib import Path

from clnn.program_cache.compiler import BUILD_OPTIONS, LOCK, POCL_SPECIALIZATION, build_program
from clnn.program_cache.helper import CompileHelper
from clnn.program_cache.rendering import (
    DEFINE,
    LOG,
    STATS,
    cache_dir,
    kernel_decl,
    kernel_name,
    kernel_parts,
    kernels_fingerprint,
)


class BuildTogether:
    """The builds of many kernel keys at once of :class:`clnn.program_cache.ProgramCache`."""

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
            body, n = kernel_decl(name).subn(rf"\g<1>{new}\g<2>", body)
            if n != 1:  # not one kernel declaration: built alone
                return None
            # a macro of one kernel must not reach the next one's source (but for ONCE_
            # guards: helper functions defined once per program)
            undefs = "".join(f"#undef {m}\n" for m in dict.fromkeys(DEFINE.findall(body))
                             if not m.startswith("ONCE_"))
            parts.append(f"// clnn kernel {family}.{name} {frozen}\n{body}\n{undefs}")
        return f"{common}\n" + "".join(parts)

    def _build_group(self, keys, src: str | None = None) -> bool:
        import pyopencl as cl

        src = src or self._group_source(keys, self.options.debug, self.options.cache_dir)
        if src is None:
            return False
        with LOCK:
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


def built_marker(context, keys, root: str | None = None) -> Path:
    """A file named by the device, the kernels' code, the build's settings and ``keys``
    (kernel keys in a program's order), under pyopencl's binary cache (:func:`cache_dir` of
    ``root``): written once a prepare built them (:func:`touch`), so a later one knows
    them in PoCL's cache before building (no helper process to start: clnn bench prepare,
    second process)."""
    from clnn.options import environ_value

    dev = context.devices[0]
    h = hashlib.sha1(f"{dev.platform.version}|{dev.name}|{dev.driver_version}|"
                     f"{kernels_fingerprint()}|{code_hash()}|{BUILD_OPTIONS}|"
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


def code_hash() -> str:
    """The code of every module of clnn.program_cache (it writes a combined program's
    source)."""
    if not _CODE:
        h = hashlib.sha256()
        for path in sorted(Path(__file__).parent.glob("*.py")):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        _CODE.append(h.hexdigest()[:16])
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
