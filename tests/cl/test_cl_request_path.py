"""The host path of an execution (issue #36's fixed cost): a request layout checked once per
prepared model (hal.driver.begin_execution, request_key), inputs copied only where the host
may read them (hal.driver.read_inputs' per-input flags, ClPreparedModel._copied_inputs), and
OutputShapes made once per shape. The results and every error stay those of the full checks."""

from __future__ import annotations

import dataclasses

import numpy as np

from clnn.capabilities_workloads import while_model
from hal.builder import ModelBuilder, make_request
from hal.driver import output_shape, read_inputs, request_key
from hal.errors import ErrorStatus
from hal.types import DataLocation, HostMemory, OutputShape, Request
from tests.kits.cl_compare import run_ref

F32 = "TENSOR_FLOAT32"


def add_model():
    b = ModelBuilder()
    x, y = b.input(F32, [2, 3]), b.input(F32, [2, 3])
    b.op("ADD", [x, y, b.int32(0)], b.output(F32, [2, 3]))
    return b.finish()


def _inputs():
    return [np.arange(6, dtype=np.float32).reshape(2, 3), np.full((2, 3), 0.5, np.float32)]


def _with_input_location(request: Request, k: int, **change) -> Request:
    args = list(request.inputs)
    args[k] = dataclasses.replace(args[k],
                                  location=dataclasses.replace(args[k].location, **change))
    return Request(args, list(request.outputs), list(request.pools))


def test_a_request_layout_seen_valid_is_still_checked_when_it_changes(cl_device):
    model = add_model()
    pm = cl_device.prepare_model(model)
    req = make_request(model, _inputs())
    assert pm.execute_synchronously(req).status == ErrorStatus.NONE
    assert request_key(req) in pm._validated_layouts
    # the same layout with a wrong length, an offset past the pool, a pool too small:
    # each rejected as the full checks reject it
    wrong = [_with_input_location(req, 1, length=20),
             _with_input_location(req, 1, offset=10 ** 6),
             Request(list(req.inputs), list(req.outputs), [HostMemory(8), req.pools[1]])]
    for bad in wrong:
        r = pm.execute_synchronously(bad)
        assert r.status == ErrorStatus.INVALID_ARGUMENT and r.message, bad
        assert request_key(bad) not in pm._validated_layouts
    # a request of the validated layout (new memories) runs, with the right result
    again = make_request(model, [x * 2 for x in _inputs()])
    r = pm.execute_synchronously(again)
    assert r.status == ErrorStatus.NONE
    assert r.output_shapes == [OutputShape((2, 3), True)]
    got = np.frombuffer(again.pools[1].view(), np.float32, 6).reshape(2, 3)
    np.testing.assert_allclose(got, run_ref(model, [x * 2 for x in _inputs()])[0])


def test_an_output_too_small_is_reported_whatever_the_layouts_seen(cl_device):
    model = add_model()
    pm = cl_device.prepare_model(model)
    req = make_request(model, _inputs())
    assert pm.execute_synchronously(req).status == ErrorStatus.NONE
    out = req.outputs[0]
    small = Request(list(req.inputs), [dataclasses.replace(
        out, location=DataLocation(out.location.pool_index, 0, 8))], list(req.pools))
    r = pm.execute_synchronously(small)
    assert r.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert r.output_shapes == [OutputShape((2, 3), False)]


def test_request_key_leaves_device_memories_to_the_full_checks():
    model = add_model()
    req = make_request(model, _inputs())
    assert request_key(req) is not None
    assert request_key(Request(list(req.inputs), list(req.outputs),
                               [req.pools[0], object()])) is None


def test_inputs_are_copied_per_input_as_asked():
    model = add_model()
    req = make_request(model, _inputs())
    copied, viewed = read_inputs(model, req, copy=[True, False])
    pool = np.frombuffer(req.pools[0].view(), np.uint8)
    assert copied.flags.writeable and not np.shares_memory(copied, pool)
    assert not viewed.flags.writeable and np.shares_memory(viewed, pool)
    np.testing.assert_array_equal(copied, _inputs()[0])
    np.testing.assert_array_equal(viewed, _inputs()[1])


