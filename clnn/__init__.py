"""clnn: an NNAPI-HAL-shaped neural-network driver that runs models through OpenCL.

The short API (clnn/api.py) is reached lazily, so that ``import clnn`` imports neither
pyopencl nor the TFLite reader: ``clnn.load(path_or_bytes_or_hal_model, device="opencl")``
returns a :class:`clnn.Model` with ``run``, ``profile`` and ``compare``.
"""

from hal import __version__

__all__ = ["Model", "TensorSpec", "__version__", "load"]

_API = ("Model", "TensorSpec", "load")


def __getattr__(name):
    if name in _API:
        from clnn import api

        return getattr(api, name)
    raise AttributeError(f"module 'clnn' has no attribute {name!r}")
