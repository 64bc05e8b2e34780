"""execute_fenced(): sync fences, timings, unknown output dimensions, failures."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from hal.builder import ModelBuilder, read_outputs
from hal.errors import ErrorStatus
from hal.execution import SyncFence
from hal.types import UINT64_MAX, MeasureTiming, OutputShape, Timing
from tests.kits.execution_models import chain, expected_chain, make_request, relu, sample


def _info(launch, timeout=30):
    assert launch.status == ErrorStatus.NONE, launch.message
    assert launch.sync_fence.wait(timeout)
    return launch.callback.get_execution_info(timeout)


def test_fenced_execution_after_a_signaled_fence(device):
    m = chain()
    pm = device.prepare_model(m)
    x = sample()
    req = make_request(m, [x])
    launch = pm.execute_fenced(req, [SyncFence.signaled()])
    status, t_launched, t_fenced = _info(launch)
    assert status == ErrorStatus.NONE and launch.sync_fence.state == SyncFence.SIGNALED
    assert t_launched == Timing() and t_fenced == Timing()
    # a fenced execution returns no shapes: read the outputs with the known ones
    for got, want in zip(read_outputs(m, req, [OutputShape((2, 3))] * 2), expected_chain(x)):
        np.testing.assert_allclose(got, want)


def test_fenced_execution_waits_for_its_fences(device):
    m = relu()
    pm = device.prepare_model(m)
    x = sample()
    req = make_request(m, [x])
    gate = SyncFence()
    launch = pm.execute_fenced(req, [SyncFence.signaled(), gate], MeasureTiming.YES)
    assert launch.status == ErrorStatus.NONE
    assert not launch.sync_fence.wait(0.2)  # blocked on the gate
    assert launch.sync_fence.state == SyncFence.ACTIVE
    time.sleep(0.05)
    gate.signal()
    status, t_launched, t_fenced = _info(launch)
    assert status == ErrorStatus.NONE
    (y,) = read_outputs(m, req, [OutputShape((2, 3))])
    np.testing.assert_allclose(y, np.maximum(x, 0))
    # timing_launched counts the wait for the fences, timing_fenced does not
    assert t_launched.time_in_driver >= 200_000
    assert t_fenced.time_in_driver < t_launched.time_in_driver
    for t in (t_launched, t_fenced):
        assert t.time_on_device != UINT64_MAX and 0 <= t.time_on_device <= t.time_in_driver


def test_a_fence_in_error_fails_the_execution(device):
    m = relu()
    pm = device.prepare_model(m)
    bad = SyncFence()
    bad.signal(ErrorStatus.GENERAL_FAILURE)
    launch = pm.execute_fenced(make_request(m, [sample()]), [bad], MeasureTiming.YES)
    status, t1, t2 = _info(launch)
    assert status == ErrorStatus.GENERAL_FAILURE and "fence 0" in launch.callback.message
    assert launch.sync_fence.state == SyncFence.ERROR
    assert t1 == Timing() and t2 == Timing()


def test_unknown_output_dimensions_are_invalid_for_a_fenced_execution(device):
    b = ModelBuilder()
    x = b.input("TENSOR_FLOAT32", (2, 3))
    b.op("RELU", [x], b.output("TENSOR_FLOAT32", (0, 3)))
    m = b.finish()
    pm = device.prepare_model(m)
    req = make_request(m, [sample()])
    launch = pm.execute_fenced(req)
    assert launch.status == ErrorStatus.INVALID_ARGUMENT
    assert launch.sync_fence is None and launch.callback is None
    assert "unknown dimensions" in launch.message
    # the request may give the dimensions: then it runs
    req.outputs[0] = dataclasses.replace(req.outputs[0], dimensions=(2, 3))
    assert _info(pm.execute_fenced(req))[0] == ErrorStatus.NONE


def test_too_small_output_is_invalid_for_a_fenced_execution(device):
    m = relu((3,))
    pm = device.prepare_model(m)
    req = make_request(m, [np.float32([1, 2, 3])], output_sizes=[8])
    launch = pm.execute_fenced(req)
    assert launch.status == ErrorStatus.INVALID_ARGUMENT and "12 bytes" in launch.message


def test_fenced_launch_checks(device):
    m = relu()
    pm = device.prepare_model(m)
    req = make_request(m, [sample()])
    r = pm.execute_fenced(req, [object()])
    assert r.status == ErrorStatus.INVALID_ARGUMENT and "not a sync fence" in r.message
    r = pm.execute_fenced(req, timeout_after_fence=-5)
    assert r.status == ErrorStatus.INVALID_ARGUMENT and "negative" in r.message
    assert pm.execute_fenced(req, measure=7).status == ErrorStatus.INVALID_ARGUMENT
    r = pm.execute_fenced(req, loop_timeout_duration=-1)
    assert r.status == ErrorStatus.INVALID_ARGUMENT
    assert pm.execute_fenced(dataclasses.replace(req, outputs=[])).status == \
        ErrorStatus.INVALID_ARGUMENT


def test_deadlines_of_a_fenced_execution(device):
    m = relu()
    pm = device.prepare_model(m)
    req = make_request(m, [sample()])
    launch = pm.execute_fenced(req, [SyncFence.signaled()], deadline=time.monotonic_ns() - 1)
    assert _info(launch)[0] == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    assert launch.sync_fence.state == SyncFence.ERROR
    gate = SyncFence()
    launch = pm.execute_fenced(req, [gate], timeout_after_fence=0)
    gate.signal()
    assert _info(launch)[0] == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    launch = pm.execute_fenced(req, [SyncFence.signaled()], timeout_after_fence=10**10)
    assert _info(launch)[0] == ErrorStatus.NONE


def test_fence_chain(device):
    """Each execution waits for the previous one's fence."""
    m = relu()
    pm = device.prepare_model(m)
    fence, launches = SyncFence(), []
    first = fence
    for k in range(5):
        launch = pm.execute_fenced(make_request(m, [sample(seed=k)]), [fence])
        launches.append(launch)
        fence = launch.sync_fence
    assert all(not lc.sync_fence.wait(0) for lc in launches)
    first.signal()
    assert all(_info(lc)[0] == ErrorStatus.NONE for lc in launches)
