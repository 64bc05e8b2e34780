"""The scalar operations of IF / WHILE subgraphs on the host (clnn/control_flow/
host_scalar_ops): a loop's counter and its test run there, so a WHILE launches only its
tensors' kernels, reads no condition back, and equals the reference; an operation reading a
tensor the device computes stays on the device; ``host_scalars`` off puts them back on the
device."""

from __future__ import annotations

import time

import numpy as np
import pytest

from clnn.capabilities_workloads import while_model
from clnn.control_flow import host_scalar_ops
from clnn.launch import host_memory_shared
from clnn.options import DeviceOptions, from_environ
from hal.errors import ErrorStatus
from tests.kits.control_flow_models import F32, Graph
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import make_request, run

N, ITERATIONS = 16, 5


def _inputs():
    x = np.arange(N * N, dtype=np.float32).reshape(1, N, N)
    return [x, np.zeros(1, np.int32), np.full(1, ITERATIONS, np.int32)]


def _counted(monkeypatch):
    """(launches, host reads): the kernel launches and the reads into host arrays made."""
    import pyopencl as cl

    import clnn.launch.launches

    launches, reads = [], []
    launch, copy = clnn.launch.launches.enqueue_launch, cl.enqueue_copy

    def counted_launch(queue, step, events=None):
        launches.append(step)
        return launch(queue, step, events)

    def counted_copy(queue, dest, src, **kw):
        if isinstance(dest, np.ndarray):
            reads.append(dest.nbytes)
        return copy(queue, dest, src, **kw)

    monkeypatch.setattr(clnn.launch.launches, "enqueue_launch", counted_launch)
    monkeypatch.setattr(cl, "enqueue_copy", counted_copy)
    return launches, reads


def test_the_counter_and_its_test_are_host_operations():
    model, _ = while_model(N)
    cond, body = model.referenced
    assert host_scalar_ops(cond) == {0}  # LESS(i, n)
    assert host_scalar_ops(body) == {1}  # i + 1, not the 16 x 16 ADD


def test_an_operation_on_a_device_result_stays_on_the_device():
    """LESS(MEAN(x), limit): MEAN reads a 1 KiB tensor, LESS its result."""
    g = Graph(bytearray())
    x = g.input(F32, [16, 16])
    top = g.add(F32, [1, 1])
    g.op("MEAN", [x, g.const("TENSOR_INT32", [2], [0, 1]), g.const("INT32", [], 1)], [top])
    g.op("LESS", [top, g.const(F32, [1], [3.0])], [g.output("TENSOR_BOOL8", [1, 1])])
    assert host_scalar_ops(g.subgraph()) == set()


@pytest.mark.parametrize("on_host", [True, False])
def test_while_launches_only_its_tensor_kernels(monkeypatch, on_host):
    """On the host: one launch per iteration (the 16 x 16 ADD), no condition read back, only
    the model output read (nothing on a device sharing the host's memory, whose last body
    writes it into the request: clnn.control_flow.host_loops.host_loop); off: the counter's and the
    test's kernels too, and the conditions read back."""
    device = open_or_skip("opencl", fallback=False,
                          options=DeviceOptions(host_scalars=on_host))
    model, _ = while_model(N)
    want = run(model, _inputs())
    prepared = device.prepare_model(model)
    launches, reads = _counted(monkeypatch)  # (those of the execution, not the prepare's)
    request = make_request(model, _inputs())
    assert prepared.execute_synchronously(request).status == ErrorStatus.NONE
    got = np.frombuffer(request.pools[1].view()[:N * N * 4], np.float32).reshape(1, N, N)
    np.testing.assert_array_equal(got, want[0])
    if on_host:
        shared = host_memory_shared(device.cl_device)
        assert len(launches) == ITERATIONS and reads == ([] if shared else [N * N * 4]), \
            (launches, reads)
    else:
        assert len(launches) > 2 * ITERATIONS and reads.count(1) >= ITERATIONS, reads


def test_zero_iterations_return_the_input(cl_device):
    model, _ = while_model(N)
    inputs = _inputs()
    inputs[2] = np.zeros(1, np.int32)
    (got,) = run(model, inputs, cl_device)
    np.testing.assert_array_equal(got, inputs[0])


def test_the_option_reads_its_variable():
    assert from_environ({"CLNN_HOST_SCALARS": "0"}).host_scalars is False
    assert from_environ({}).host_scalars is True


def test_a_long_loop_is_enqueued_in_gated_batches(cl_device, monkeypatch):
    """40 iterations, the condition on the host: the host parts of GATE_ITERATIONS iterations
    computed first, then their device partitions held back behind a gate (3 gates for 40
    iterations: 16, 16, 8), the result the reference's."""
    import clnn.control_flow as cf

    holds = []
    hold = cf.Gate.hold
    monkeypatch.setattr(cf.Gate, "hold", lambda self: (holds.append(1), hold(self))[1])
    model, inputs = while_model(N, 40)
    got, want = run(model, inputs, cl_device), run(model, inputs)
    np.testing.assert_array_equal(got[0], want[0])
    assert len(holds) == -(-41 // cf.GATE_ITERATIONS)


def test_a_gated_long_loop_misses_its_timeout_and_frees_the_queue(cl_device):
    """i < 2**31 - 1 on the host: MISSED_DEADLINE_TRANSIENT after the loop timeout, the gate
    released (the queue finishes)."""
    from tests.kits.one_op_models import execute

    model, inputs = while_model(N)
    inputs[2] = np.full(1, 2**31 - 1, np.int32)
    t0 = time.monotonic()
    status, _, _ = execute(model, inputs, cl_device, loop_timeout_duration=50_000_000)
    assert status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    cl_device.queue.finish()
    assert time.monotonic() - t0 < 10.0


def test_a_batch_computes_its_host_parts_before_its_kernels(cl_device, monkeypatch):
    """20 iterations: the counters and conditions of the first GATE_ITERATIONS iterations
    (and the condition after them) are computed before the first of their kernels is
    enqueued, then the last four's before theirs; the result the reference's."""
    import clnn.control_flow as cf
    import clnn.launch.launches

    order = []
    run_op, launch = cf.ScalarOp.run, clnn.launch.launches.enqueue_launch
    monkeypatch.setattr(cf.ScalarOp, "run",
                        lambda self, values: (order.append("host"), run_op(self, values))[1])
    monkeypatch.setattr(clnn.launch.launches, "enqueue_launch",
                        lambda queue, step, events=None: (order.append("launch"),
                                                          launch(queue, step, events))[1])
    model, inputs = while_model(N, 20)
    pm = cl_device.prepare_model(model)
    order.clear()  # (the prepare's warm-up launches)
    request = make_request(model, inputs)
    assert pm.execute_synchronously(request).status == ErrorStatus.NONE
    got = np.frombuffer(request.pools[1].view()[:N * N * 4], np.float32).reshape(1, N, N)
    np.testing.assert_array_equal(got, run(model, inputs)[0])
    b = cf.GATE_ITERATIONS
    # the first condition, then per iteration the counter and the next condition
    assert order == ["host"] * (1 + 2 * b) + ["launch"] * b + \
        ["host"] * (2 * (20 - b)) + ["launch"] * (20 - b), order
