"""Where the conformance corpus is when no ``--corpus`` is given.

``$CLNN_CTS_CORPUS`` first. Otherwise only a source checkout looks further, for
``../shared/cts/public`` relative to the current directory and then to the checkout: an
installed clnn (site-packages) has no sibling corpus, and guessing a path from its location
would name a directory inside the Python installation.
"""

from __future__ import annotations

import os
from pathlib import Path

import clnn

RELATIVE = Path("..", "shared", "cts", "public")


def source_checkout() -> Path | None:
    """The repository root when clnn runs from a source checkout (pyproject.toml beside the
    package, not under site-packages), else None."""
    root = Path(clnn.__file__).resolve().parents[1]
    if "site-packages" in root.parts or "dist-packages" in root.parts:
        return None
    return root if (root / "pyproject.toml").is_file() else None


def candidates() -> list[Path]:
    """The directories looked at, in order (existing or not)."""
    env = os.environ.get("CLNN_CTS_CORPUS")
    if env:
        return [Path(env)]
    root = source_checkout()
    if root is None:
        return []
    out = [Path.cwd() / RELATIVE, root / RELATIVE]
    return [p for i, p in enumerate(out) if p.resolve() not in {q.resolve() for q in out[:i]}]


def find_corpus() -> Path | None:
    """The first candidate that is a directory, or None."""
    return next((p for p in candidates() if p.is_dir()), None)


def missing_corpus_reason() -> str:
    """One clause saying why there is no default corpus, for an error message."""
    tried = candidates()
    if os.environ.get("CLNN_CTS_CORPUS"):
        return f"$CLNN_CTS_CORPUS names {tried[0]}, which is not a directory"
    if not tried:
        return "clnn is installed, not run from a source checkout: set $CLNN_CTS_CORPUS " \
               "or pass --corpus"
    where = f"{tried[0]} is" if len(tried) == 1 else \
        f"neither {' nor '.join(str(p) for p in tried)} is"
    return f"{where} not a directory: set $CLNN_CTS_CORPUS or pass --corpus"
