"""The default run's slice of a long parametrization: the cases ``make test`` runs and the
rest marked slow (``make test-full`` runs them all; pyproject.toml's ``-m "not slow"``)."""

from __future__ import annotations

import pytest


def slow_unless(keep: bool, *values, id: str | None = None):
    """One case of a parametrization (``values``): in every run where ``keep``, else marked
    slow (``make test-full`` only)."""
    return pytest.param(*values, marks=() if keep else (pytest.mark.slow,), id=id)
