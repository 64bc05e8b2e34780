"""The machine-readable records the benchmark scripts write (benchmarks/results/*.json)."""

from __future__ import annotations

import json
import subprocess
import sys


def git_commit(tree: str, full: bool = False) -> str:
    """The commit checked out in ``tree`` (short unless ``full``; "" outside a git checkout)."""
    args = ["git", "-C", tree, "rev-parse", *([] if full else ["--short"]), "HEAD"]
    return subprocess.run(args, capture_output=True, text=True).stdout.strip()


def write_record(path: str, record: dict, note: str = "") -> None:
    """``record`` as indented JSON at ``path``, then "wrote PATH" (and ``note``) on stderr."""
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    print(f"wrote {path}{note}", file=sys.stderr)