def test_output_shapes_are_made_once_per_shape():
    a = output_shape((1, np.int64(4)), True)
    assert a == OutputShape((1, 4), True) and all(type(d) is int for d in a.dimensions)
    assert output_shape((1, 4), True) is a
    assert output_shape((1, 4), False) == OutputShape((1, 4), False)


def test_a_while_reads_its_device_input_in_place_and_copies_its_counters(cl_device):
    model, inputs = while_model(16, iterations=3)
    pm = cl_device.prepare_model(model)
    # the loop's tensor is read on the device only; its counter and limit by the host
    assert pm._input_copies == [False, True, True]
    req = make_request(model, inputs)
    before = bytes(req.pools[0].view())
    r = pm.execute_synchronously(req)
    assert r.status == ErrorStatus.NONE
    assert bytes(req.pools[0].view()) == before  # the request's inputs are left as they were
    got = np.frombuffer(req.pools[1].view(), np.float32, 16 * 16).reshape(1, 16, 16)
    np.testing.assert_allclose(got, run_ref(model, inputs)[0])


def _batch_model():
    """ADD of two [?, 3] tensors (the batch left to the request, as a TFLite import's)."""
    b = ModelBuilder()
    x, y = b.input(F32, [0, 3]), b.input(F32, [0, 3])
    b.op("ADD", [x, y, b.int32(0)], b.output(F32, [0, 3]))
    return b.finish()


def _result(req, r, shape):
    assert r.status == ErrorStatus.NONE, r
    assert r.output_shapes == [OutputShape(shape, True)]
    loc = req.outputs[0].location
    return np.frombuffer(req.pools[1].view(), np.float32, int(np.prod(shape)),
                         loc.offset).reshape(shape)


def test_the_short_path_runs_a_validated_layout_with_fresh_values(cl_device):
    """clnn.execution.ShortPath: from the second request of a layout on, new values in new
    memories (and the same memory rewritten) give the reference's results, for each batch
    size the request gives; an output too small, a deadline or MeasureTiming take the full
    path, with its answers."""
    from hal.types import MeasureTiming

    model = _batch_model()
    pm = cl_device.prepare_model(model)
    assert pm.short_path is not None
    rng = np.random.default_rng(5)
    for n in (2, 5, 2):
        for _ in range(3):
            xs = [rng.standard_normal((n, 3)).astype(np.float32) for _ in range(2)]
            req = make_request(model, xs)
            got = _result(req, pm.execute_synchronously(req), (n, 3))
            np.testing.assert_array_equal(got, run_ref(model, xs)[0])
    assert [v for v in pm.short_path.layouts.values() if v]  # (the short path ran)
    # the same request, its input memory rewritten between executions
    xs = [np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)]
    req = make_request(model, xs)
    for k in range(3):
        view = np.frombuffer(req.pools[0].view(), np.float32, 6, 0)
        view[:] = k
        got = _result(req, pm.execute_synchronously(req), (2, 3))
        np.testing.assert_array_equal(got, np.full((2, 3), k + 1.0, np.float32))
    small = make_request(model, xs, output_sizes=[8])
    for _ in range(2):
        r = pm.execute_synchronously(small)
        assert r.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
        assert r.output_shapes == [OutputShape((2, 3), False)]
    r = pm.execute_synchronously(req, MeasureTiming.YES)
    assert r.status == ErrorStatus.NONE and r.timing.time_in_driver > 0
    r = pm.execute_synchronously(req, deadline=0)
    assert r.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT and r.message


def test_the_short_path_copies_an_output_that_overlaps_an_input(cl_device):
    """An output whose bytes are an input's (one pool): read into an array of its own, then
    written there once the kernels are done, as on the full path."""
    model = add_model()
    pm = cl_device.prepare_model(model)
    xs = _inputs()
    want = run_ref(model, xs)[0]
    for _ in range(3):
        pool = HostMemory(np.concatenate([x.ravel() for x in xs]).tobytes())
        args = make_request(model, xs).inputs
        req = Request([dataclasses.replace(args[0], location=DataLocation(0, 0, 24)),
                       dataclasses.replace(args[1], location=DataLocation(0, 24, 24))],
                      [dataclasses.replace(make_request(model, xs).outputs[0],
                                           location=DataLocation(0, 0, 24))], [pool])
        r = pm.execute_synchronously(req)
        assert r.status == ErrorStatus.NONE
        got = np.frombuffer(pool.view(), np.float32, 6).reshape(2, 3)
        np.testing.assert_array_equal(got, want)


