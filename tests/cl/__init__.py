"""Tests of the OpenCL device (clnn/): the device, its kernels, fusion and capabilities."""
