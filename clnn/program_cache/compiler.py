"""Building a program, the compiler warmed up: programs built without the builtin header
where the device takes them, PoCL's kernel library loaded ahead (clnn.program_cache)."""

from __future__ import annotations

import contextlib
import functools
import threading

from clnn.program_cache.rendering import STATS, cache_dir

#: builds of programs, one at a time (ProgramCache)
LOCK = threading.Lock()
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


def identity(dev) -> str:
    return f"{dev.platform.version}|{dev.name}|{dev.driver_version}"


def short_builds(context, devices=None) -> bool:
    """Whether the device (the first of ``devices``, else of the context) builds programs
    without its builtin header, found once per process and device: the PROBE of
    clnn.kernels._builtin_decls built so, which builds only where the header is left out (it
    defines a function the header declares) and the declarations are taken."""
    import pyopencl as cl

    from clnn.kernels import _builtin_decls as builtin_decls

    ident = identity((devices or context.devices)[0])
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
                _SHORT.setdefault(identity(dev), done != "failed")
        if done == "failed":
            done = compile_and_link(context, _WARM_SOURCE, devices)
    with contextlib.suppress(Exception):
        if done != "linked":
            cl.Program(context, _WARM_SOURCE).build(options=BUILD_OPTIONS, devices=devices)
        short_builds(context, devices)  # (where the probe said nothing)


#: the warm-up started as a model is read (clnn.device.warm_early): "thread", and "device",
#: the identity (:func:`_identity`) of the device it warmed up, once done
EARLY: dict = {}


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
