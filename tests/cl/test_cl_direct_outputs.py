"""Model outputs written by the kernels into buffers of their own (clnn.launch.DirectOutput,
clnn.passes.memory.direct_outputs): on a device sharing the host's memory an execution points
the kernels at the request's memory, so nothing is read back after them; an output that does
not fit its request bytes (OUTPUT_INSUFFICIENT_SIZE), one whose bytes overlap an input's, one
in a device memory, and the runs without a request (no host bytes to write) keep the read or
the copy, with the reference's results every time."""

from __future__ import annotations

import numpy as np
import pytest

from clnn import launch as cl_launch
from hal.types import DataLocation, HostMemory, Model, Request, RequestArgument
from tests.cl.test_cl_direct_inputs import data, plans, two_input_model
from tests.kits.cl_compare import outputs_of, run_ref
from tests.kits.control_flow_models import F32, Graph
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import make_request
from tests.kits.queue_waits import record_waits

TOL = {"rtol": 1e-6, "atol": 1e-6}


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback; the module's cases need one sharing the host's
    memory (PoCL's CPU device), where outputs are direct."""
    dev = open_or_skip("opencl", fallback=False, nhwc=False)
    if not cl_launch.host_memory_shared(dev.cl_device):
        pytest.skip("direct outputs are taken on devices sharing the host's memory only")
    return dev


def _reads(monkeypatch) -> list:
    """The reads from the device into host arrays made from now on (their byte counts)."""
    import pyopencl as cl

    reads, copy = [], cl.enqueue_copy

    def spy(queue, dest, src, **kw):
        if isinstance(dest, (np.ndarray, memoryview)):  # (memoryview: the short path's)
            reads.append(dest.nbytes)
        return copy(queue, dest, src, **kw)

    monkeypatch.setattr(cl, "enqueue_copy", spy)
    return reads


def test_the_output_leaves_the_pool(cl_device):
    m = two_input_model()
    (plan,) = plans(cl_device.prepare_model(m))
    (y,) = m.main.output_indexes
    assert set(plan.direct_out) == {y} and y not in plan.memory.offsets
    assert plan.memory.direct_out == {y: 24} and plan.direct_out[y].slots


def test_written_into_the_request_not_read_back(cl_device, monkeypatch):
    m = two_input_model()
    pm = cl_device.prepare_model(m)
    (plan,) = plans(pm)
    reads = _reads(monkeypatch)
    for seed in range(3):  # every execution into its own request's bytes
        inputs = data(seed)
        np.testing.assert_allclose(outputs_of(m, pm, inputs)[0], run_ref(m, inputs)[0], **TOL)
    assert reads == []
    # the kernels point back at the output's own buffer after each execution
    assert plan.direct_out[m.main.output_indexes[0]].bound is None


def test_a_run_without_a_request_reads_the_own_buffer(cl_device, monkeypatch):
    m = two_input_model()
    pm = cl_device.prepare_model(m)
    outputs_of(m, pm, data(1))  # (bound once, then pointed back)
    reads = _reads(monkeypatch)
    inputs = data(2)
    (got,) = pm.run(inputs)
    np.testing.assert_allclose(got, run_ref(m, inputs)[0], **TOL)
    assert reads == [24]
    values = pm.run_keeping_all(inputs)
    np.testing.assert_allclose(values[m.main.output_indexes[0]], run_ref(m, inputs)[0], **TOL)


def test_insufficient_then_sufficient(cl_device):
    m = two_input_model()
    pm = cl_device.prepare_model(m)
    inputs = data(3)
    r = pm.execute_synchronously(make_request(m, inputs, out_sizes=[8]))
    assert r.status.name == "OUTPUT_INSUFFICIENT_SIZE"
    assert [(s.dimensions, s.is_sufficient) for s in r.output_shapes] == [((2, 3), False)]
    np.testing.assert_allclose(outputs_of(m, pm, inputs)[0], run_ref(m, inputs)[0], **TOL)


def two_output_model():
    """a = tanh(x), b = relu(x) (x: [2, 3]): the two outputs, the kernel writing a runs before
    the one reading x for b."""
    g = Graph(bytearray())
    x = g.input(F32, [2, 3])
    g.op("TANH", [x], [g.output(F32, [2, 3])])
    g.op("RELU", [x], [g.output(F32, [2, 3])])
    return Model(g.subgraph(), [], bytes(g.values))


def test_an_output_over_an_input_is_copied_after(cl_device):
    """Output a's bytes are input x's (one pool): the kernels must not write them while a
    later kernel reads x, so a is written there once the execution is done."""
    m = two_output_model()
    pm = cl_device.prepare_model(m)
    x = data(4)[0]
    want = run_ref(m, [x])
    pool = HostMemory(bytes(x.tobytes() + bytes(24)))
    req = Request([RequestArgument(False, DataLocation(0, 0, 24), ())],
                  [RequestArgument(False, DataLocation(0, 0, 24), ()),
                   RequestArgument(False, DataLocation(0, 24, 24), ())], [pool])
    assert pm.execute_synchronously(req).status.name == "NONE"
    got = np.frombuffer(pool.view(), np.float32, 12).reshape(2, 2, 3)
    np.testing.assert_allclose(got[0], want[0], **TOL)
    np.testing.assert_allclose(got[1], want[1], **TOL)


def test_a_device_memory_output(cl_device):
    """An output in a device memory (clnn.memory.ClBuffer) is copied there on the device."""
    from hal.types import BufferDesc, BufferRole

    m = two_input_model()
    pm = cl_device.prepare_model(m)
    inputs = data(5)
    mem = cl_device.allocate(BufferDesc(), [pm], [], [BufferRole(0, 0)])
    req = make_request(m, inputs)
    req = Request(req.inputs, [RequestArgument(False, DataLocation(2, 0, 0), ())],
                  [*req.pools, mem])
    r = pm.execute_synchronously(req)
    assert r.status.name == "NONE", r
    host = HostMemory(24)
    assert mem.copy_to(host).name == "NONE"
    got = np.frombuffer(bytes(host.view()), np.float32).reshape(2, 3)
    np.testing.assert_allclose(got, run_ref(m, inputs)[0], **TOL)


def test_switched_off(monkeypatch):
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions

    dev = ClDevice(fallback=False, options=DeviceOptions(direct_outputs=False))
    m = two_input_model()
    pm = dev.prepare_model(m)
    (plan,) = plans(pm)
    assert not plan.direct_out
    reads = _reads(monkeypatch)
    inputs = data()
    np.testing.assert_allclose(outputs_of(m, pm, inputs)[0], run_ref(m, inputs)[0], **TOL)
    assert reads == [24]


def test_chained_launches_write_the_request(monkeypatch):
    """Plans run as chains (clnn/chain.py): the chain's argument is pointed at the request's
    memory too, the chained launches' own kernels are not made for it (clnn.launch.Launch.defer:
    the prepare's zero execution binds the output too), and an execution that measures (its
    launches one by one, their kernels made then) writes the request's memory as well."""
    from clnn.chain import Chain
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions
    from hal.types import MeasureTiming

    dev = ClDevice(fallback=False, options=DeviceOptions(chains=True, chain_min_launches=2))
    m = two_input_model()
    pm = dev.prepare_model(m)
    pm.wait_chains()
    if not pm.chains():
        pytest.skip("no chain built for this plan")
    (plan,) = plans(pm)
    d = plan.direct_out[m.main.output_indexes[0]]
    assert any(isinstance(step, Chain) for step, _ in d.slots)
    deferred = [la.kernel is None for la in plan.launches]
    reads = _reads(monkeypatch)
    for seed in range(3):
        inputs = data(seed)
        np.testing.assert_allclose(outputs_of(m, pm, inputs)[0], run_ref(m, inputs)[0], **TOL)
    assert reads == [] and [la.kernel is None for la in plan.launches] == deferred
    for seed in range(3, 5):
        inputs = data(seed)
        req = make_request(m, inputs)
        assert pm.execute_synchronously(req, MeasureTiming.YES).status.name == "NONE"
        got = np.frombuffer(req.pools[1].view(), np.float32, 6).reshape(2, 3)
        np.testing.assert_allclose(got, run_ref(m, inputs)[0], **TOL)
    assert reads == []


@pytest.mark.parametrize("n,iterations", [(16, 0), (16, 1), (16, 3), (16, 8), (16, 17),
                                          (512, 9)])
def test_a_while_leaves_its_output_in_the_request(cl_device, monkeypatch, n, iterations):
    """A host-driven loop (counter and test on the host) computes each next condition before
    its body's kernels: the last body writes the model output into the request's memory
    (one wait, nothing read back); a loop that runs no body reads its input back. The
    reference's results every time (17 iterations: past a Gate's 16)."""
    from clnn.capabilities_workloads import while_model

    m, inputs = while_model(n, iterations)
    pm = cl_device.prepare_model(m)
    np.testing.assert_array_equal(outputs_of(m, pm, inputs)[0], run_ref(m, inputs)[0])
    waits = record_waits(monkeypatch)
    req = make_request(m, inputs)
    assert pm.execute_synchronously(req).status.name == "NONE"
    out = np.frombuffer(req.pools[1].view(), np.float32, n * n)
    np.testing.assert_array_equal(out, np.full(n * n, 1.5 * iterations, np.float32))
    assert waits == (["finish"] if iterations else ["read"]), waits


def test_a_while_whose_body_runs_on_the_host_only(cl_device):
    """A body of scalar operations only (1 x 1 x 1 tensors: every operation on the host): the
    next condition is computed at the body's end, the loop ends as the reference's."""
    from clnn.capabilities_workloads import while_model

    m, inputs = while_model(1, 5)
    pm = cl_device.prepare_model(m)
    for _ in range(2):
        got = outputs_of(m, pm, inputs)[0]
        np.testing.assert_array_equal(got, run_ref(m, inputs)[0])
        assert got.reshape(-1).tolist() == [7.5]


def reshaped_output_model(second_view=False):
    """y = RESHAPE(tanh(x) + z) (x, z: [2, 3]; y: [3, 2]): the output is a view of the ADD's
    bytes; ``second_view``: a second output, another RESHAPE of the same ADD ([6])."""
    g = Graph(bytearray())
    x, z = g.input(F32, [2, 3]), g.input(F32, [2, 3])
    a, s = g.add(F32, [2, 3]), g.add(F32, [2, 3])
    g.op("TANH", [x], [a])
    g.op("ADD", [a, z, g.const("INT32", [], 0)], [s])
    g.op("RESHAPE", [s, g.const("TENSOR_INT32", [2], [3, 2])], [g.output(F32, [3, 2])])
    if second_view:
        g.op("RESHAPE", [s, g.const("TENSOR_INT32", [1], [6])], [g.output(F32, [6])])
    return Model(g.subgraph(), [], bytes(g.values))


def test_an_output_that_is_a_view_is_written_through_its_source(cl_device, monkeypatch):
    m = reshaped_output_model()
    pm = cl_device.prepare_model(m)
    (plan,) = plans(pm)
    (y,) = m.main.output_indexes
    (src,) = plan.memory.direct_views
    # the ADD writes the output's buffer: neither the view nor its source has pool bytes
    assert plan.memory.direct_views == {src: y} and set(plan.direct_out) == {y}
    assert src not in plan.memory.offsets and y not in plan.memory.offsets
    reads = _reads(monkeypatch)
    for seed in range(3):
        inputs = data(seed)
        np.testing.assert_allclose(outputs_of(m, pm, inputs)[0], run_ref(m, inputs)[0], **TOL)
    assert reads == []
    inputs = data(4)  # without a request: read from the output's own buffer
    np.testing.assert_allclose(pm.run(inputs)[0], run_ref(m, inputs)[0], **TOL)
    values = pm.run_keeping_all(inputs)
    np.testing.assert_allclose(values[y], run_ref(m, inputs)[0], **TOL)


def test_two_views_of_one_source_stay_in_the_pool(cl_device):
    m = reshaped_output_model(second_view=True)
    pm = cl_device.prepare_model(m)
    (plan,) = plans(pm)
    assert plan.direct_out == {} and plan.memory.direct_views == {}
    inputs = data(5)
    for got, want in zip(outputs_of(m, pm, inputs), run_ref(m, inputs)):
        np.testing.assert_allclose(got, want, **TOL)
