"""Preparing through the compilation cache, as ``clnn.load``, the NNAPI compilation, `clnn run`
and `clnn bench models` do by default (the time to a model's first result as a user sees it),
and the progress bar of program builds.

The cache is the HAL's (``prepare_model`` with cache files and a token, clnn/compilation_cache.py
for the OpenCL device): files under ``compilation`` of the device's cache directory
(``DeviceOptions.cache_dir``, clnn.paths) named by a hash of
the model file's bytes and of the device's identity (its version string names the clnn version,
the platform, the device and the driver), which is the token too (shared with clnn.load). A cache
that fails the HAL's checks is prepared again and saved over.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
from pathlib import Path

from hal.errors import HalError


def cache_key(model_bytes: bytes, device) -> bytes:
    """32 bytes: the model (its .tflite bytes, or a serialized hal Model) and the device's
    identity (its class, version string, fallback and layout settings)."""
    h = hashlib.sha256()
    h.update(model_bytes)
    ident = (f"{type(device).__module__}.{type(device).__qualname__}; "
             f"{device.get_version_string()}; fallback {getattr(device, 'fallback', None)}; "
             f"nhwc {getattr(device, 'nhwc', None)}")
    h.update(b"\0" + ident.encode())
    return h.digest()


def prepare_cached(device, hal_model, key: bytes | None, directory, defer_save=None):
    """(prepared, from_cache). The key is the token too: a file saved for another model or
    device fails the HAL's checks and is prepared again. ``defer_save``: a list that receives,
    on a miss on the OpenCL device, a callable saving the cache (instead of saving at prepare:
    taking the program binaries compiles every kernel again, seconds a first result need not
    wait for)."""
    n_model, n_data = device.get_number_of_cache_files_needed()
    if key is None or n_model + n_data == 0:
        return device.prepare_model(hal_model), False
    from clnn import paths
    from clnn.options import options_of

    try:
        if directory is None:  # under the device's cache_dir option
            directory = paths.cache_dir("compilation", root=options_of(device).cache_dir,
                                        create=True)
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:  # no writable cache: prepare as if cache=False
        return device.prepare_model(hal_model), False
    stem = directory / key.hex()
    mc = [str(stem) + f".model{i}" for i in range(n_model)]
    dc = [str(stem) + f".data{i}" for i in range(n_data)]
    if all(os.path.exists(f) for f in mc + dc):
        try:
            return device.prepare_model_from_cache(model_cache=mc, data_cache=dc,
                                                   token=key), True
        except (HalError, OSError):  # stale, truncated or another save's files
            pass
    if defer_save is not None and hasattr(device, "programs"):  # the OpenCL device
        from clnn import compilation_cache
        from clnn.program_cache import recording

        with recording() as keys:
            prepared = device.prepare_model(hal_model)

        def save():
            supported = device.get_supported_operations(hal_model)
            compilation_cache.save(device, prepared, keys, supported, mc, dc, key)

        defer_save.append(save)
        return prepared, False
    return device.prepare_model(hal_model, model_cache=mc, data_cache=dc, token=key), False


def prepare_with_cache(device, model, model_bytes: bytes | None, directory=None):
    """(prepared model, "off" | "miss" | "hit", save): through the compilation cache when
    ``model_bytes`` are given and the device keeps cache files, else a plain prepare. ``save``:
    on a miss, what saves the cache; call it after the first result (None: nothing to save).
    ``directory``: the cache's (None: under the device's cache_dir option)."""
    n_model, n_data = device.get_number_of_cache_files_needed()
    pending: list = []
    with build_progress():
        if model_bytes is None or n_model + n_data == 0:
            return device.prepare_model(model), "off", None
        prepared, hit = prepare_cached(device, model, cache_key(model_bytes, device), directory,
                                       defer_save=pending)
    return prepared, "hit" if hit else "miss", pending[0] if pending else None


class _Bar:
    """A tqdm bar on stderr per stage of the compile work: "building programs" (counted as
    they are built) then "compiling N kernels" (the warm-up's first launches)."""

    def __init__(self):
        self.bar = None
        self.stage = None

    def __call__(self, stage: str, done: int, total):
        from tqdm import tqdm

        if stage != self.stage:
            self.close()
            self.stage = stage
            if stage == "build":
                desc = f"building {total} kernels" if total else "building programs"
            else:
                desc = f"compiling {total} kernel launches"
            self.bar = tqdm(total=total, desc=desc, unit="", leave=False, file=sys.stderr)
        if stage == "build":
            self.bar.update(done)
        else:
            self.bar.update(done - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class _LogLines(logging.Handler):
    """clnn's INFO lines (what a prepare compiles or measures: clnn.program_cache.LOG) above
    the progress bar."""

    def emit(self, record):
        from tqdm import tqdm

        tqdm.write(f"clnn: {record.getMessage()}", file=sys.stderr)


@contextlib.contextmanager
def _log_lines():
    """clnn's INFO lines on stderr while the block runs, unless the application's logging
    already shows them (its own handlers then do)."""
    from clnn.program_cache import LOG

    if LOG.isEnabledFor(logging.INFO):
        yield
        return
    handler, saved = _LogLines(), (LOG.level, LOG.propagate)
    LOG.addHandler(handler)
    LOG.setLevel(logging.INFO)
    LOG.propagate = False  # (INFO lines the application's handlers did not ask for)
    try:
        yield
    finally:
        LOG.removeHandler(handler)
        LOG.setLevel(saved[0])
        LOG.propagate = saved[1]


@contextlib.contextmanager
def build_progress(enabled: bool | None = None):
    """A progress bar of program builds and kernel compiles, and the lines saying what
    compiles, while the block runs, when ``enabled`` (None: when stderr is a terminal; never in
    pipes or tests)."""
    from clnn import program_cache as progress

    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield
        return
    bar = _Bar()
    progress.listeners.append(bar)
    try:
        with _log_lines():
            yield
    finally:
        progress.listeners.remove(bar)
        bar.close()
