"""IF and WHILE on the OpenCL device (clnn/control_flow/) against the reference device: the
branches and loop bodies run as OpenCL partitions (no operation on the host), only the
condition is read back, shapes may change across iterations, and the loop timeout and the
deadline hold."""

from __future__ import annotations

import time

import numpy as np
import pytest

from clnn.options import DeviceOptions
from hal.errors import ErrorStatus
from hal.reference.executor import Executor
from hal.types import Model
from tests.kits.control_flow_models import F32, Graph, counter_model
from tests.kits.devices import open_or_skip
from tests.kits.one_op_models import execute, make_request, run

OK = ErrorStatus.NONE


@pytest.fixture(scope="module")
def cl_device():
    """The OpenCL device with the scalar operations of subgraphs on the device too: these
    tests' models are of a few elements, whose loops would otherwise run on the host
    (clnn/control_flow/ host_scalar_ops, tests/cl/test_cl_host_scalars.py)."""
    return open_or_skip("opencl", fallback=False, options=DeviceOptions(host_scalars=False))


@pytest.fixture
def no_host_operations(monkeypatch):
    """Fails the test if an operation of an OpenCL prepared model runs on the host (its
    reference executor, the fallback); the reference device's own runs are not concerned."""
    from clnn.execution import Execution

    inside = []
    run_partition, run_operation = Execution.run_partition, Executor.run_operation

    def partition(self, *args, **kw):
        inside.append(True)
        try:
            return run_partition(self, *args, **kw)
        finally:
            inside.pop()

    def operation(self, sg, op_index, op, values, omitted):
        assert not inside, f"{op.type.name} ran on the host"
        return run_operation(self, sg, op_index, op, values, omitted)

    monkeypatch.setattr(Execution, "run_partition", partition)
    monkeypatch.setattr(Executor, "run_operation", operation)


def _add(g, x, amount, out):
    c = g.const(F32, [1], [amount])
    g.op("ADD", [x, c, g.const("INT32", [], 0)], [out])


def if_model():
    """y = IF(cond) then relu(x) + 10 else x * 2 (each branch two OpenCL operations)."""
    values = bytearray()
    then, other = Graph(values), Graph(values)
    x = then.input(F32, [2, 3])
    t = then.add(F32, [2, 3])
    then.op("RELU", [x], [t])
    _add(then, t, 10.0, then.output(F32, [2, 3]))
    x = other.input(F32, [2, 3])
    t = other.add(F32, [2, 3])
    other.op("TANH", [x], [t])
    two = other.const(F32, [1], [2.0])
    other.op("MUL", [t, two, other.const("INT32", [], 0)], [other.output(F32, [2, 3])])
    main = Graph(values)
    cond = main.input("TENSOR_BOOL8", [1])
    x = main.input(F32, [2, 3])
    y = main.output(F32, [0, 0])
    main.op("IF", [cond, main.ref(0), main.ref(1), x], [y])
    return Model(main.subgraph(), [then.subgraph(), other.subgraph()], bytes(values))


def grow_model():
    """WHILE (i < 3) { x = concat(x, x); i += 1 }: a new body shape every iteration."""
    values = bytearray()
    cond = Graph(values)
    cond.input(F32, [0])
    c_i = cond.input("TENSOR_INT32", [1])
    c_out = cond.output("TENSOR_BOOL8", [1])
    cond.op("LESS", [c_i, cond.const("TENSOR_INT32", [1], [3])], [c_out])
    body = Graph(values)
    b_x, b_i = body.input(F32, [0]), body.input("TENSOR_INT32", [1])
    o_x, o_i = body.output(F32, [0]), body.output("TENSOR_INT32", [1])
    body.op("CONCATENATION", [b_x, b_x, body.const("INT32", [], 0)], [o_x])
    body.op("ADD", [b_i, body.const("TENSOR_INT32", [1], [1]), body.const("INT32", [], 0)],
            [o_i])
    main = Graph(values)
    x0, i0 = main.input(F32, [2]), main.input("TENSOR_INT32", [1])
    x = main.output(F32, [0])
    main.op("WHILE", [main.ref(0), main.ref(1), x0, i0], [x, main.add("TENSOR_INT32", [1])])
    return Model(main.subgraph(), [cond.subgraph(), body.subgraph()], bytes(values))


