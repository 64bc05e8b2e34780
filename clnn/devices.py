"""Opening a device by name: :func:`open_device` ("reference", "opencl", "opencl:P:D", a
name substring). The command line's device checks and ``clnn devices`` are clnn/cli/devices.py.
"""

from __future__ import annotations

DEVICE_NAMES = ("reference", "opencl")


def parse_device_spec(spec: str | None) -> tuple[str, str | None]:
    """("reference", None) or ("opencl", the OpenCL spec for :func:`clnn.device.select_device`,
    None for the default). None: $CLNN_DEVICE or $PYOPENCL_CTX when set (an OpenCL device),
    else the reference device. Anything that is not reference/opencl names an OpenCL device
    ("0:1", "pocl", "opencl:0:1"). An empty spec is a ValueError."""
    if spec is None:
        from clnn.options import device_spec_from_environ

        return ("opencl", None) if device_spec_from_environ()[0] else ("reference", None)
    s = spec.strip()
    if not s or s.lower() == "opencl:":
        raise ValueError(f"device {spec!r} names no device; choose reference, opencl, "
                         "opencl:PLATFORM:DEVICE or a device name substring")
    if s.lower() in DEVICE_NAMES:
        return s.lower(), None
    return "opencl", s


def environ_spec(cl_spec: str | None) -> tuple[str | None, str | None]:
    """(the OpenCL spec, where it came from) for an entry point: ``cl_spec`` when it names a
    device, else the environment's ($CLNN_DEVICE, else $PYOPENCL_CTX:
    clnn.options.device_spec_from_environ), else (None, None): the default device."""
    if cl_spec is not None and cl_spec.strip().lower() not in ("", "opencl"):
        return cl_spec, None
    from clnn.options import device_spec_from_environ

    return device_spec_from_environ()


def open_cl_device(cl_spec: str | None = None, **options):
    """A :class:`clnn.device.ClDevice` as an entry point opens it: ``cl_spec`` (None /
    "opencl": the environment's device, :func:`environ_spec`), ``options`` as ClDevice takes
    them (without ``options=``, the DeviceOptions of the environment: clnn.options
    .from_environ)."""
    from clnn.device import ClDevice
    from clnn.options import from_environ

    if options.get("options") is None:
        options["options"] = from_environ()
    spec, source = environ_spec(cl_spec)
    if source is not None:
        options["device_source"] = source
    return ClDevice(spec, **options)


def open_device(spec: str | None = "reference", profiling: bool = False, **options):
    """The device ``spec`` names (:func:`parse_device_spec`): the NumPy reference device, or a
    :class:`clnn.device.ClDevice` with ``options`` (:func:`open_cl_device`: the environment's
    device where ``spec`` names none; ``profiling``: a queue with profiling events; without
    ``options=``, the DeviceOptions of the environment). An OpenCL device that is not there is
    DeviceUnavailable listing those found."""
    kind, cl_spec = parse_device_spec(spec)
    if kind == "reference":
        from hal.reference import ReferenceDevice

        return ReferenceDevice()
    return open_cl_device(cl_spec, profiling=profiling, **options)


def compilation_dir(device):
    """Where an entry point keeps ``device``'s compilation cache (clnn/prepare_cached.py):
    None for a device with options (under its ``cache_dir`` option), else (the reference
    device) ``compilation`` under the environment's cache root ($CLNN_CACHE_DIR)."""
    if getattr(device, "options", None) is not None:
        return None
    from clnn import paths
    from clnn.options import cache_root_from_environ

    return str(paths.cache_dir("compilation", root=cache_root_from_environ()))
