"""Quality of service and timing: priorities, deadlines (before prepare, during an execution),
loop timeouts, measured timings, output shapes of too-small buffers."""

from __future__ import annotations

import time

import numpy as np
import pytest

from hal.builder import ModelBuilder
from hal.errors import ErrorStatus, HalError
from hal.reference import executor as executor_module
from hal.types import UINT64_MAX, ExecutionPreference, MeasureTiming, Priority, Timing
from tests.kits.control_flow_models import counter_model
from tests.kits.execution_models import JumpingClock, chain, make_request, outputs, relu, sample


@pytest.mark.parametrize("priority", list(Priority))
def test_every_priority_is_accepted(device, priority):
    pm = device.prepare_model(relu(), priority=priority)
    assert pm.execute_synchronously(make_request(relu(), [sample()])).status == \
        ErrorStatus.NONE


@pytest.mark.parametrize("priority", [-1, 3, "HIGH"])
def test_invalid_priority(device, priority):
    with pytest.raises(HalError) as e:
        device.prepare_model(relu(), priority=priority)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT


@pytest.mark.parametrize("preference", [-1, 3])
def test_invalid_preference(device, preference):
    with pytest.raises(HalError) as e:
        device.prepare_model(relu(), preference=preference)
    assert e.value.status == ErrorStatus.INVALID_ARGUMENT and "preference" in e.value.reason
    for p in ExecutionPreference:
        device.prepare_model(relu(), preference=p)


def test_deadline_passed_before_prepare_is_persistent(device):
    for call in (lambda d: device.prepare_model(relu(), deadline=d),
                 lambda d: device.prepare_model_from_cache(deadline=d)):
        with pytest.raises(HalError) as e:
            call(time.monotonic_ns() - 1)
        assert e.value.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT


def test_deadline_passing_during_an_execution_is_transient(monkeypatch):
    """The reference device checks the deadline between operations; a clock that runs out
    after the first check makes the second one miss it."""
    from clnn.devices import open_device

    dev = open_device("reference")
    m = chain()
    pm = dev.prepare_model(m)
    req = make_request(m, [sample()])
    clock = JumpingClock(free=1)
    monkeypatch.setattr(executor_module, "time", clock)
    r = pm.execute_synchronously(req, MeasureTiming.YES, deadline=clock.t + 5 * 10**8)
    assert r.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    assert "during execution" in r.message and r.timing == Timing()


def test_loop_timeout(device):
    m = counter_model(body_amount=0)  # i never grows
    pm = device.prepare_model(m)
    args = [np.float32([0.0]), np.int32([0]), np.int32([1])]
    req = make_request(m, args)
    t0 = time.monotonic()
    r = pm.execute_synchronously(req, loop_timeout_duration=20_000_000)
    assert r.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    assert time.monotonic() - t0 < 5
    r = pm.execute_synchronously(req, loop_timeout_duration=15_000_000_001)
    assert r.status == ErrorStatus.INVALID_ARGUMENT
    r = pm.execute(req, loop_timeout_duration=20_000_000).wait(30)
    assert r.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    done = counter_model()
    r = device.prepare_model(done).execute_synchronously(
        make_request(done, [np.float32([0.0]), np.int32([0]), np.int32([3])]),
        loop_timeout_duration=10**9)
    assert r.status == ErrorStatus.NONE and r.output_shapes[0].dimensions == (1,)


def test_timing_when_measured_and_not(device):
    m = chain((64, 64))
    pm = device.prepare_model(m)
    req = make_request(m, [sample((64, 64))])
    for _ in range(2):
        r = pm.execute_synchronously(req, MeasureTiming.YES)
        t = r.timing
        assert t.time_on_device != UINT64_MAX and t.time_in_driver != UINT64_MAX
        assert 0 <= t.time_on_device <= t.time_in_driver
    assert pm.execute_synchronously(req).timing == Timing(UINT64_MAX, UINT64_MAX)
    bad = make_request(m, [sample((64, 64))], output_sizes=[4, 4])
    assert pm.execute_synchronously(bad, MeasureTiming.YES).timing == Timing()


def test_output_shapes_of_too_small_buffers_with_unknown_dimensions(device):
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", (0, 2))
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", (0, 2)))
    b.op("RELU6", [x], b.output("TENSOR_FLOAT32", ()))
    b.op("RELU1", [x], b.output("TENSOR_FLOAT32", (0, 0)))
    m = b.finish()
    pm = device.prepare_model(m)
    xs = sample((5, 2))
    req = make_request(m, [xs], output_sizes=[40, 39, 40])
    r = pm.execute_synchronously(req)
    assert r.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [(s.dimensions, s.is_sufficient) for s in r.output_shapes] == [
        ((5, 2), True), ((5, 2), False), ((5, 2), True)]
    req = make_request(m, [xs], output_sizes=[40, 40, 40])
    got = outputs(m, req, pm.execute_synchronously(req))
    np.testing.assert_allclose(got[1], np.clip(xs, 0, 6))
