"""Outputs of unknown dimensions or rank on every device, plans kept per input-shape signature
on the OpenCL device, and its deadline checks between partitions."""

from __future__ import annotations

import numpy as np
import pytest

from hal.builder import ModelBuilder
from hal.errors import ErrorStatus
from hal.reference import executor as executor_module
from hal.types import Timing
from tests.kits.devices import open_or_skip
from tests.kits.execution_models import F32, JumpingClock, make_request, outputs, sample


def _dynamic(in_dims=(0, 3), out_dims=((0, 3), ())):
    """x -> RELU -> a (output 0), a -> RELU6 -> b (output 1)."""
    b = ModelBuilder()
    x = b.input(F32, in_dims)
    a = b.op("RELU", [x], b.output(F32, out_dims[0]))
    b.op("RELU6", [a], b.output(F32, out_dims[1]))
    return b.finish()


def test_outputs_of_unknown_dimensions_and_rank(device):
    m = _dynamic()
    pm = device.prepare_model(m)
    for rows in (1, 5, 2):
        x = sample((rows, 3), seed=rows)
        req = make_request(m, [x])
        r = pm.execute_synchronously(req)
        assert [s.dimensions for s in r.output_shapes] == [(rows, 3)] * 2
        a, b = outputs(m, req, r)
        np.testing.assert_allclose(a, np.maximum(x, 0))
        np.testing.assert_allclose(b, np.clip(x, 0, 6))


def test_too_small_buffers_for_dynamic_outputs(device):
    m = _dynamic()
    pm = device.prepare_model(m)
    x = sample((4, 3))
    r = pm.execute_synchronously(make_request(m, [x], output_sizes=[48, 47]))
    assert r.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [(s.dimensions, s.is_sufficient) for s in r.output_shapes] == [
        ((4, 3), True), ((4, 3), False)]
    r = pm.execute_synchronously(make_request(m, [x], output_sizes=[0, 0]))
    assert [s.is_sufficient for s in r.output_shapes] == [False, False]


def test_opencl_plans_once_per_input_shape_signature():
    dev = open_or_skip("opencl")
    pm = dev.prepare_model(_dynamic())
    m = pm.model
    assert pm.pool_report()["plans"] == 0  # unknown input shape: planned at execution
    for rows in (2, 3, 2, 3, 2):
        r = pm.execute_synchronously(make_request(m, [sample((rows, 3))]))
        assert r.status == ErrorStatus.NONE
    assert pm.pool_report()["plans"] == 2
    static = dev.prepare_model(_dynamic((4, 3), ((4, 3), (4, 3))))
    assert static.pool_report()["plans"] == 1  # known shapes: planned at prepare
    static.execute_synchronously(make_request(static.model, [sample((4, 3))]))
    assert static.pool_report()["plans"] == 1


@pytest.fixture
def split_cl_device(monkeypatch):
    """The OpenCL device with operation 1 declared unsupported: two partitions (CL, then the
    reference fallback)."""
    dev = open_or_skip("opencl")
    original = dev._unsupported_reason
    monkeypatch.setattr(dev, "_unsupported_reason", lambda model, k, op: (
        "forced onto the host by the test" if k == 1 else original(model, k, op)))
    return dev


def test_opencl_deadline_passing_between_partitions(split_cl_device, monkeypatch):
    m = _dynamic((2, 3), ((2, 3), (2, 3)))
    pm = split_cl_device.prepare_model(m)
    assert [p.on_cl for p in pm.partitions] == [True, False]
    req = make_request(m, [sample()])
    assert pm.execute_synchronously(req).status == ErrorStatus.NONE
    clock = JumpingClock(free=1)  # the check before partition 0 passes, the next one misses
    monkeypatch.setattr(executor_module, "time", clock)
    r = pm.execute_synchronously(req, deadline=clock.t + 5 * 10**8)
    assert r.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT and r.timing == Timing()


def test_opencl_timing_counts_kernels_and_host_partitions(split_cl_device):
    m = _dynamic((64, 64), ((64, 64), (64, 64)))
    pm = split_cl_device.prepare_model(m)
    req = make_request(m, [sample((64, 64))])
    for measure in (1, 1):
        t = pm.execute_synchronously(req, measure).timing
        assert 0 < t.time_on_device <= t.time_in_driver
