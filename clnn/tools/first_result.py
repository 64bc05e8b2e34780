"""The time to a model's first result as a user sees it: the compilation cache that `clnn run`
and `clnn bench models` use by default, the progress bar of program builds, and prepare /
first-execution times reported apart.

The cache is the HAL's (``prepare_model`` with cache files and a token, clnn/compilation_cache.py
for the OpenCL device): files under ``clnn.paths.cache_dir("compilation")`` named by a hash of
the model file's bytes and of the device's identity (its version string names the clnn version,
the platform, the device and the driver), which is the token too (see clnn.tools.api). A cache
that fails the HAL's checks is prepared again and saved over.
"""

from __future__ import annotations

import contextlib
import sys


def prepare_with_cache(device, model, model_bytes: bytes | None):
    """(prepared model, "off" | "miss" | "hit"): through the compilation cache when
    ``model_bytes`` are given and the device keeps cache files, else a plain prepare."""
    from clnn.tools.api import _prepare, cache_key

    n_model, n_data = device.get_number_of_cache_files_needed()
    with build_progress():
        if model_bytes is None or n_model + n_data == 0:
            return device.prepare_model(model), "off"
        prepared, hit = _prepare(device, model, cache_key(model_bytes, device), None)
    return prepared, "hit" if hit else "miss"


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
            desc = ("building programs" if stage == "build"
                    else f"compiling {total} kernel launches")
            self.bar = tqdm(total=total, desc=desc, unit="", leave=False, file=sys.stderr)
        if stage == "build":
            self.bar.update(done)
        else:
            self.bar.update(done - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


@contextlib.contextmanager
def build_progress(enabled: bool | None = None):
    """A progress bar of program builds and kernel compiles while the block runs, when
    ``enabled`` (None: when stderr is a terminal; never in pipes or tests)."""
    from clnn import progress

    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield
        return
    bar = _Bar()
    progress.listeners.append(bar)
    try:
        yield
    finally:
        progress.listeners.remove(bar)
        bar.close()
