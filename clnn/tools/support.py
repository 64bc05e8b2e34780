"""``clnn support``: which operations of a model the OpenCL device runs, and why not."""

from __future__ import annotations

import gzip
import json
import os

DEFAULT_CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "cts",
                              "public")


def load_model(what: str, corpus: str | None = None):
    """A Model from a .tflite file, a corpus file (.json.gz, first test) or a corpus test name
    (searched in ``corpus``)."""
    from clnn.tools.cts_corpus import build_model

    if what.endswith(".tflite"):
        from clnn.tflite.importer import load

        return what, load(what).model
    if what.endswith(".json.gz") and os.path.exists(what):
        with gzip.open(what, "rt") as f:
            test = json.load(f)["tests"][0]
        return test["name"], build_model(test)
    from clnn.tools.cts_corpus import iter_corpus

    corpus = corpus or DEFAULT_CORPUS
    for _, _, test in iter_corpus(corpus):
        if test["name"] == what:
            return what, build_model(test)
    raise SystemExit(f"clnn support: {what!r} is neither a .tflite / .json.gz file nor a test "
                     f"name in {corpus}")


def run_support_cli(what: str, corpus: str | None = None, device: str | None = None) -> int:
    from clnn.device import ClDevice
    from hal.errors import HalError

    name, model = load_model(what, corpus)
    dev = ClDevice(device)
    try:
        rows = dev.support_report(model)
    except HalError as e:
        print(f"{name}: the model is not valid: {e}")
        return 1
    print(f"{name} on {dev.name}")
    width = max(len(r[1]) for r in rows)
    for k, op, ok, reason in rows:
        print(f"{k:4} {op:{width}}  {'yes' if ok else 'NO ':3}  {reason}")
    claimed = sum(1 for r in rows if r[2])
    print(f"{claimed}/{len(rows)} operations on OpenCL"
          f"{'' if claimed == len(rows) else ', the rest on the reference device (fallback)'}")
    return 0
