"""The one cache directory of clnn: programs, capabilities, models, compilation caches.

Its root is given (``root``: a device's ``DeviceOptions.cache_dir``); when none is given, the
root of the environment (``$CLNN_CACHE_DIR``, read by clnn.options, as the tools that fetch
models and the modules not yet handed their options ask), else the user cache directory from
platformdirs (``$XDG_CACHE_HOME/clnn``, by default ``~/.cache/clnn`` on Linux).
"""

from __future__ import annotations

from pathlib import Path

import platformdirs


def default_root() -> str:
    """The user cache directory of clnn (platformdirs), whatever the environment names."""
    return platformdirs.user_cache_dir("clnn", appauthor=False)


def cache_dir(*parts: str, root: str | None = None, create: bool = False) -> Path:
    """``<root>/<parts...>``; made (with its parents) when ``create``. ``root`` None: the
    environment's root (clnn.options.from_environ().cache_dir), else :func:`default_root`."""
    if root is None:
        from clnn.options import cache_root_from_environ

        root = cache_root_from_environ()
    path = Path(root or default_root(), *parts)
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path
