"""The one cache directory of clnn: programs, capabilities, models, compilation caches.

Its root is given (``root``: a device's ``DeviceOptions.cache_dir``, or what an entry point
read from ``$CLNN_CACHE_DIR`` through clnn.options); when none is given, the user cache
directory from platformdirs (``$XDG_CACHE_HOME/clnn``, by default ``~/.cache/clnn`` on Linux).
This module never reads clnn's variables itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import platformdirs


def default_root() -> str:
    """The user cache directory of clnn (platformdirs), whatever the environment names."""
    return platformdirs.user_cache_dir("clnn", appauthor=False)


def cache_dir(*parts: str, root: str | None = None, create: bool = False) -> Path:
    """``<root>/<parts...>``; made (with its parents) when ``create``. ``root`` None:
    :func:`default_root`."""
    path = Path(root or default_root(), *parts)
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def cached_probe(name: str, root: str | None, measure, check) -> dict:
    """A device probe's answer kept in clnn's cache (``probes/<name>.json``): the entry there
    where it reads and ``check(entry)`` holds (raising KeyError / TypeError / ValueError
    where not), else ``measure()``'s entry, written atomically (an unwritable cache is no
    error: the next process measures again)."""
    path = cache_dir("probes", root=root) / f"{name}.json"
    try:
        entry = json.loads(path.read_text())
        check(entry)
        return entry
    except (OSError, ValueError, KeyError, TypeError):
        pass
    entry = measure()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entry))
        os.replace(tmp, path)
    except OSError:
        pass
    return entry
