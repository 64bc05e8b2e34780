"""clnn: an NNAPI-HAL-shaped neural-network driver that runs models through OpenCL.

The public surface, reached lazily so that ``import clnn`` imports neither pyopencl nor the
TFLite reader:

- ``clnn.load(path_or_bytes_or_hal_model, device="opencl")`` returns a :class:`clnn.Model` with
  ``run``, ``profile`` and ``compare`` (clnn/api.py);
- ``clnn.open_device(name, **options)``: a HAL device by name, "reference", "opencl",
  "opencl:PLATFORM:DEVICE" or a name substring (clnn/devices.py);
- ``clnn.DeviceOptions``: the OpenCL device's options (clnn/options.py).

The command line is clnn/cli, the benchmarks clnn/bench, the test suites clnn/suites and the
model fetchers clnn/models; the device imports none of them.
"""

from hal import __version__

__all__ = ["DeviceOptions", "Model", "TensorSpec", "__version__", "load", "open_device"]

_LAZY = {"Model": "clnn.api", "TensorSpec": "clnn.api", "load": "clnn.api",
         "open_device": "clnn.devices", "DeviceOptions": "clnn.options"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'clnn' has no attribute {name!r}")
