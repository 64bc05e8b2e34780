"""Control-flow outputs left in their subgraphs' pools (clnn/control_flow/: a WHILE body's two
runs taking turns, outputs handed on as regions of their pools) against the reference device,
where a subgraph runs again while an output is read: two WHILEs with one body, two IFs with
one branch, a WHILE whose condition is its body, a loop inside a loop."""

from __future__ import annotations

import numpy as np
import pytest

from clnn.control_flow import reruns
from clnn.options import DeviceOptions
from hal.types import Model
from tests.kits.control_flow_models import F32, Graph
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import run


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device with the scalar operations of subgraphs on the device too: these
    tests' models are of a few elements, whose loops would otherwise run on the host
    (clnn/control_flow/ host_scalar_ops, tests/cl/test_cl_host_scalars.py)."""
    return open_or_skip("opencl", fallback=False, options=DeviceOptions(host_scalars=False))


def _same(model, inputs, device):
    got, want = run(model, inputs, device), run(model, inputs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    return got


def _counter(values):
    """(cond, body) of WHILE (i < n) { acc = acc * 2 + 1; i += 1 } on acc [3]."""
    cond, body = Graph(values), Graph(values)
    cond.input(F32, [3])
    c_i, c_n = cond.input("TENSOR_INT32", [1]), cond.input("TENSOR_INT32", [1])
    cond.op("LESS", [c_i, c_n], [cond.output("TENSOR_BOOL8", [1])])
    b_acc, b_i = body.input(F32, [3]), body.input("TENSOR_INT32", [1])
    body.input("TENSOR_INT32", [1])
    o_acc, o_i = body.output(F32, [3]), body.output("TENSOR_INT32", [1])
    act, twice = body.const("INT32", [], 0), body.add(F32, [3])
    body.op("MUL", [b_acc, body.const(F32, [1], [2.0]), act], [twice])
    body.op("ADD", [twice, body.const(F32, [1], [1.0]), act], [o_acc])
    body.op("ADD", [b_i, body.const("TENSOR_INT32", [1], [1]), act], [o_i])
    return cond, body


def _while(main, cref, bref, out=None):
    acc0, i0, n = (main.input(F32, [3]), main.input("TENSOR_INT32", [1]),
                   main.input("TENSOR_INT32", [1]))
    acc = main.output(F32, [3]) if out is None else out
    main.op("WHILE", [cref, bref, acc0, i0, n], [acc, main.add("TENSOR_INT32", [1])])
    return acc


def _loop_inputs(start: float, n: int) -> list:
    return [np.float32([start, -start, 0.5]), np.int32([0]), np.int32([n])]


def test_two_whiles_with_one_body(cl_device):
    """The first loop's outputs are read after the second loop ran the same body."""
    values = bytearray()
    cond, body = _counter(values)
    main = Graph(values)
    _while(main, main.ref(0), main.ref(1))
    _while(main, main.ref(0), main.ref(1))
    m = Model(main.subgraph(), [cond.subgraph(), body.subgraph()], bytes(values))
    first, second = _same(m, _loop_inputs(1.0, 5) + _loop_inputs(3.0, 4), cl_device)
    np.testing.assert_allclose(first, [63.0, -1.0, 47.0])  # x -> 2x + 1, five times
    assert reruns(cl_device.prepare_model(m)).loops == set()


def test_one_while_leaves_its_outputs_in_the_body_pools(cl_device):
    values = bytearray()
    cond, body = _counter(values)
    main = Graph(values)
    _while(main, main.ref(0), main.ref(1))
    m = Model(main.subgraph(), [cond.subgraph(), body.subgraph()], bytes(values))
    for n in (0, 1, 2, 7):
        _same(m, _loop_inputs(1.0, n), cl_device)
    pm = cl_device.prepare_model(m)
    assert reruns(pm).loops == {1}
    first, second = pm.subgraph_runs[1].planner, pm.subgraph_runs[1, 1].planner
    assert second.const_buffer is first.const_buffer  # the body's two runs share constants


def test_two_ifs_with_one_branch(cl_device):
    """The first IF's output is read after the second IF ran the same branch."""
    values = bytearray()
    then, other = Graph(values), Graph(values)
    for g, op in ((then, "ADD"), (other, "MUL")):
        x = g.input(F32, [3])
        g.op(op, [x, g.const(F32, [1], [3.0]), g.const("INT32", [], 0)], [g.output(F32, [3])])
    main = Graph(values)
    cond = main.input("TENSOR_BOOL8", [1])
    for _ in range(2):
        main.op("IF", [cond, main.ref(0), main.ref(1), main.input(F32, [3])],
                [main.output(F32, [3])])
    m = Model(main.subgraph(), [then.subgraph(), other.subgraph()], bytes(values))
    for c in (True, False):
        a, b = _same(m, [[c], np.float32([1, 2, 3]), np.float32([4, 5, 6])], cl_device)
        assert not np.array_equal(a, b)
    assert reruns(cl_device.prepare_model(m)).once == {None}


