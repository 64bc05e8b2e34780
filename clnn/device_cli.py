"""``clnn devices`` and ``clnn support``: what OpenCL finds, and what the device claims."""

from __future__ import annotations

import gzip
import json
import os
import sys

DEFAULT_CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "cts", "public")


def run_devices_cli(as_json: bool = False) -> int:
    rows = [{"index": "reference", "name": "clnn reference (NumPy)", "type": "CPU",
             "platform": "-", "version": "-", "driver": "-", "compute_units": os.cpu_count(),
             "global_mem_mib": None, "max_work_group": None, "fp16": False, "fp64": True,
             "default": False}]
    try:
        import pyopencl as cl

        from clnn.device import list_cl_devices, select_device

        found = list_cl_devices()
        default = select_device(None)[1] if found else None
    except Exception as e:  # no ICD loader, no pyopencl, no platform
        found, default = [], None
        print(f"clnn devices: no OpenCL platform is available ({type(e).__name__}: {e})",
              file=sys.stderr)
    for p_i, d_i, p, d in found:
        rows.append({"index": f"{p_i}:{d_i}", "name": d.name.strip(),
                     "type": cl.device_type.to_string(d.type), "platform": p.name.strip(),
                     "version": d.version.strip(), "driver": d.driver_version,
                     "compute_units": d.max_compute_units,
                     "global_mem_mib": d.global_mem_size // (1 << 20),
                     "max_work_group": d.max_work_group_size,
                     "fp16": "cl_khr_fp16" in d.extensions,
                     "fp64": "cl_khr_fp64" in d.extensions, "default": d == default})
    if as_json:
        print(json.dumps(rows, indent=1))
        return 0
    if not found:
        print("No OpenCL device found: install an ICD (e.g. PoCL: apt-get install pocl-opencl-icd)"
              "; only the reference device is available.")
    for r in rows:
        mark = "*" if r["default"] else " "
        mem = f"{r['global_mem_mib']} MiB" if r["global_mem_mib"] else "-"
        print(f"{mark} {r['index']:10} {r['name']} [{r['type']}] platform {r['platform']}; "
              f"{r['version']}; driver {r['driver']}; {r['compute_units']} compute units; "
              f"memory {mem}; max work-group {r['max_work_group'] or '-'}; "
              f"fp16 {'yes' if r['fp16'] else 'no'}; fp64 {'yes' if r['fp64'] else 'no'}")
    if found:
        print("(* = the default OpenCL device; choose another with CLNN_DEVICE=platform:index "
              "or a name substring)")
    return 0


def load_model(what: str, corpus: str | None = None):
    """A Model from a .tflite file, a corpus file (.json.gz, first test) or a corpus test name
    (searched in ``corpus``)."""
    from clnn.cts import build_model

    if what.endswith(".tflite"):
        from clnn.tflite.importer import load

        return what, load(what).model
    if what.endswith(".json.gz") and os.path.exists(what):
        with gzip.open(what, "rt") as f:
            test = json.load(f)["tests"][0]
        return test["name"], build_model(test)
    from clnn.cts import iter_corpus

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
