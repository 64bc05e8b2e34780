"""``clnn support``: which operations of a model the OpenCL device runs, and why not."""

from __future__ import annotations

import os


def load_model(what: str, corpus: str | None = None, shapes=None):
    """A Model from a .tflite or .onnx file (or the name of a model clnn models fetches), a
    corpus file (.json.gz, first test) or a corpus test name (searched in ``corpus``); a
    CliError naming the file or the name when there is none. ``shapes``: ONNX input
    dimensions fixed at load."""
    from clnn.cli.errors import CliError, UsageError
    from clnn.cli.onnx_run import import_model
    from clnn.importing.formats import is_onnx
    from clnn.models.onnx import known_name, resolve_model
    from clnn.suites.corpus import CorpusError, iter_corpus, read_corpus_file
    from clnn.suites.cts import build_model

    if known_name(what) and not os.path.exists(what):
        what = resolve_model(what)
    if what.endswith((".tflite", ".onnx")) or (os.path.isfile(what) and is_onnx(what)):
        return what, import_model(what, shapes).model
    if shapes:
        raise UsageError("--shape fixes dimensions of ONNX inputs: give an .onnx model")
    if what.endswith(".json.gz") or os.path.isfile(what):
        if not os.path.exists(what):
            raise UsageError(f"{what}: no such file")
        if os.path.isdir(what):
            raise UsageError(f"{what} is a directory, not a corpus file")
        try:
            tests = read_corpus_file(what)["tests"]
            test = tests[0] if tests else None
            if test is None:
                raise CorpusError(f"{os.path.basename(what)} holds no test")
            return test.get("name", what), build_model(test)
        except (CorpusError, KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
            raise CliError(f"cannot build a model from {what}: {type(e).__name__}: {e}") from e
    if corpus is None:
        from clnn.suites.corpus_path import find_corpus, missing_corpus_reason

        found = find_corpus()
        if found is None:
            raise CliError(f"{what!r} is not a .tflite / .json.gz file, and there is no corpus "
                           f"to look it up in: {missing_corpus_reason()}")
        corpus = str(found)
    if not os.path.isdir(corpus):
        raise CliError(f"{what!r} is not a .tflite / .json.gz file, and there is no corpus "
                       f"directory {corpus} to look it up in (--corpus)")
    for _, _, test in iter_corpus(corpus, errors=[]):  # unreadable files are not the question
        if test["name"] == what:
            try:
                return what, build_model(test)
            except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
                raise CliError(f"test {what!r} of {corpus} cannot be built: "
                               f"{type(e).__name__}: {e}") from e
    raise CliError(f"{what!r} is neither a .tflite / .json.gz file nor a test name in {corpus}")


def run_support_cli(what: str, corpus: str | None = None, device: str | None = None,
                    as_json: bool = False, shapes=None) -> int:
    from clnn.cli.errors import CliError
    from clnn.devices import open_cl_device
    from hal.errors import HalError

    name, model = load_model(what, corpus, shapes)
    dev = open_cl_device(device)
    try:
        rows = dev.support_report(model)
    except HalError as e:
        raise CliError(f"{name}: the model is not valid: {e}") from e
    if as_json:
        import json

        print(json.dumps({"model": name, "device": dev.name,
                          "device_version": dev.get_version_string(),
                          "operations": [{"index": k, "operation": op, "supported": ok,
                                          "reason": reason} for k, op, ok, reason in rows],
                          "supported": sum(1 for r in rows if r[2]), "total": len(rows)},
                         indent=1))
        return 0
    print(f"{name} on {dev.name}")
    width = max((len(r[1]) for r in rows), default=0)
    for k, op, ok, reason in rows:
        print(f"{k:4} {op:{width}}  {'yes' if ok else 'NO ':3}  {reason}")
    claimed = sum(1 for r in rows if r[2])
    print(f"{claimed}/{len(rows)} operations on OpenCL"
          f"{'' if claimed == len(rows) else ', the rest on the reference device (fallback)'}")
    return 0
