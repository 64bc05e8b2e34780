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

The modules: :mod:`.rendering` (templates rendered, the store of rendered sources, the kernels'
fingerprint), :mod:`.compiler` (a program built, the compiler warmed up), :mod:`.cache`
(:class:`ProgramCache`), :mod:`.together` (kernel keys built together, the markers of kernels
built before) and :mod:`.helper` (:class:`CompileHelper`, the compile helper process).
"""

from clnn.program_cache.cache import (
    BINARY_THREADS,
    ProgramCache,
    record,
    recording,
)
from clnn.program_cache.compiler import (
    BUILD_OPTIONS,
    SHORT_OPTIONS,
    binary_usable,
    build_program,
    compile_and_link,
    is_pocl,
    memoize_invokers,
    short_builds,
    warm_up,
)
from clnn.program_cache.compiler import (  # (not in __all__: a name, no environment variable)
    POCL_SPECIALIZATION as POCL_SPECIALIZATION,
)
from clnn.program_cache.helper import (
    CompileHelper,
)
from clnn.program_cache.rendering import (
    INSTALLED_TEMPLATES,
    LOG,
    STATS,
    TEMPLATE_DIR,
    build_stats,
    cache_dir,
    compile_templates,
    freeze,
    kernel_name,
    kernel_parts,
    kernels_fingerprint,
    remember_source,
    render,
    source_text,
    stored,
    template_modules,
    templates_fingerprint,
)
from clnn.program_cache.together import (
    built_marker,
    claim,
    keep_binary_list,
    kept_binary_list,
    listeners,
    model_marker,
    notify,
    say_compiling,
    touch,
)

__all__ = ["BINARY_THREADS", "BUILD_OPTIONS", "CompileHelper", "INSTALLED_TEMPLATES", "LOG",
           "ProgramCache", "SHORT_OPTIONS", "STATS", "TEMPLATE_DIR", "binary_usable",
           "build_program", "build_stats", "built_marker", "cache_dir", "claim",
           "compile_and_link", "compile_templates", "freeze", "is_pocl", "keep_binary_list",
           "kept_binary_list", "kernel_name", "kernel_parts", "kernels_fingerprint", "listeners",
           "memoize_invokers", "model_marker", "notify", "record", "recording", "remember_source",
           "render", "say_compiling", "short_builds", "source_text", "stored", "template_modules",
           "templates_fingerprint", "touch", "warm_up"]