def test_a_while_whose_condition_is_its_body(cl_device):
    """WHILE (not b) { b = not b } with one subgraph as both: the body's output, in that
    subgraph's pool, is the condition's input."""
    values = bytearray()
    flip = Graph(values)
    flip.op("LOGICAL_NOT", [flip.input("TENSOR_BOOL8", [1])],
            [flip.output("TENSOR_BOOL8", [1])])
    main = Graph(values)
    main.op("WHILE", [main.ref(0), main.ref(0), main.input("TENSOR_BOOL8", [1])],
            [main.output("TENSOR_BOOL8", [1])])
    m = Model(main.subgraph(), [flip.subgraph()], bytes(values))
    for b in (True, False):
        (out,) = _same(m, [[b]], cl_device)
        assert out.tolist() == [True]


def test_a_loop_inside_a_loop(cl_device):
    """The inner loop's outputs leave its body's pools: the outer body runs it again."""
    values = bytearray()
    cond, body = _counter(values)  # subgraphs 0, 1: the inner loop
    outer = Graph(values)  # subgraph 2: WHILE (j < m) { acc = inner(acc, 0, n); j += 1 }
    acc, j = outer.input(F32, [3]), outer.input("TENSOR_INT32", [1])
    n, steps = outer.input("TENSOR_INT32", [1]), outer.input("TENSOR_INT32", [1])
    o_acc, o_j = outer.output(F32, [3]), outer.output("TENSOR_INT32", [1])
    zero = outer.const("TENSOR_INT32", [1], [0])
    outer.op("WHILE", [outer.ref(0), outer.ref(1), acc, zero, n],
             [o_acc, outer.add("TENSOR_INT32", [1])])
    act = outer.const("INT32", [], 0)
    outer.op("ADD", [j, outer.const("TENSOR_INT32", [1], [1]), act], [o_j])
    del steps
    outer_cond = Graph(values)  # subgraph 3: j < m
    outer_cond.input(F32, [3])
    c_j = outer_cond.input("TENSOR_INT32", [1])
    outer_cond.input("TENSOR_INT32", [1])
    c_m = outer_cond.input("TENSOR_INT32", [1])
    outer_cond.op("LESS", [c_j, c_m], [outer_cond.output("TENSOR_BOOL8", [1])])
    main = Graph(values)
    acc0, j0 = main.input(F32, [3]), main.input("TENSOR_INT32", [1])
    n, m_ = main.input("TENSOR_INT32", [1]), main.input("TENSOR_INT32", [1])
    main.op("WHILE", [main.ref(3), main.ref(2), acc0, j0, n, m_],
            [main.output(F32, [3]), main.add("TENSOR_INT32", [1])])
    subs = [cond.subgraph(), body.subgraph(), outer.subgraph(), outer_cond.subgraph()]
    model = Model(main.subgraph(), subs, bytes(values))
    (out,) = _same(model, [np.float32([1, 0, -1]), np.int32([0]), np.int32([2]),
                           np.int32([3])], cl_device)
    np.testing.assert_allclose(out, [127.0, 63.0, -1.0])  # x -> 4x + 3, three times


def test_an_if_waits_only_for_its_output(cl_device, monkeypatch):
    """The branch's kernel reads the request's input in place (a host array held until the
    execution ends) and, on a device sharing the host's memory, writes its output into the
    request's memory (clnn.launch.DirectOutput): the queue is finished once, nothing read
    back. Elsewhere it leaves its output on the device: the first wait is the output's read,
    and the queue is finished once after it (the held input let go)."""

    from clnn.capabilities_workloads import if_model
    from clnn.launch import host_memory_shared
    from tests.kits.one_op_models import make_request

    m, inputs = if_model(16)
    pm = cl_device.prepare_model(m)
    pm.execute_synchronously(make_request(m, inputs))
    from tests.kits.queue_waits import record_waits

    waits = record_waits(monkeypatch)
    req = make_request(m, inputs)
    r = pm.execute_synchronously(req)
    direct = host_memory_shared(cl_device.cl_device)
    assert r.status.name == "NONE" and waits == (["finish"] if direct else ["read", "finish"]), \
        waits
    out = np.frombuffer(req.pools[1].view(), np.float32, 16 * 16)
    np.testing.assert_array_equal(out, inputs[1].reshape(-1) + 1.5)  # the ADD branch


def _body_runs(monkeypatch, model, inputs, device, body: int = 1) -> int:
    from clnn.control_flow import run as control_flow

    runs = []
    original = control_flow.run_subgraph

    def counted(execution, index, *args, **kw):
        runs.extend([index] if index == body else [])
        return original(execution, index, *args, **kw)

    monkeypatch.setattr(control_flow, "run_subgraph", counted)
    _same(model, inputs, device)
    monkeypatch.setattr(control_flow, "run_subgraph", original)
    return len(runs)


