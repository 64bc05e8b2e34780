"""The one cache directory of clnn: programs, capabilities, models, compilation caches.

``$CLNN_CACHE_DIR`` when set, else the user cache directory from platformdirs
(``$XDG_CACHE_HOME/clnn``, by default ``~/.cache/clnn`` on Linux).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def cache_dir(*parts: str, create: bool = False) -> Path:
    """``<cache root>/<parts...>``; made (with its parents) when ``create``."""
    root = os.environ.get("CLNN_CACHE_DIR") or platformdirs.user_cache_dir("clnn", appauthor=False)
    path = Path(root, *parts)
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path
