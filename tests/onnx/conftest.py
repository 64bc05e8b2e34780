"""Each ONNX operator test runs on the reference device and on the OpenCL device (without
fallback: an operation the OpenCL device cannot run fails the test)."""

import pytest


@pytest.fixture(scope="module")
def devices(reference, cl_device):
    return [reference, cl_device]
