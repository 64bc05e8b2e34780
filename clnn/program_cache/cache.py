"""The program cache: built programs of one OpenCL context, one per kernel key, from their
kept binaries or their sources (clnn.program_cache)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
import warnings
from pathlib import Path

from clnn import codegen
from clnn.program_cache import compiler
from clnn.program_cache.compiler import (
    BUILD_OPTIONS,
    LOCK,
    POCL_SPECIALIZATION,
    binary_usable,
    build_program,
    is_pocl,
    memoize_invokers,
)
from clnn.program_cache.rendering import LOG, STATS, cache_dir, freeze, kernel_name, render
from clnn.program_cache.together import BuildTogether, notify

#: threads building programs from their kept binaries (ProgramCache._from_binaries)
BINARY_THREADS = 4


class ProgramCache(BuildTogether):
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
        with LOCK:
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
        with LOCK:
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
        early = compiler.EARLY.get("thread")
        if early is not None:
            early.join()
            device = (self.devices or self.context.devices)[0]
            if compiler.EARLY.get("device") == compiler.identity(device):
                return
        compiler.warm_up(self.context, self.devices)

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
        codegen.generate_code(program, compiler._opencl_library())  # (out of the GIL)
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

    def _spent(self, t0: float):
        dt = time.perf_counter() - t0
        STATS["build_s"] += dt
        self.build_s += dt

    def get(self, key: tuple):
        """The built program of a kernel key, or None."""
        return self._programs.get(key)

    def adopt(self, key: tuple, program):
        """Take a program built elsewhere (from a compilation cache's binary) for ``key``."""
        with LOCK:
            self._programs.setdefault(key, program)


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


def record(key: tuple) -> None:
    """Add ``key`` to the programs recorded on this thread (:func:`recording`), if any."""
    keys = getattr(_RECORDING, "keys", None)
    if keys is not None and key not in keys:
        keys.append(key)
