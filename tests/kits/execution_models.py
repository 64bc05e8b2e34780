"""Helpers for the execution-path tests: the device fixture (reference, OpenCL where found),
small models and requests."""

from __future__ import annotations

import numpy as np
import pytest

from hal.builder import ModelBuilder, make_request, read_outputs
from hal.errors import ErrorStatus

F32 = "TENSOR_FLOAT32"


def open_or_skip(name: str):
    from clnn.tools.devices import open_device

    try:
        return open_device(name)
    except Exception as e:  # no pyopencl / no OpenCL platform on this machine
        pytest.skip(f"the {name} device is not available: {e}")


@pytest.fixture(scope="module", params=["reference", "opencl"])
def device(request):
    return open_or_skip(request.param)


def chain(dims=(2, 3)):
    """x -> RELU -> t -> RELU6 -> y (output 0), and RELU1(x) (output 1)."""
    b = ModelBuilder()
    x = b.input(F32, dims)
    t = b.op("RELU", [x], b.tensor(F32, dims))
    b.op("RELU6", [t], b.output(F32, dims))
    b.op("RELU1", [x], b.output(F32, dims))
    return b.finish()


def relu(dims=(2, 3)):
    b = ModelBuilder()
    x = b.input(F32, dims)
    b.op("RELU", [x], b.output(F32, dims))
    return b.finish()


def sample(shape=(2, 3), seed=0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 4).astype(np.float32)


def expected_chain(x):
    return [np.clip(x, 0, 6), np.clip(x, -1, 1)]


def outputs(model, request, result):
    assert result.status == ErrorStatus.NONE, result.message
    return read_outputs(model, request, result.output_shapes)


__all__ = ["F32", "chain", "device", "expected_chain", "make_request", "open_or_skip",
           "outputs", "relu", "sample"]
