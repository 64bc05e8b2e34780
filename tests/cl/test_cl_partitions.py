"""Partition structure on the OpenCL device: tensors passed from one OpenCL partition to a
later one stay in device memory (around a partition on the host), and RESHAPE / SQUEEZE /
EXPAND_DIMS / identity CAST are views of their input's pool bytes (no launch)."""

from __future__ import annotations

import numpy as np
import pytest

from clnn.memory import PoolTensor
from hal.types import Model, OperationType
from tests.kits.cl_compare import outputs_of, run_ref
from tests.kits.control_flow_models import F32, Graph


def around_host_model():
    """a = relu(x); b = logistic(a) (declined: on the host); y = a + b."""
    g = Graph(bytearray())
    x = g.input(F32, [2, 3])
    a, b = g.add(F32, [2, 3]), g.add(F32, [2, 3])
    g.op("RELU", [x], [a])
    g.op("LOGISTIC", [a], [b])
    g.op("ADD", [a, b, g.const("INT32", [], 0)], [g.output(F32, [2, 3])])
    return Model(g.subgraph(), [], bytes(g.values))


@pytest.fixture
def fallback_device(monkeypatch):
    from clnn.device import ClDevice

    original = ClDevice.unsupported_reason_in

    def decline_logistic(self, model, sg, k, operation):
        if operation.type == OperationType.LOGISTIC:
            return "declined by the test"
        return original(self, model, sg, k, operation)

    monkeypatch.setattr(ClDevice, "unsupported_reason_in", decline_logistic)
    return ClDevice(fallback=True)


def test_tensor_between_opencl_partitions_stays_on_the_device(fallback_device, monkeypatch):
    import clnn.execution as execution_module

    m = around_host_model()
    pm = fallback_device.prepare_model(m)
    assert [p.on_cl for p in pm.partitions] == [True, False, True]
    assert pm.partitions[0].resident == {1}  # read by the last partition
    seen = {}
    enqueue = execution_module.enqueue_plan

    def spy(queue, plan, values, *args, **kw):
        # (uploaded into the pool, or bound as a direct input: clnn.launch.DirectInput)
        seen.update({i: type(values[i]) for i in [*(i for i, _ in plan.uploads), *plan.direct]})
        return enqueue(queue, plan, values, *args, **kw)

    monkeypatch.setattr(execution_module, "enqueue_plan", spy)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    (y,) = outputs_of(m, pm, [x])
    # operand 1 reaches the last partition as device memory; operand 2 comes from the host
    assert seen[1] is PoolTensor and seen[2] is np.ndarray
    np.testing.assert_allclose(y, run_ref(m, [x])[0], rtol=1e-6, atol=1e-6)


def view_model(view: str):
    """y = tanh(VIEW(relu(x))) over float32 [2, 3] -> [3, 2] / [2, 3] / [1, 2, 3] / [2, 3]."""
    g = Graph(bytearray())
    x = g.input(F32, [2, 3])
    a = g.add(F32, [2, 3])
    g.op("RELU", [x], [a])
    if view == "RESHAPE":
        shape, params = [3, 2], [g.const("TENSOR_INT32", [2], [3, 2])]
    elif view == "SQUEEZE":
        shape, params = [2, 3], []  # no axes: every dimension of size 1 (none here)
    elif view == "CAST":  # to its own type: the identity cast of HAL 1.3
        shape, params = [2, 3], []
    else:
        shape, params = [1, 2, 3], [g.const("INT32", [], 0)]
    v = g.add(F32, shape)
    g.op(view, [a, *params], [v])
    g.op("TANH", [v], [g.output(F32, shape)])
    return Model(g.subgraph(), [], bytes(g.values))


@pytest.mark.parametrize("view", ["RESHAPE", "SQUEEZE", "EXPAND_DIMS", "CAST"])
def test_reshape_like_operations_are_views(cl_device, view):
    m = view_model(view)
    v = m.main.operations[1].outputs[0]
    pm = cl_device.prepare_model(m)
    ((plan,),) = [list(p.plans.values()) for p in pm.partitions]
    assert [launch.op_index for launch in plan.launches] == [0, 2]  # none for the view
    assert plan.views == {v: 1}
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    (y,) = outputs_of(m, pm, [x])
    np.testing.assert_allclose(y, run_ref(m, [x])[0], rtol=1e-6, atol=1e-6)
    values = pm.run_keeping_all([x])  # the view's value, read from its input's bytes
    np.testing.assert_array_equal(values[v], np.maximum(x, 0).reshape(values[v].shape))


def test_a_view_keeps_its_bytes_alive(cl_device):
    """x -> relu -> a -> RESHAPE -> v; a long chain after it must not reuse a's bytes while
    v is still read at the end."""
    g = Graph(bytearray())
    x = g.input(F32, [4, 4])
    a = g.add(F32, [4, 4])
    g.op("RELU", [x], [a])
    v = g.add(F32, [16])
    g.op("RESHAPE", [a, g.const("TENSOR_INT32", [1], [16])], [v])
    prev = x
    for _ in range(4):  # tensors of the same size, each dead after the next: they would
        nxt = g.add(F32, [4, 4])  # take a's bytes if the view did not extend a's life
        g.op("TANH", [prev], [nxt])
        prev = nxt
    flat = g.add(F32, [16])
    g.op("RESHAPE", [prev, g.const("TENSOR_INT32", [1], [16])], [flat])
    g.op("ADD", [v, flat, g.const("INT32", [], 0)], [g.output(F32, [16])])
    m = Model(g.subgraph(), [], bytes(g.values))
    x = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32)
    (y,) = outputs_of(m, cl_device.prepare_model(m), [x])
    np.testing.assert_allclose(y, run_ref(m, [x])[0], rtol=1e-6, atol=1e-6)


def test_a_constant_is_copied_not_viewed(cl_device):
    g = Graph(bytearray())
    c = g.const(F32, [2, 3], np.arange(6, dtype=np.float32).reshape(2, 3))
    v = g.add(F32, [6])
    g.op("RESHAPE", [c, g.const("TENSOR_INT32", [1], [6])], [v])
    x = g.input(F32, [6])
    g.op("ADD", [v, x, g.const("INT32", [], 0)], [g.output(F32, [6])])
    m = Model(g.subgraph(), [], bytes(g.values))
    pm = cl_device.prepare_model(m)
    x = np.ones(6, np.float32)
    (y,) = outputs_of(m, pm, [x])
    np.testing.assert_array_equal(y, np.arange(6) + 1.0)
    ((plan,),) = [list(p.plans.values()) for p in pm.partitions]
    assert not plan.views and len(plan.launches) == 2
