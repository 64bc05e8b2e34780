"""Reading the conformance corpus (shared/cts/FORMAT.md): gzipped JSON files of tests.

A file that cannot be read, or a test in it the runner cannot name, is a CorpusError that
names the file; :func:`iter_corpus` can collect those instead, so that one damaged file does
not stop a run over the rest (clnn/tools/cts.py reports them as ``error`` results).
"""

from __future__ import annotations

import fnmatch
import gzip
import json
import os
import zlib
from pathlib import Path


class CorpusError(ValueError):
    """A corpus file, or a test in it, that cannot be read; the reason names the file."""


def read_corpus_file(path: str | os.PathLike) -> dict:
    """One corpus file's document, with a list of tests; a CorpusError naming the file when it
    is not gzip, not JSON or not shaped as shared/cts/FORMAT.md says."""
    name = Path(path).name
    try:
        with gzip.open(path, "rt") as f:
            doc = json.load(f)
    except (OSError, EOFError, ValueError, zlib.error) as e:  # ValueError: JSON, UTF-8
        raise CorpusError(f"{name} cannot be read: {type(e).__name__}: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tests"), list):
        raise CorpusError(f"{name} is not a corpus file: it has no list of \"tests\"")
    return doc


def iter_corpus(corpus: str | os.PathLike, pattern: str | None = None, errors=None):
    """Yield (spec, version, test dict) for every test (optionally matching a glob/substring).

    A file that cannot be read, or a test in it without a name or a main graph, raises a
    CorpusError; when ``errors`` is a list, (spec, name, reason) is appended to it instead and
    the other files go on."""
    for path in sorted(Path(corpus).glob("*.json.gz")):
        stem = path.name.removesuffix(".json.gz")
        try:
            doc = read_corpus_file(path)
        except CorpusError as e:
            if errors is None:
                raise
            errors.append((stem, path.name, str(e)))
            continue
        spec = doc.get("spec") if isinstance(doc.get("spec"), str) else stem
        for k, t in enumerate(doc["tests"]):
            if not (isinstance(t, dict) and isinstance(t.get("name"), str)
                    and isinstance(t.get("main"), dict)):
                reason = f"{path.name}: test {k} has no name or no main graph"
                if errors is None:
                    raise CorpusError(reason)
                errors.append((spec, f"{path.name}#{k}", reason))
                continue
            if pattern and not _matches(pattern, spec, t["name"]):
                continue
            yield spec, doc.get("version"), t


def _matches(pattern: str, spec: str, name: str) -> bool:
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(spec, pattern)
    return pattern in name or pattern in spec