def _spy_runs(monkeypatch) -> dict:
    """Counts of the plan runs through clnn.launch.enqueue_bound (the short path's in place)
    and clnn.launch.enqueue_plan from now on."""
    from clnn import execution

    runs = {"bound": 0, "plan": 0}

    def counting(f, key):
        def spy(*args, **kw):
            runs[key] += 1
            return f(*args, **kw)
        return spy

    for name, key in (("enqueue_bound", "bound"), ("enqueue_plan", "plan")):
        monkeypatch.setattr(execution, name, counting(getattr(execution, name), key))
    return runs


def test_the_short_path_runs_the_plan_on_the_requests_memory(cl_device, monkeypatch):
    """From the second request of a layout on, the plan runs bound to the request's
    memories (clnn.launch.Binding): fresh values each time, the reference's results, and
    OutputShapes in a list of the result's own."""
    model = add_model()
    pm = cl_device.prepare_model(model)
    runs = _spy_runs(monkeypatch)
    rng = np.random.default_rng(7)
    shapes = []
    for _ in range(4):
        xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2)]
        req = make_request(model, xs)
        r = pm.execute_synchronously(req)
        np.testing.assert_array_equal(_result(req, r, (2, 3)), run_ref(model, xs)[0])
        shapes.append(r.output_shapes)
        r.output_shapes.clear()  # (a client's change reaches no later result)
    assert runs == {"bound": 4, "plan": 0}  # (the layout was checked at prepare's warm-up)
    assert shapes[0] is not shapes[1]


def test_a_failure_on_the_short_path_points_the_kernels_back(cl_device, monkeypatch):
    """A launch that fails on the short path: a GENERAL_FAILURE with its reason, the kernels
    pointed back at their own buffers (none keeps one over the client's memory), and the
    next executions of this model and of another right."""
    from clnn.launch import launches

    model = add_model()
    pm, other = cl_device.prepare_model(model), cl_device.prepare_model(model)
    xs = _inputs()
    want = run_ref(model, xs)[0]
    plans = [pl for p in pm.partitions for pl in p.plans.values() if pl is not None]
    ends = [d for pl in plans for d in (*pl.direct.values(), *pl.direct_out.values())]
    last = {}
    for cls in {type(d) for d in ends}:
        def spy(self, target, _point=cls.point):
            last[id(self)] = target is self.buffer
            _point(self, target)
        monkeypatch.setattr(cls, "point", spy)

    def fail(queue, step, events=None):
        raise RuntimeError("a launch refused")

    with monkeypatch.context() as m:
        m.setattr(launches, "enqueue_launch", fail)
        req = make_request(model, xs)
        r = pm.execute_synchronously(req)
    assert r.status == ErrorStatus.GENERAL_FAILURE and "a launch refused" in r.message
    assert all(last.get(id(d), True) for d in ends) and len(last) == len(ends)
    for p in (pm, other):
        req = make_request(model, xs)
        np.testing.assert_array_equal(_result(req, p.execute_synchronously(req), (2, 3)), want)


def test_a_read_only_output_is_invalid(cl_device, tmp_path, monkeypatch):
    """Inputs in a read-only file mapping are read in place; an output there is
    INVALID_ARGUMENT naming the read-only memory, as from a prepared model without the short
    path."""
    from hal.types import MmapMemory

    model = add_model()
    pm, full = cl_device.prepare_model(model), cl_device.prepare_model(model)
    full.short_path = None
    xs = _inputs()
    path = tmp_path / "pool"
    path.write_bytes(np.concatenate([x.ravel() for x in xs]).tobytes() + bytes(24))
    ro = MmapMemory(path, 72, writable=False)
    args = make_request(model, xs)
    req = Request(list(args.inputs), list(args.outputs), [ro, args.pools[1]])
    runs = _spy_runs(monkeypatch)
    for _ in range(2):  # (a new layout: checked by the general path first)
        np.testing.assert_array_equal(_result(req, pm.execute_synchronously(req), (2, 3)),
                                      run_ref(model, xs)[0])
    assert runs == {"bound": 1, "plan": 1}
    out = Request(list(args.inputs), [dataclasses.replace(
        args.outputs[0], location=DataLocation(0, 48, 24))], [ro])
    for _ in range(2):
        got, want = pm.execute_synchronously(out), full.execute_synchronously(out)
        assert (got.status, got.message) == (want.status, want.message)
        assert got.status == ErrorStatus.INVALID_ARGUMENT and "read-only" in got.message


