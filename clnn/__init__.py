"""clnn: an NNAPI-HAL-shaped neural-network driver that runs models through OpenCL."""

from hal import __version__

__all__ = ["__version__"]
