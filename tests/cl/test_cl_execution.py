"""The execution model (clnn/execution.py): one request's state in an Execution (not on the
prepared model), and how a plan's launches run behind one PlanRunner interface that owns the
chain promotion and warm-up policy; the device's options choose the runner."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from clnn.execution import CHAIN_AFTER, Chained, Execution, OneByOne, PlanRunner, runner_for
from clnn.launch import ChainEvents
from clnn.options import DeviceOptions
from hal.builder import ModelBuilder, make_request
from hal.errors import ErrorStatus
from hal.types import MeasureTiming
from tests.kits.cl_compare import assert_close, outputs_of, run_ref
from tests.kits.devices import open_or_skip

F32 = "TENSOR_FLOAT32"


def relu_tanh():
    """y = tanh(relu(x)) over float32 [2, 3]: one OpenCL partition."""
    b = ModelBuilder()
    x = b.input(F32, [2, 3])
    a = b.op("RELU", [x], b.tensor(F32, [2, 3]))
    b.mark_output(b.op("TANH", [a], b.tensor(F32, [2, 3])))
    return b.finish()


# ------------------------------------------------------------------ the runner's policy

class _Recording(Chained):
    """Chained with the chains themselves left out: records when they are asked for."""

    def __init__(self, compiled=False):
        super().__init__(cl_device=None, context=None, compiled=compiled)
        self.asked = []

    def _ask(self, st, start):
        self.asked.append((st.runs, start))
        st.tried = start  # (a chain never built before is made only when started)


def _execution(events=None, keep_all=False):
    return SimpleNamespace(events=events, keep_all=keep_all)


def test_chains_are_asked_for_from_the_warm_up_and_started_from_chain_after():
    runner, plan = _Recording(), object()
    with runner.warm_up():
        runner.promote(plan, _execution())  # the warm-up's: not counted
    assert runner.asked == [(0, False)] and runner.state(plan).runs == 0
    for _ in range(CHAIN_AFTER):
        runner.promote(plan, _execution())
    assert runner.asked[1:] == [(n, n >= CHAIN_AFTER) for n in range(1, CHAIN_AFTER + 1)]
    runner.promote(plan, _execution())  # tried: nothing more asked
    assert len(runner.asked) == CHAIN_AFTER + 1 and runner.started([plan])


def test_from_the_compilation_cache_nothing_is_asked_before_the_second_execution():
    runner, plan = _Recording(compiled=True), object()
    with runner.warm_up():
        runner.promote(plan, _execution())
    runner.promote(plan, _execution())
    assert runner.asked == []
    runner.promote(plan, _execution())
    assert runner.asked == [(2, False)]


def test_executions_that_time_launches_or_keep_intermediates_do_not_count():
    runner, plan = _Recording(), object()
    runner.promote(plan, _execution(events=[]))  # per-launch events: one by one
    runner.promote(plan, _execution(keep_all=True))
    assert runner.asked == [] and runner.state(plan).runs == 0
    runner.promote(plan, _execution(events=ChainEvents()))  # chain profiling: counted
    assert runner.asked == [(1, False)]
    assert not runner.started([plan]) and runner.chains([]) == []


def test_one_by_one_has_no_policy():
    runner = OneByOne()
    assert isinstance(runner, PlanRunner)
    runner.wait([object()])
    assert not runner.started([object()]) and runner.chains([object()]) == []


def test_the_device_options_choose_the_runner(cl_device):
    dev = SimpleNamespace(cl_device=cl_device.cl_device, context=cl_device.context,
                          options=DeviceOptions(chains=False))
    assert isinstance(runner_for(dev), OneByOne)
    dev.options = DeviceOptions(chains=True, chain_min_launches=3)
    runner = runner_for(dev, compiled=True)
    assert isinstance(runner, Chained) and runner.min_launches == 3 and runner.first == 2


# ------------------------------------------------------------------ the execution object

def test_an_execution_runs_the_partitions_on_its_own_queue(cl_device):
    model = relu_tanh()
    pm = cl_device.prepare_model(model)
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    queue = cl_device.timing_queue()
    execution = Execution(pm, queue, events=[])
    (y,) = pm.run([x], execution=execution)
    assert_close(y, run_ref(model, [x])[0], "f32")
    # every launch ran on the execution's queue, with its events; none ran on the host
    assert execution.events and all(ev.command_queue == queue for _, ev in execution.events)
    assert execution.host_spans == [] and execution.host_ns == 0
    assert pm.last_execution is execution and pm.queue is cl_device.queue


def test_the_prepared_model_keeps_no_request_state(cl_device):
    model = relu_tanh()
    pm = cl_device.prepare_model(model)
    x = np.ones((2, 3), np.float32)
    result = pm.execute_synchronously(make_request(model, [x]), measure=MeasureTiming.YES)
    assert result.status == ErrorStatus.NONE and result.timing.time_on_device >= 0
    assert pm.queue is cl_device.queue  # the timing queue was the execution's alone
    for name in ("_device_outputs", "_host_ns", "_warming", "_compiled"):
        assert not hasattr(pm, name), name
    assert_close(outputs_of(model, pm, [x])[0], run_ref(model, [x])[0], "f32")



def test_the_kept_execution_holds_none_of_the_request(cl_device):
    """The prepared model keeps its last execution (host spans): once it returns, that holds
    none of the request's output bytes, nor host arrays (the client's memory, freed when the
    client drops it, not when the next execution replaces the last)."""
    from clnn.capabilities_workloads import while_model

    model, inputs = while_model(16, 3)
    pm = cl_device.prepare_model(model)
    request = make_request(model, inputs)
    assert pm.execute_synchronously(request).status == ErrorStatus.NONE
    out = np.frombuffer(request.pools[1].view(), np.float32, 16 * 16)
    np.testing.assert_array_equal(out, np.full(16 * 16, 4.5, np.float32))
    kept = pm.last_execution
    assert kept is not None and kept.device_outputs == {} and kept.held == []

def test_a_nested_execution_shares_the_queue_not_the_outputs(cl_device):
    pm = cl_device.prepare_model(relu_tanh())
    outer = Execution(pm, cl_device.queue, device_outputs={0: "memory"}, events=[],
                      keep_all=True)
    inner = outer.nested(None)
    assert inner.queue is outer.queue and inner.prepared is pm
    assert inner.device_outputs == {} and inner.events is None and not inner.keep_all


@pytest.mark.parametrize("chains", [False, True])
def test_results_are_the_same_whichever_runner(chains):
    from tests.cl.test_cl_chain import block_model

    dev = open_or_skip("opencl", fallback=False,
                       options=DeviceOptions(chains=chains, chain_min_launches=2))
    model, inputs = block_model(7)
    pm = dev.prepare_model(model)
    assert isinstance(pm.runner, Chained if chains else OneByOne)
    pm.wait_chains()
    assert bool(pm.chains()) == chains
    for g, r in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(g, r, "f32")
