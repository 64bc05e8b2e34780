"""Small models, inputs and expected outputs for the execution-path tests (synchronous, async,
burst, fenced, QoS, shapes, memory domains, the compilation cache), and a clock that runs out."""

from __future__ import annotations

import time

import numpy as np

from hal.builder import ModelBuilder, make_request, read_outputs
from hal.errors import ErrorStatus

F32 = "TENSOR_FLOAT32"


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


class JumpingClock:
    """A stand-in for the ``time`` module whose monotonic_ns jumps a second ahead at every
    reading after the first ``free`` ones (a deadline that passes in the middle of an
    execution)."""

    def __init__(self, free: int):
        self.free = free
        self.t = time.monotonic_ns()

    def monotonic_ns(self):
        self.free -= 1
        if self.free < 0:
            self.t += 10**9
        return self.t

    def __getattr__(self, name):
        return getattr(time, name)


__all__ = ["F32", "JumpingClock", "chain", "expected_chain", "make_request", "outputs", "relu",
           "sample"]
