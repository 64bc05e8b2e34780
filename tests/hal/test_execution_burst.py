"""Execution bursts: memories cached by slot, freed by the client; burst statuses."""

from __future__ import annotations

import numpy as np

from hal.errors import ErrorStatus
from hal.execution import Burst, BurstController
from hal.types import UINT64_MAX, MeasureTiming, Request
from tests.kits.execution_models import chain, expected_chain, make_request, outputs, relu, sample


def test_burst_caches_memories_by_slot(device):
    m = chain()
    pm = device.prepare_model(m)
    burst = pm.configure_execution_burst()
    assert isinstance(burst, Burst)
    x = sample()
    req = make_request(m, [x])
    r = burst.execute_synchronously(req, [7, 3], MeasureTiming.YES)
    assert r.status == ErrorStatus.NONE and burst.cached_slots() == [3, 7]
    assert r.timing.time_on_device != UINT64_MAX
    # the second execution names the slots only
    req.pools[1].view()[:] = b"\0" * req.pools[1].size
    r = burst.execute_synchronously(Request(req.inputs, req.outputs, [None, None]), [7, 3])
    for got, want in zip(outputs(m, req, r), expected_chain(x)):
        np.testing.assert_allclose(got, want)
    # new input values in the cached memory are seen
    x2 = sample(seed=5)
    req2 = make_request(m, [x2])
    req.pools[0].view()[: req2.pools[0].size] = req2.pools[0].view()
    r = burst.execute_synchronously(Request(req.inputs, req.outputs, [None, None]), [7, 3])
    np.testing.assert_allclose(outputs(m, req, r)[0], expected_chain(x2)[0])


def test_freed_and_unknown_slots(device):
    m = relu()
    pm = device.prepare_model(m)
    burst = pm.configure_execution_burst()
    req = make_request(m, [sample()])
    assert burst.execute_synchronously(req, [0, 1]).status == ErrorStatus.NONE
    assert burst.free_memory(0) == ErrorStatus.NONE
    assert burst.free_memory(0) == ErrorStatus.INVALID_ARGUMENT  # already freed
    assert burst.cached_slots() == [1]
    r = burst.execute_synchronously(Request(req.inputs, req.outputs, [None, None]), [0, 1])
    assert r.status == ErrorStatus.INVALID_ARGUMENT and "slot 0 holds no memory" in r.message
    r = burst.execute_synchronously(req, [0])
    assert r.status == ErrorStatus.INVALID_ARGUMENT and "1 slots for 2 pools" in r.message
    r = burst.execute_synchronously(req, [0, -1])
    assert r.status == ErrorStatus.INVALID_ARGUMENT
    burst.close()
    r = burst.execute_synchronously(req, [0, 1])
    assert r.status == ErrorStatus.GENERAL_FAILURE and "closed" in r.message


def test_burst_execution_statuses(device):
    m = chain((3,))
    pm = device.prepare_model(m)
    burst = pm.configure_execution_burst()
    req = make_request(m, [np.float32([1, -2, 3])], output_sizes=[12, 8])
    r = burst.execute_synchronously(req, [0, 1])
    assert r.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [s.is_sufficient for s in r.output_shapes] == [True, False]
    r = burst.execute_synchronously(req, [0, 1], deadline=0)
    assert r.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    r = burst.execute_synchronously(req, [0, 1], measure=3)
    assert r.status == ErrorStatus.INVALID_ARGUMENT


def test_burst_controller_sends_each_memory_once(device):
    m = chain()
    pm = device.prepare_model(m)
    ctl = BurstController(pm.configure_execution_burst())
    reqs = [make_request(m, [sample(seed=k)]) for k in range(3)]
    for _ in range(2):
        for k, req in enumerate(reqs):
            r = ctl.execute(req)
            for got, want in zip(outputs(m, req, r), expected_chain(sample(seed=k))):
                np.testing.assert_allclose(got, want)
    assert ctl.burst.cached_slots() == list(range(6))
    assert ctl.slot_of(reqs[1].pools[0]) == 2
    assert ctl.free(reqs[1].pools[0]) == ErrorStatus.NONE
    assert ctl.free(reqs[1].pools[0]) == ErrorStatus.INVALID_ARGUMENT
    assert 2 not in ctl.burst.cached_slots()
    r = ctl.execute(reqs[1])  # sent again, in a new slot
    assert r.status == ErrorStatus.NONE and ctl.slot_of(reqs[1].pools[0]) == 6