def test_a_body_runs_ahead_of_its_condition(cl_device, monkeypatch):
    """After the first iteration bodies are enqueued before their conditions are read, one
    ahead, then one more per iteration up to RUNS - 1 (a small body has RUNS runs): a loop
    of n iterations runs the body n times and drops those enqueued ahead of its false
    condition, with the reference's results."""
    from clnn.control_flow import RUNS, body_runs

    values = bytearray()
    cond, body = _counter(values)
    main = Graph(values)
    _while(main, main.ref(0), main.ref(1))
    m = Model(main.subgraph(), [cond.subgraph(), body.subgraph()], bytes(values))
    assert body_runs(cl_device.prepare_model(m), 1) == RUNS
    for n in (0, 1, 2, 3, 9):  # the last condition read drops as many as are ahead of it
        want = n + min(n, RUNS - 1)
        assert _body_runs(monkeypatch, m, _loop_inputs(0.5, n), cl_device) == want


def test_a_body_whose_shapes_change_does_not_run_ahead(cl_device, monkeypatch):
    from tests.cl.test_cl_control_flow import grow_model

    m = grow_model()  # x = concat(x, x) three times
    assert _body_runs(monkeypatch, m, [np.float32([1, 2]), np.int32([0])], cl_device) == 3


def test_control_flow_models_read_their_inputs_without_a_copy(cl_device, monkeypatch):
    """Every subgraph an OpenCL partition planned from shapes: the request's inputs are only
    uploaded (an IF's branch reads its input in place, a WHILE uploads its initial values),
    read as views of the request's memory, which stays as it was."""
    import clnn.prepared_model as pm_mod
    from tests.kits.one_op_models import make_request

    seen, real = [], pm_mod.read_inputs
    monkeypatch.setattr(pm_mod, "read_inputs",
                        lambda model, request, copy=True: seen.append(copy) or
                        real(model, request, copy))
    values = bytearray()
    cond, body = _counter(values)
    main = Graph(values)
    _while(main, main.ref(0), main.ref(1))
    loop = Model(main.subgraph(), [cond.subgraph(), body.subgraph()], bytes(values))
    from clnn.capabilities_workloads import if_model

    branch, x = if_model(8)
    for m, inputs in ((loop, _loop_inputs(2.0, 3)), (branch, x)):
        req = make_request(m, inputs)
        before = bytes(req.pools[0].view())
        seen.clear()
        assert cl_device.prepare_model(m).execute_synchronously(req).status.name == "NONE"
        assert seen == [False] and bytes(req.pools[0].view()) == before
        _same(m, inputs, cl_device)


def test_outputs_off_the_sub_buffer_alignment_are_copied(cl_device, monkeypatch):
    """A device whose sub-buffers need a larger alignment than a pool's offsets (a GPU's
    CL_DEVICE_MEM_BASE_ADDR_ALIGN may): the body's outputs are copied into buffers of their
    own instead, with the reference's results. (Outputs in the pools: a device that does not
    share the host's memory, where they are no buffers of their own, clnn.launch.DirectOutput.)
    """
    import clnn.plan as plan_mod
    from clnn.control_flow import subgraphs as control_flow

    monkeypatch.setattr(plan_mod, "host_memory_shared", lambda *a: False)
    values = bytearray()
    cond, body = _counter(values)
    main = Graph(values)
    _while(main, main.ref(0), main.ref(1))
    m = Model(main.subgraph(), [cond.subgraph(), body.subgraph()], bytes(values))
    regions = []
    original = control_flow._region

    def unaligned(run, v):
        run.align = 1 << 30  # no pool offset but 0 is a multiple
        regions.append(original(run, v))
        return regions[-1]

    monkeypatch.setattr(control_flow, "_region", unaligned)
    for n in (1, 4):
        _same(m, _loop_inputs(1.5, n), cl_device)
    assert None in regions  # (the output at offset 0 is still a region)


def test_carried_tensors_are_bound_on_a_device_without_host_memory(cl_device, monkeypatch):
    """A device that does not share the host's memory (a discrete GPU) binds the carried
    tensors too: the subgraphs' inputs are buffers of their own there (a host array copied
    into them, never used in place), and no iteration copies anything."""
    import clnn.plan as plan_mod
    from clnn.capabilities_workloads import if_model
    from tests.cl.test_cl_control_flow import _device_copies

    monkeypatch.setattr(plan_mod, "direct_inputs_on", lambda *a: False)
    per_iteration = (_device_copies(cl_device, monkeypatch, 12) -
                     _device_copies(cl_device, monkeypatch, 4)) / 8
    assert per_iteration == 0, per_iteration
    pm = cl_device.prepare_model(if_model(8)[0])
    (part,) = pm.subgraph_runs[0].partitions
    (plan,) = part.plans.values()
    assert plan.direct and not any(d.host_ptr for d in plan.direct.values())
    branch, inputs = if_model(8)
    _same(branch, inputs, cl_device)
