"""The OpenCL device's compilation cache: what prepare_model saves so that
prepare_model_from_cache, in a new process, skips rendering and building.

One model-cache file and one data-cache file (the file format, digests and token checks are
hal.compilation_cache's):

- model cache: ("opencl", device identity, the model, which operations run on OpenCL (the
  support report, so the restore skips the support checks; the model is validated again,
  since a file is input like any other), the kernel keys of
  the plans made at prepare);
- data cache: [(kernel key, program binary)] for those keys; keys whose kernels were built in
  one program (ProgramCache.build_together) follow each other, the first with the binary and
  the others with an empty one. A chain's program (clnn/chain.py, built at prepare) is one
  of them, under ("chain", "clnn_chain", hash of its source); the kernels its chains run,
  whose own programs the prepare did not build, come as (("source", *kernel key), their
  rendered source), from which the restore makes the chains' parts without rendering.

The prepared model has run its plans once at prepare (ClPreparedModel.warm_up), so the
binaries saved carry the kernels PoCL compiled for their work sizes. A restore builds every
program from its binary (no Mako rendering, no OpenCL C compiler), hands them to the device's
ProgramCache, and makes the prepared model, whose plans then find
every program they ask for. A cache saved by another device, driver or clnn version, or by
other kernel code (a hash of the templates and of clnn/kernels), or one that fails its digest,
is GENERAL_FAILURE; nothing of it is used.
"""

from __future__ import annotations

from clnn.prepared_model import ClPreparedModel
from clnn.program_cache import BUILD_OPTIONS, binary_usable, recording
from hal import __version__
from hal import compilation_cache as hal_cache
from hal.errors import GeneralFailure, HalError
from hal.types import Model
from hal.validation import validate_model

#: (model cache files, data cache files)
FILES_NEEDED = (1, 1)


def identity(device) -> str:
    import pyopencl as cl

    from clnn.program_cache import kernels_fingerprint

    return (f"{device.get_version_string()}; pyopencl {cl.VERSION_TEXT}; clnn {__version__}; "
            f"kernels {kernels_fingerprint()}; nhwc {getattr(device, 'nhwc', False)}")


def _plain(obj):
    """Kernel keys with NumPy scalars turned into Python ones (a cache payload holds plain
    data only, hal/cache_payload.py)."""
    if isinstance(obj, (tuple, list)):
        return type(obj)(_plain(x) for x in obj)
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        return obj.item()
    return obj


def requested(device, model_cache, data_cache, token) -> bool:
    return hal_cache.cache_requested(FILES_NEEDED, model_cache, data_cache, token)


def prepare_and_save(device, model, supported, model_cache, data_cache, token, marker=None):
    """Prepare (recording the kernel keys the plans use), then save the cache. A failure to
    save leaves the prepared model as it is (the HAL lets a driver skip saving). ``marker``:
    as ClPreparedModel takes it."""
    with recording() as keys:
        prepared = ClPreparedModel(device, model, supported, marker=marker)
    save(device, prepared, keys, supported, model_cache, data_cache, token)
    return prepared


def save(device, prepared, keys, supported, model_cache, data_cache, token):
    """Save the cache of a prepared model whose plans asked for the kernel ``keys``
    (program_cache.recording); a failure to save is ignored. Taking the binaries makes PoCL
    compile every kernel once more for any work-group size (seconds: clnn/prepare_cached.py
    saves after the first result)."""
    import pyopencl as cl

    try:
        binaries = []
        by_program: dict[int, list] = {}  # keys built in one program are saved together
        programs = {}
        for key in keys:
            prg = device.programs.get(key)
            if prg is not None:
                by_program.setdefault(id(prg), []).append(key)
                programs[id(prg)] = prg
        for pid, group in by_program.items():
            binary = bytes(programs[pid].get_info(cl.program_info.BINARIES)[0])
            if not binary_usable(device.cl_device.platform, binary):
                raise OSError("an incomplete program binary")  # (a later prepare saves)
            binaries += [(_plain(k), binary if n == 0 else b"") for n, k in enumerate(group)]
        binaries += _sources(device, keys)
        entry = ("opencl", identity(device), prepared.model,
                 [bool(s) for s in supported], [k for k, _ in binaries])
        hal_cache.save(model_cache, data_cache, token, [hal_cache.dumps(entry)],
                       [hal_cache.dumps(binaries)])
    except (OSError, cl.Error, TypeError):  # TypeError: a key the payload cannot hold
        pass
    prepared.cached_programs = len(keys)