def test_the_short_path_follows_a_plan_made_again(cl_device, monkeypatch):
    """A request layout whose plan was dropped (more shapes than the partition keeps plans
    for: clnn.plan.MAX_PLANS) and made again runs on the new plan's kernels, with the
    reference's results."""
    import clnn.plan

    monkeypatch.setattr(clnn.plan, "MAX_PLANS", 2)
    model = _batch_model()
    pm = cl_device.prepare_model(model)
    rng = np.random.default_rng(9)
    for n in (2, 2, 3, 3, 4, 4, 2, 2, 2, 3):
        xs = [rng.standard_normal((n, 3)).astype(np.float32) for _ in range(2)]
        req = make_request(model, xs)
        got = _result(req, pm.execute_synchronously(req), (n, 3))
        np.testing.assert_array_equal(got, run_ref(model, xs)[0])
    assert len(pm.partitions[0].plans) <= 2


class _Shorter(HostMemory):
    """A host memory whose view is shorter than the size it states (a client's own Memory)."""

    size = property(lambda self: len(self.buffer) + 64)


def test_a_memory_whose_view_is_short_of_its_size_takes_the_general_path(cl_device):
    """The short path binds no bytes past a memory's view: such a request gets the general
    path's answer, every time."""
    model = add_model()
    pm, full = cl_device.prepare_model(model), cl_device.prepare_model(model)
    full.short_path = None
    args = make_request(model, _inputs())
    for pools in ([_Shorter(bytes(args.pools[0].view())[:40]), args.pools[1]],
                  [args.pools[0], _Shorter(bytes(24))]):
        req = Request(list(args.inputs), [dataclasses.replace(args.outputs[0], location=(
            DataLocation(1, 16, 24) if isinstance(pools[1], _Shorter) else
            args.outputs[0].location))], pools)
        for _ in range(3):
            got, want = pm.execute_synchronously(req), full.execute_synchronously(req)
            assert (got.status, got.message) == (want.status, want.message), got


def _two_outputs():
    """tanh(x) and relu(x) of one [2, 3] input: two outputs."""
    b = ModelBuilder()
    x = b.input(F32, [2, 3])
    b.op("TANH", [x], b.output(F32, [2, 3]))
    b.op("RELU", [x], b.output(F32, [2, 3]))
    return b.finish()


def test_the_short_path_copies_in_and_reads_back_without_direct_memories(monkeypatch):
    """Without direct inputs and outputs (a device that does not share the host's memory, or
    the options off): the short path copies the inputs from the request's memory and reads
    one output back into it; two outputs read back take enqueue_plan (one read for both).
    The reference's results every time."""
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions

    dev = ClDevice(fallback=False, options=DeviceOptions(direct_inputs=False,
                                                         direct_outputs=False))
    rng = np.random.default_rng(11)
    for model, bound in ((add_model(), True), (_two_outputs(), False)):
        pm = dev.prepare_model(model)
        runs = _spy_runs(monkeypatch)
        for _ in range(3):
            xs = [rng.standard_normal((2, 3)).astype(np.float32)
                  for _ in model.main.input_indexes]
            req = make_request(model, xs)
            assert pm.execute_synchronously(req).status == ErrorStatus.NONE
            view = req.pools[1].view()
            for a, want in zip(req.outputs, run_ref(model, xs)):
                got = np.frombuffer(view, np.float32, 6, a.location.offset).reshape(2, 3)
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        lay = next(v for v in pm.short_path.layouts.values() if v)
        assert runs == ({"bound": 3, "plan": 0} if bound else {"bound": 0, "plan": 3})
        if bound:
            assert len(lay.binding.uploads) == 2 and len(lay.binding.reads) == 1
        monkeypatch.undo()