def nested_model():
    """WHILE (i < n) { acc = IF(i < 2) then acc + 10 else acc - 1; i += 1 }."""
    values = bytearray()
    cond = Graph(values)
    cond.input(F32, [1])
    c_i, c_n = cond.input("TENSOR_INT32", [1]), cond.input("TENSOR_INT32", [1])
    c_out = cond.output("TENSOR_BOOL8", [1])
    cond.op("LESS", [c_i, c_n], [c_out])
    then, other = Graph(values), Graph(values)
    _add(then, then.input(F32, [1]), 10.0, then.output(F32, [1]))
    _add(other, other.input(F32, [1]), -1.0, other.output(F32, [1]))
    body = Graph(values)
    b_acc, b_i = body.input(F32, [1]), body.input("TENSOR_INT32", [1])
    body.input("TENSOR_INT32", [1])
    o_acc, o_i = body.output(F32, [1]), body.output("TENSOR_INT32", [1])
    small = body.add("TENSOR_BOOL8", [1])
    body.op("LESS", [b_i, body.const("TENSOR_INT32", [1], [2])], [small])
    body.op("IF", [small, body.ref(2), body.ref(3), b_acc], [o_acc])
    body.op("ADD", [b_i, body.const("TENSOR_INT32", [1], [1]), body.const("INT32", [], 0)],
            [o_i])
    main = Graph(values)
    acc0, i0, n = (main.input(F32, [1]), main.input("TENSOR_INT32", [1]),
                   main.input("TENSOR_INT32", [1]))
    acc = main.output(F32, [1])
    main.op("WHILE", [main.ref(0), main.ref(1), acc0, i0, n],
            [acc, main.add("TENSOR_INT32", [1])])
    subgraphs = [cond.subgraph(), body.subgraph(), then.subgraph(), other.subgraph()]
    return Model(main.subgraph(), subgraphs, bytes(values))


def _same(model, inputs, device):
    got = run(model, inputs, device)
    want = run(model, inputs)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    return got


@pytest.mark.parametrize("cond", [True, False])
def test_if_runs_its_branch_on_the_device(cl_device, no_host_operations, cond):
    m = if_model()
    assert cl_device.get_supported_operations(m) == [True]
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    (y,) = _same(m, [[cond], x], cl_device)
    want = np.maximum(x, 0) + 10 if cond else np.tanh(x) * 2
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    pm = cl_device.prepare_model(m)
    assert [(p.on_cl, p.control) for p in pm.partitions] == [(True, True)]


@pytest.mark.parametrize("n", [0, 1, 4])
def test_while_loop_on_the_device(cl_device, no_host_operations, n):
    m = counter_model(extra_output=True)
    acc, i = _same(m, [np.float32([0.5]), np.int32([0]), np.int32([n])], cl_device)
    np.testing.assert_array_equal(i, [n])
    np.testing.assert_allclose(acc, [0.5 + 1.5 * n])


def test_only_the_condition_is_read_back(cl_device, monkeypatch):
    """Loop-carried tensors stay in device memory: the host reads the condition of each of
    the 5 tests (4 iterations; those of iterations enqueued ahead of the false one too) and,
    at the end, the two model outputs."""
    import pyopencl as cl

    reads = []
    original = cl.enqueue_copy

    def counted(queue, dest, src, **kw):
        if isinstance(dest, np.ndarray):
            reads.append(dest.nbytes)
        return original(queue, dest, src, **kw)

    monkeypatch.setattr(cl, "enqueue_copy", counted)
    m = counter_model(extra_output=True)
    run(m, [np.float32([0.0]), np.int32([0]), np.int32([4])], cl_device)
    assert reads[-2:] == [4, 4] and set(reads[:-2]) == {1} and 5 <= len(reads) - 2 <= 8, reads


def test_while_body_shapes_change_across_iterations(cl_device, no_host_operations):
    m = grow_model()
    pm = cl_device.prepare_model(m)
    req = make_request(m, [np.float32([1.0, 2.0]), np.int32([0])])
    r = pm.execute_synchronously(req)
    assert r.status == OK and tuple(r.output_shapes[0].dimensions) == (16,)
    out = np.frombuffer(bytes(req.pools[1].view()[:64]), np.float32)
    np.testing.assert_array_equal(out, np.tile([1.0, 2.0], 8))
    # the body's two runs take turns: iterations 0 and 2 run the first, 1 the second
    (first,), (second,) = pm.subgraph_runs[1].partitions, pm.subgraph_runs[1, 1].partitions
    assert sorted(key[0][0] for key in first.plans) == [(2,), (8,)]  # (shapes, ...)
    assert sorted(key[0][0] for key in second.plans) == [(4,)]


def test_if_inside_a_while_body(cl_device, no_host_operations):
    m = nested_model()
    (acc,) = _same(m, [np.float32([1.0]), np.int32([0]), np.int32([5])], cl_device)[:1]
    np.testing.assert_allclose(acc, [1.0 + 10 + 10 - 1 - 1 - 1])


def test_endless_while_misses_its_loop_timeout(cl_device):
    m = counter_model(body_amount=0)  # i never grows
    t0 = time.monotonic()
    status, _, _ = execute(m, [np.float32([0.0]), np.int32([0]), np.int32([1])], cl_device,
                           loop_timeout_duration=50_000_000)
    assert status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    assert time.monotonic() - t0 < 5.0


def test_endless_while_misses_the_execution_deadline(cl_device):
    m = counter_model(body_amount=0)
    t0 = time.monotonic()
    status, _, _ = execute(m, [np.float32([0.0]), np.int32([0]), np.int32([1])], cl_device,
                           deadline=time.monotonic_ns() + 100_000_000,
                           loop_timeout_duration=10_000_000_000)
    assert status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    assert time.monotonic() - t0 < 5.0


