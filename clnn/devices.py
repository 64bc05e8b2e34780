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


def open_device(spec: str | None = "reference", profiling: bool = False, **options):
    """The device ``spec`` names (:func:`parse_device_spec`): the NumPy reference device, or a
    :class:`clnn.device.ClDevice` with ``options`` (``profiling``: a queue with profiling
    events; without ``options=``, the DeviceOptions of the environment: clnn.options
    .from_environ). An OpenCL device that is not there is DeviceUnavailable listing those
    found."""
    kind, cl_spec = parse_device_spec(spec)
    if kind == "reference":
        from hal.reference import ReferenceDevice

        return ReferenceDevice()
    from clnn.device import ClDevice
    from clnn.options import from_environ

    if options.get("options") is None:
        options["options"] = from_environ()
    return ClDevice(cl_spec, profiling=profiling, **options)
