"""Partition inputs read from buffers of their own (clnn.launch.DirectInput): on PoCL (a CPU
sharing the host's memory) an execution binds the request's memory itself to the kernels
(CL_MEM_USE_HOST_PTR), tensors on the device and host arrays of another layout are copied into
the input's buffer, and the kernels point back at that buffer after each execution. Inputs
with views of their bytes stay in the pool."""

from __future__ import annotations

import numpy as np
import pytest

from clnn import launch as cl_launch
from hal.builder import make_request
from hal.errors import ErrorStatus
from hal.types import Model
from tests.kits.cl_compare import outputs_of, run_ref
from tests.kits.control_flow_models import F32, Graph
from tests.kits.devices import open_or_skip


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device without fallback and without the layout pass (clnn/layout.py, tested
    in test_cl_layout.py and by the CTS): this module's NCHW cases run the NCHW kernels."""
    return open_or_skip("opencl", fallback=False, nhwc=False)


def two_input_model(view=False):
    """y = tanh(x) + relu(z) (x: [2, 3], z: [2, 3]); ``view``: relu reads RESHAPE(z) (a view
    of z's bytes)."""
    g = Graph(bytearray())
    x, z = g.input(F32, [2, 3]), g.input(F32, [2, 3])
    a, b = g.add(F32, [2, 3]), g.add(F32, [2, 3])
    g.op("TANH", [x], [a])
    src = z
    if view:
        src = g.add(F32, [3, 2])
        g.op("RESHAPE", [z, g.const("TENSOR_INT32", [2], [3, 2])], [src])
        r = g.add(F32, [3, 2])
        g.op("RELU", [src], [r])
        g.op("RESHAPE", [r, g.const("TENSOR_INT32", [2], [2, 3])], [b])
    else:
        g.op("RELU", [src], [b])
    g.op("ADD", [a, b, g.const("INT32", [], 0)], [g.output(F32, [2, 3])])
    return Model(g.subgraph(), [], bytes(g.values))


def data(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2)]


@pytest.fixture
def direct_on(monkeypatch):
    """Direct inputs whatever the device (PoCL takes them anyway; Oclgrind, which says its
    memory is not the host's, then runs the same kernels on buffers over host arrays)."""
    import clnn.plan

    monkeypatch.setattr(clnn.plan, "direct_inputs_on", lambda cl_device, options=None: True)


def test_taken_where_the_device_shares_the_hosts_memory(cl_device):
    import pyopencl as cl

    d = cl_device.cl_device
    shared = bool(d.type & cl.device_type.CPU) and bool(d.host_unified_memory)
    assert cl_launch.direct_inputs_on(d) == shared


def plans(pm):
    return [pl for p in pm.partitions for pl in p.plans.values() if pl is not None]


def test_inputs_are_bound_not_uploaded(cl_device, direct_on, monkeypatch):
    """Every execution (the first of a request layout on the general path, the next ones on
    the short path: clnn.launch.enqueue_bound) points the kernels at buffers over the
    request's own input bytes, then back at the inputs' own buffers."""
    m = two_input_model()
    pm = cl_device.prepare_model(m)
    (plan,) = plans(pm)
    x, z = m.main.input_indexes
    assert set(plan.direct) == {x, z} and not plan.uploads
    pointed = []
    point = cl_launch.DirectInput.point

    def spy(self, target):
        pointed.append(None if target is self.buffer else
                       target.get_host_array((1,), np.uint8).ctypes.data)
        point(self, target)

    monkeypatch.setattr(cl_launch.DirectInput, "point", spy)
    for seed in range(3):  # every execution its own inputs, each read where it lies
        inputs = data(seed)
        req = make_request(m, inputs)
        pointed.clear()
        assert pm.execute_synchronously(req).status == ErrorStatus.NONE
        got = np.frombuffer(req.pools[1].view(), np.float32, 6).reshape(2, 3)
        np.testing.assert_allclose(got, run_ref(m, inputs)[0], rtol=1e-6, atol=1e-6)
        where = [np.frombuffer(req.pools[a.location.pool_index].view(), np.uint8).ctypes.data
                 + a.location.offset for a in req.inputs]
        assert sorted(pointed[:2]) == sorted(where) and pointed[2:] == [None, None], pointed
    for d in plan.direct.values():  # and the kernels point back at the input's own buffer
        assert d.slots and all(launch.kernel is not None for launch, _ in d.slots)


def test_pointed_back_after_each_execution(cl_device, direct_on, monkeypatch):
    m = two_input_model()
    pm = cl_device.prepare_model(m)
    (plan,) = plans(pm)
    pointed = []
    point = cl_launch.DirectInput.point

    def spy(self, target):
        pointed.append(target is self.buffer)
        point(self, target)

    monkeypatch.setattr(cl_launch.DirectInput, "point", spy)
    outputs_of(m, pm, data())
    # bound to the request's memory (False), then back to the own buffer (True), per input
    assert pointed == [False, False, True, True]


def test_an_array_of_another_layout_is_copied(cl_device, direct_on):
    m = two_input_model()
    pm = cl_device.prepare_model(m)
    (plan,) = plans(pm)
    d = next(iter(plan.direct.values()))
    keep = []
    x = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    d.bind(pm.queue, x, keep)
    pm.queue.finish()
    got = np.empty(6, np.float32)
    import pyopencl as cl

    cl.enqueue_copy(pm.queue, got, d.buffer)
    np.testing.assert_array_equal(got, np.ascontiguousarray(x).reshape(-1))
    d.unbind()


def test_a_viewed_input_stays_in_the_pool(cl_device, direct_on):
    m = two_input_model(view=True)
    pm = cl_device.prepare_model(m)
    (plan,) = plans(pm)
    x, z = m.main.input_indexes
    assert x in plan.direct and z not in plan.direct and z in dict(plan.uploads)
    inputs = data()
    for got, want in zip(outputs_of(m, pm, inputs), run_ref(m, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_switched_off():
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions

    dev = ClDevice(fallback=False, options=DeviceOptions(direct_inputs=False))
    m = two_input_model()
    pm = dev.prepare_model(m)
    (plan,) = plans(pm)
    assert not plan.direct and len(plan.uploads) == 2
    inputs = data()
    np.testing.assert_allclose(outputs_of(m, pm, inputs)[0], run_ref(m, inputs)[0],
                               rtol=1e-6, atol=1e-6)
