"""The constant buffer of a prepared model (clnn.plan.constant_buffer): on a CPU device sharing
the host's memory written through a map of a host-accessible buffer, elsewhere (a GPU's own
memory) copied array by array into device memory; the results are the same either way."""

from __future__ import annotations

import numpy as np
import pytest

from clnn import plan
from hal.builder import ModelBuilder
from tests.kits.cl_compare import assert_close, outputs_of, run_ref
from tests.kits.devices import open_or_skip

F32 = "TENSOR_FLOAT32"


def fc_model(rng):
    """FULLY_CONNECTED [2, 5] x constant [3, 5] + constant bias [3], then ADD of a constant
    [2, 3]: constants of several sizes at aligned offsets in one buffer."""
    b = ModelBuilder()
    x = b.input(F32, [2, 5])
    w = b.constant(rng.uniform(-1, 1, (3, 5)).astype(np.float32))
    bias = b.constant(rng.uniform(-1, 1, 3).astype(np.float32))
    y = b.op("FULLY_CONNECTED", [x, w, bias, b.int32(0)], b.tensor(F32, [2, 3]))
    c = b.constant(rng.uniform(-1, 1, (2, 3)).astype(np.float32))
    b.mark_output(b.op("ADD", [y, c, b.int32(0)], b.tensor(F32, [2, 3])))
    return b.finish()


@pytest.mark.parametrize("shared", [True, False])
def test_constants_reach_the_kernels_either_way(monkeypatch, shared):
    dev = open_or_skip("opencl", fallback=False)
    monkeypatch.setattr(plan, "host_memory_shared", lambda cl_device: shared)
    rng = np.random.default_rng(11)
    model = fc_model(rng)
    pm = dev.prepare_model(model)
    x = rng.uniform(-2, 2, (2, 5)).astype(np.float32)
    (got,) = outputs_of(model, pm, [x])
    (want,) = run_ref(model, [x])
    assert_close(got, want, "f32")


def test_host_memory_shared_on_this_machine():
    """PoCL's CPU device shares the host's memory; no device (None) does not."""
    dev = open_or_skip("opencl", fallback=False)
    cl_device = dev.cl_device
    import pyopencl as cl

    expected = bool(cl_device.type & cl.device_type.CPU) and bool(cl_device.host_unified_memory)
    assert plan.host_memory_shared(cl_device) is expected
    assert plan.host_memory_shared(None) is False
