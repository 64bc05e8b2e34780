"""The command line's devices: ``--device`` (its help and argparse type), the checks a command
makes before its work starts (:func:`require_device`, :func:`require_opencl`), the device a
command's child processes use (:func:`device_environment`) and ``clnn devices``: what OpenCL
finds. Opening a device by name is :func:`clnn.devices.open_device`."""

from __future__ import annotations

import contextlib
import json
import os
import sys

from clnn.devices import parse_device_spec

DEVICE_HELP = ("reference (NumPy), opencl (the default OpenCL device: $CLNN_DEVICE, else "
               "$PYOPENCL_CTX, else the first GPU, else CPU), opencl:PLATFORM:DEVICE "
               "(indexes or name substrings, as `clnn devices` lists), opencl:PLATFORM:DEVICE/N "
               "(a sub-device of N compute units), or a device name substring")


def device_spec(text: str) -> str:
    """argparse type of every ``--device``: the spec's form, checked before any work starts
    (whether the device is there is :func:`require_device`'s question)."""
    import argparse

    try:
        parse_device_spec(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text.strip()


def device_requested(name: str | None) -> bool:
    """Whether the user asked for a device (by name, or for OpenCL through $CLNN_DEVICE or
    $PYOPENCL_CTX): such a request is never replaced by another device."""
    from clnn.options import device_spec_from_environ

    return bool(name) or device_spec_from_environ()[0] is not None


def require_opencl(spec: str | None, what: str) -> None:
    """A usage error when ``spec`` names the reference device for a command (``what``) that
    only has meaning on OpenCL."""
    if spec is not None and parse_device_spec(spec)[0] == "reference":
        from clnn.cli.errors import UsageError

        raise UsageError(f"--device {spec} is not an OpenCL device, and {what} needs one")


@contextlib.contextmanager
def device_environment(spec: str | None):
    """While the block runs, $CLNN_DEVICE is the OpenCL device ``spec`` names (when it names
    one), so that every device an entry point opens without a spec (clnn.devices.open_device),
    in this process or in those it starts (bench prepare, fuzz graphs and tflite workers), is
    that device; restored after, as a command run in-process (tests) must leave the
    environment as it found it."""
    named = parse_device_spec(spec)[1] if spec is not None else None
    if not named:
        yield
        return
    before = os.environ.get("CLNN_DEVICE")
    os.environ["CLNN_DEVICE"] = named
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("CLNN_DEVICE", None)
        else:
            os.environ["CLNN_DEVICE"] = before


def require_device(spec: str | None, cl_spec: str | None = None) -> None:
    """Before a command's work starts: fail when the requested device is not there (a bad
    spec: a usage error; an OpenCL device that OpenCL does not find: DeviceUnavailable, whose
    reason lists the devices found)."""
    from clnn.cli.errors import UsageError

    try:
        kind, named = parse_device_spec(spec)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if kind == "reference":
        return
    try:
        from clnn.device import select_device
    except ImportError as e:
        from clnn.cli.errors import CliError

        raise CliError(f"the OpenCL device needs pyopencl, which does not import ({e})") from e
    from clnn.device import split_sub_device
    from clnn.devices import environ_spec

    named, source = environ_spec(cl_spec or named)
    base, units = split_sub_device(named)
    platform, device = select_device(base, source or ("--device" if base else None))
    if units is not None:
        from clnn.device import create_sub_device

        create_sub_device(device, units)
    from clnn import paths
    from clnn.cli.errors import require_writable_dir
    from clnn.options import cache_root_from_environ

    # the device saves every program it builds there; a bad place fails the first execution
    require_writable_dir(paths.cache_dir("programs", root=cache_root_from_environ()),
                         "the OpenCL program cache")


def _sub_device_rows(p_i, d_i, p, d) -> list[dict]:
    """A row per sub-device ``P:D/N`` the device can make (clCreateSubDevices by counts)."""
    from clnn.device import device_type_name, sub_device_counts

    return [{"index": f"{p_i}:{d_i}/{n}", "name": f"{d.name.strip()} (sub-device)",
             "type": device_type_name(p, d), "platform": p.name.strip(),
             "version": d.version.strip(), "driver": d.driver_version, "compute_units": n,
             "global_mem_mib": d.global_mem_size // (1 << 20),
             "max_work_group": d.max_work_group_size,
             "fp16": "cl_khr_fp16" in d.extensions, "fp64": "cl_khr_fp64" in d.extensions,
             "default": False, "sub_device_of": f"{p_i}:{d_i}"}
            for n in sub_device_counts(d)]


def run_devices_cli(as_json: bool = False) -> int:
    rows = [{"index": "reference", "name": "clnn reference (NumPy)", "type": "CPU",
             "platform": "-", "version": "-", "driver": "-", "compute_units": os.cpu_count(),
             "global_mem_mib": None, "max_work_group": None, "fp16": False, "fp64": True,
             "default": False}]
    try:
        import pyopencl  # noqa: F401 - no pyopencl: no OpenCL platform, said below

        from clnn.device import device_type_name, list_cl_devices, select_device

        found = list_cl_devices()
    except Exception as e:  # no ICD loader, no pyopencl, no platform
        found, default = [], None
        print(f"clnn devices: no OpenCL platform is available ({type(e).__name__}: {e})",
              file=sys.stderr)
    default = None
    if found:
        try:  # the device a command would use; a bad $CLNN_DEVICE marks none, listing the rest
            from clnn.devices import environ_spec

            default = select_device(*environ_spec(None))[1]
        except Exception as e:
            print(f"clnn devices: {e}", file=sys.stderr)
    for p_i, d_i, p, d in found:
        rows.append({"index": f"{p_i}:{d_i}", "name": d.name.strip(),
                     "type": device_type_name(p, d), "platform": p.name.strip(),
                     "version": d.version.strip(), "driver": d.driver_version,
                     "compute_units": d.max_compute_units,
                     "global_mem_mib": d.global_mem_size // (1 << 20),
                     "max_work_group": d.max_work_group_size,
                     "fp16": "cl_khr_fp16" in d.extensions,
                     "fp64": "cl_khr_fp64" in d.extensions, "default": d == default})
        rows.extend(_sub_device_rows(p_i, d_i, p, d))
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
        print("(* = the OpenCL device used by default; choose another with --device "
              "opencl:PLATFORM:DEVICE, CLNN_DEVICE or PYOPENCL_CTX, or a name substring; "
              "P:D/N is a sub-device of N compute units)")
        _print_companions(found)
    return 0


def _print_companions(found) -> None:
    """The companion devices (clnn/companion.py) of the platforms listed: not devices of
    their own, where the platform's small models may run."""
    from clnn.device import companion_devices

    seen = set()
    for p_i, _, p, _ in found:
        if p_i in seen:
            continue
        seen.add(p_i)
        for d in companion_devices(p):
            print(f"(platform {p_i} runs small models on its companion {d.name.strip()}, "
                  f"{d.max_compute_units} compute unit(s), when they run faster there: "
                  "CLNN_COMPANION=0 turns it off)")


def _cmd(args) -> int:
    return run_devices_cli(as_json=args.json)


def register(sub) -> None:
    """Add ``clnn devices`` to the subcommands."""
    v = sub.add_parser("devices", help="list the OpenCL devices found and the reference device")
    v.add_argument("--json", action="store_true", help="print as JSON")
    v.set_defaults(func=_cmd)


def device_list(text: str) -> list[str]:
    """The devices of ``--runtime`` / ``--devices``: names joined by commas, each checked."""
    from clnn.cli.errors import UsageError

    names = [n.strip() for n in text.split(",")]
    for n in names:
        try:
            parse_device_spec(n)
        except ValueError as e:
            raise UsageError(f"device list {text!r}: {e}") from None
        require_device(n)
    if len(set(names)) != len(names):
        raise UsageError(f"device list {text!r} names a device twice")
    return names
