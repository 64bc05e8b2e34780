"""Opening a device by name, and ``clnn devices``: what OpenCL finds."""

from __future__ import annotations

import json
import os
import sys

DEVICE_NAMES = ("reference", "opencl")


def open_device(name: str = "reference", profiling: bool = False, **options):
    """``reference`` (the NumPy reference device) or ``opencl`` (a :class:`clnn.device.ClDevice`
    with ``options``; ``profiling``: a queue with profiling events)."""
    if name == "reference":
        from hal.reference import ReferenceDevice

        return ReferenceDevice()
    if name == "opencl":
        from clnn.device import ClDevice

        return ClDevice(profiling=profiling, **options)
    raise ValueError(f"unknown device {name!r}; choose one of {', '.join(DEVICE_NAMES)}")


def device_requested(name: str | None) -> bool:
    """Whether the user asked for a device (by name, or for OpenCL through $CLNN_DEVICE): such a
    request is never replaced by another device."""
    return bool(name) or bool(os.environ.get("CLNN_DEVICE"))


def require_device(name: str, cl_spec: str | None = None) -> None:
    """Before a command's work starts: fail when the requested device is not there (an
    unknown name: a usage error; an OpenCL device ``cl_spec`` or $CLNN_DEVICE names that
    OpenCL does not find: DeviceUnavailable, whose reason lists the devices found)."""
    if name == "reference":
        return
    if name != "opencl":
        from clnn.tools.errors import UsageError

        raise UsageError(f"unknown device {name!r}; choose one of {', '.join(DEVICE_NAMES)}")
    try:
        from clnn.device import select_device
    except ImportError as e:
        from clnn.tools.errors import CliError

        raise CliError(f"the OpenCL device needs pyopencl, which does not import ({e})") from e
    select_device(cl_spec or os.environ.get("CLNN_DEVICE"))
    from clnn import paths
    from clnn.tools.errors import require_writable_dir

    # the device saves every program it builds there; a bad place fails the first execution
    require_writable_dir(paths.cache_dir("programs"), "the OpenCL program cache")


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