def test_support_names_the_subgraph_operation_without_a_kernel(cl_device, monkeypatch):
    from clnn.device import ClDevice

    original = ClDevice.unsupported_reason_in

    def decline_tanh(self, model, sg, k, operation):
        if operation.type.name == "TANH":
            return "declined by the test"
        return original(self, model, sg, k, operation)

    monkeypatch.setattr(ClDevice, "unsupported_reason_in", decline_tanh)
    ((_, name, ok, reason),) = cl_device.support_report(if_model())
    assert name == "IF" and not ok
    assert reason == "TANH (operation 0 of subgraph 1): declined by the test"


def test_profile_reports_subgraph_kernels_as_the_control_operation(cl_device):
    from clnn.memory import on_host

    m = counter_model(extra_output=True)
    pm = cl_device.prepare_model(m)
    events = []
    outs = pm.run([np.float32([0.0]), np.int32([0]), np.int32([3])], events=events)
    assert [int(on_host(o)[0]) for o in outs[1:]] == [3]
    assert events and {launch.op_index for launch, _ in events} == {0}  # the WHILE
    ((_, name, ok, reason),) = cl_device.support_report(m)
    assert (name, ok, reason) == ("WHILE", True, "its subgraphs on OpenCL")


CORPUS_SPECS = ["V1_3__if_simple", "V1_3__if_constant", "V1_3__if_same_branch_model",
                "V1_3__while_fib", "V1_3__while_sum_of_powers",
                "V1_3__while_sum_of_powers_quant8"]


@pytest.mark.parametrize("spec", CORPUS_SPECS)
def test_corpus_control_flow_runs_with_no_host_operation(cl_device, no_host_operations,
                                                         spec, capsys):
    """``clnn support`` shows every operation on OpenCL, and the corpus test passes with no
    operation on the host (the fixture fails the test otherwise)."""
    from clnn.cli.main import main
    from clnn.suites.corpus import read_corpus_file
    from clnn.suites.cts import run_variant
    from tests.kits.paths import CORPUS

    path = CORPUS / f"{spec}.json.gz"
    if not path.exists():
        pytest.skip(f"no conformance corpus at {CORPUS}")
    assert main(["support", str(path)]) == 0
    out = capsys.readouterr().out
    assert " NO " not in out and "operations on OpenCL\n" in out and "fallback" not in out
    for test in read_corpus_file(str(path))["tests"][:4]:
        result = run_variant(cl_device, spec, test, dynamic=False)
        assert result.status == "passed", result


def test_subgraphs_with_known_shapes_are_planned_at_prepare(cl_device):
    pm = cl_device.prepare_model(nested_model())  # WHILE -> body -> IF -> two branches
    # (1, c): the small body's other runs
    assert set(pm.subgraph_runs) == {0, 1, 2, 3, (1, 1), (1, 2)}
    for sub in pm.subgraph_runs.values():
        assert all(p.plans for p in sub.partitions if p.on_cl and not p.control)


def test_many_iterations_equal_the_reference(cl_device):
    """The capabilities' WHILE workload run 100 times round its loop: the carried tensors,
    bound to the body's kernels without copies, equal the reference device's."""
    from clnn.capabilities_workloads import while_model

    m, inputs = while_model(16, iterations=100)
    (acc,) = _same(m, inputs, cl_device)
    np.testing.assert_allclose(acc, np.full((1, 16, 16), 150.0, np.float32))


def _device_copies(cl_device, monkeypatch, iterations: int) -> int:
    """Buffer-to-buffer copies enqueued by one execution of the WHILE workload."""
    import pyopencl as cl

    from clnn.capabilities_workloads import while_model

    m, inputs = while_model(16, iterations=iterations)
    pm = cl_device.prepare_model(m)
    pm.execute_synchronously(make_request(m, inputs))  # (the warm-up's copies not counted)
    copies = []
    original = cl.enqueue_copy

    def counted(queue, dest, src, **kw):
        if isinstance(dest, cl.Buffer) and isinstance(src, cl.Buffer):
            copies.append(kw.get("byte_count"))
        return original(queue, dest, src, **kw)

    monkeypatch.setattr(cl, "enqueue_copy", counted)
    pm.execute_synchronously(make_request(m, inputs))
    monkeypatch.setattr(cl, "enqueue_copy", original)
    return len(copies)


def test_carried_tensors_are_not_copied_into_the_subgraphs(cl_device, monkeypatch):
    """No iteration copies anything: the body's two runs take turns, each iteration's outputs
    handed to the next as regions of the pools they are in, and the condition's and the
    body's kernels read the carried buffers themselves (a device whose plans bind direct
    inputs)."""
    from clnn.launch import direct_inputs_on

    if not direct_inputs_on(cl_device.cl_device, cl_device.options):
        pytest.skip("the device's plans copy their inputs (no direct inputs)")
    per_iteration = (_device_copies(cl_device, monkeypatch, 12) -
                     _device_copies(cl_device, monkeypatch, 4)) / 8
    assert per_iteration == 0, per_iteration
