"""A host-driven WHILE body's run enqueued again as its last run was (clnn/control_flow/
Replay): iterations of a body run read the same device buffers, so only the launches are
enqueued; the results equal the reference's across executions of other iteration counts and
inputs, and a run whose kernels were pointed elsewhere is not replayed."""

from __future__ import annotations

import numpy as np
import pytest

from clnn.capabilities_workloads import while_model
from clnn.control_flow import Replay
from hal.errors import ErrorStatus
from tests.kits.one_op_models import make_request, run

N = 16


def _inputs(iterations: int, seed: int):
    x = np.random.default_rng(seed).standard_normal((1, N, N)).astype(np.float32)
    return [x, np.zeros(1, np.int32), np.full(1, iterations, np.int32)]


def _cpu(device) -> bool:
    """Whether the loop is host-driven there (a CPU device:
    clnn.control_flow.host_loops._host_reads), the only loops replayed."""
    import pyopencl as cl

    return bool(device.cl_device.type & cl.device_type.CPU)


def _execute(prepared, model, inputs):
    request = make_request(model, inputs)
    assert prepared.execute_synchronously(request).status == ErrorStatus.NONE
    return np.frombuffer(request.pools[1].view()[:N * N * 4], np.float32).reshape(1, N, N)


@pytest.fixture
def replays(monkeypatch):
    """The body runs replayed (Replay.again returning outputs)."""
    done = []
    again = Replay.again

    def counted(self, *args):
        outs = again(self, *args)
        done.append(outs is not None)
        return outs

    monkeypatch.setattr(Replay, "again", counted)
    return done


def test_replayed_loops_equal_the_reference(cl_device, replays):
    """One prepared model, executions of 7, 3, 8, 1, 0, 12, 2 and 20 iterations on other
    inputs: each equals the reference, and body runs were replayed."""
    model, _ = while_model(N)
    prepared = cl_device.prepare_model(model)
    for seed, iterations in enumerate((7, 3, 8, 1, 0, 12, 2, 20)):
        inputs = _inputs(iterations, seed)
        np.testing.assert_array_equal(_execute(prepared, model, inputs),
                                      run(model, inputs)[0])
    if _cpu(cl_device):
        assert sum(replays) > 10, replays


def test_a_run_pointed_elsewhere_is_not_replayed(cl_device, replays):
    """The body's kernels pointed back at their inputs' own buffers between two executions
    (as another run of the plan would leave them): the record's check refuses it, the run
    goes the whole way, and the result is the reference's."""
    model, _ = while_model(N)
    prepared = cl_device.prepare_model(model)
    inputs = _inputs(8, 1)
    want = run(model, inputs)[0]
    np.testing.assert_array_equal(_execute(prepared, model, inputs), want)
    records = [r.replay for r in prepared.subgraph_runs.values() if r.replay is not None]
    if not _cpu(cl_device):
        return
    assert records
    for record in records:
        for _, _, _, direct in record.parts:
            for d, _ in direct:
                d.point(d.buffer)
    replays.clear()
    np.testing.assert_array_equal(_execute(prepared, model, inputs), want)
    assert replays and not replays[0] and any(replays), replays
