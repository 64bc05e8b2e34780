"""Write tests/weights.json from a JUnit XML report of a cold ``make test``.

    PYTEST_ADDOPTS="--junitxml=/tmp/j.xml" make test   # from a fresh clone, empty caches
    python3 scripts/test_weights.py /tmp/j.xml

The weights are the seconds each test file took (its tests summed). tests/conftest.py
starts the heaviest files first, so that pytest-xdist's per-file scheduling (``--dist
loadfile``, which hands the files out in collection order) does not leave one worker with
a long file at the end while the others idle.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "weights.json"


def file_of(classname: str) -> str:
    """``tests.cl.test_x`` or ``tests.cl.test_x.TestCase`` -> ``tests/cl/test_x.py``."""
    parts = [p for p in classname.split(".") if not p[:1].isupper()]
    return "/".join(parts) + ".py"


def weights(report: str) -> dict[str, float]:
    seconds: dict[str, float] = {}
    for case in ET.parse(report).iter("testcase"):
        f = file_of(case.get("classname", ""))
        seconds[f] = seconds.get(f, 0.0) + float(case.get("time") or 0.0)
    return {f: round(s, 1) for f, s in sorted(seconds.items(), key=lambda x: -x[1])}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    w = weights(argv[0])
    OUT.write_text(json.dumps(w, indent=0) + "\n")
    print(f"wrote {OUT}: {len(w)} files, {sum(w.values()):.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