def _sources(device, keys) -> list:
    """(("source", kernel key), its rendered source's stored text) of the kernels the chains
    run (recorded as ``("source", *key)``: clnn.execution.Chained.build_chains): a restore
    makes their chains' parts without rendering (program_cache.remember_source)."""
    from clnn.program_cache import source_text

    return [(_plain(key), source_text(key[1:], device.options.cache_dir).encode())
            for key in keys if isinstance(key, tuple) and len(key) == 4 and key[0] == "source"]


def _restore_source(key, text: bytes) -> bool:
    """Keep a restored kernel source (:func:`_sources`); False where ``key`` is not one."""
    from clnn.program_cache import remember_source

    if not (isinstance(key, tuple) and len(key) == 4 and key[0] == "source"):
        return False
    try:
        remember_source(key[1:], text.decode())
    except UnicodeDecodeError:
        raise GeneralFailure("a cached kernel source is not text") from None
    return True


def _hashable(key) -> bool:
    try:
        hash(key)
    except TypeError:  # a list in a forged key
        return False
    return True


def restore(device, model_cache, data_cache, token):
    import pyopencl as cl


    (model_payload,), (data_payload,) = hal_cache.load(model_cache, data_cache, token,
                                                       FILES_NEEDED)
    entry = hal_cache.loads(model_payload)
    if not (isinstance(entry, tuple) and len(entry) == 5 and entry[0] == "opencl"
            and isinstance(entry[2], Model)):
        raise GeneralFailure("the model cache does not hold an OpenCL prepared model")
    _, ident, model, supported, keys = entry
    if ident != identity(device):
        raise GeneralFailure(f"the cache was saved by {ident!r}, not by {identity(device)!r}")
    if not (isinstance(ident, str) and isinstance(supported, list)
            and all(isinstance(s, bool) for s in supported) and isinstance(keys, list)):
        raise GeneralFailure("the model cache entry is malformed")
    if len(supported) != len(model.main.operations):
        raise GeneralFailure("the cached support report does not match the cached model")
    binaries = hal_cache.loads(data_payload)
    if not (isinstance(binaries, list) and all(
            isinstance(b, tuple) and len(b) == 2 and _hashable(b[0]) and isinstance(b[1], bytes)
            for b in binaries)):
        raise GeneralFailure("the data cache does not hold (kernel key, program binary) pairs")
    if [k for k, _ in binaries] != keys:
        raise GeneralFailure("the data cache does not hold the programs the model cache names")
    prg = group = None
    for n, (key, binary) in enumerate(binaries):
        if _restore_source(key, binary):
            continue
        if binary:  # a program's first key; an empty binary: the program of the entry before
            prg, group = None, binary
        elif n == 0:
            raise GeneralFailure("the data cache names a program before any binary")
        if device.programs.get(key) is not None:
            continue
        if prg is None:
            if not binary_usable(device.cl_device.platform, group):
                raise GeneralFailure("a cached program binary is incomplete (no program "
                                     "bitcode)")
            try:
                prg = cl.Program(device.context, [device.cl_device], [group]).build(
                    options=BUILD_OPTIONS)
            except (cl.Error, cl.RuntimeError) as e:
                raise GeneralFailure(f"a cached program binary does not build: {e}") from None
        device.programs.adopt(key, prg)
    try:  # a forged entry with a valid digest must not reach the planner unchecked
        validate_model(model)
        prepared = ClPreparedModel(device, model, supported, compiled=True)
    except HalError as e:
        raise GeneralFailure(f"the cached model does not prepare: {e.reason}") from None
    prepared.cached_programs = len(binaries)
    return prepared
