"""Chains (clnn/chain.py): consecutive launches of a plan run as one launch of persistent
work-groups, each owning a block of every launch's tasks. The chained run computes what the
launches compute one by one (the same kernels: bit for bit), whatever the number of
work-groups, run after run (the counters reset), and kernels bound to their work-groups stay
out of chains."""

from __future__ import annotations

import time

import numpy as np
import pytest

from clnn import chain
from clnn.execution import CHAIN_AFTER
from clnn.options import DeviceOptions
from hal.builder import ModelBuilder
from tests.kits.cl_compare import assert_close, outputs_of, run_ref
from tests.kits.devices import open_or_skip

F32 = "TENSOR_FLOAT32"
#: chains on every device, from two launches on
CHAINED = DeviceOptions(chains=True, chain_min_launches=2)


def block_model(seed=0, norm=False):
    """A MobileNet-like block and more: CONV_2D 3x3 -> DEPTHWISE_CONV_2D -> CONV_2D 1x1 ->
    ADD (residual) -> MAX_POOL_2D -> CONCATENATION with its own input -> TANH -> CONV_2D 1x1
    [-> TRANSPOSE to NCHW -> INSTANCE_NORMALIZATION, whose NCHW kernel reduces within
    work-groups]."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(F32, [1, 12, 10, 3])

    def const(*shape):
        return b.constant(rng.uniform(-1, 1, shape).astype(np.float32), F32)

    c = b.op("CONV_2D", [x, const(16, 3, 3, 3), const(16), *[b.int32(v) for v in
                                                             (1, 1, 1, 1, 1, 1, 1)],
                         b.bool(False)], b.tensor(F32, [1, 12, 10, 16]))
    d = b.op("DEPTHWISE_CONV_2D", [c, const(1, 3, 3, 16), const(16),
                                   *[b.int32(v) for v in (1, 1, 1, 1, 1, 1, 1, 3)],
                                   b.bool(False), b.int32(1), b.int32(1)],
             b.tensor(F32, [1, 12, 10, 16]))
    p = b.op("CONV_2D", [d, const(16, 1, 1, 16), const(16), b.int32(1), b.int32(1),
                         b.int32(1), b.int32(0), b.bool(False)], b.tensor(F32, [1, 12, 10, 16]))
    r = b.op("ADD", [p, c, b.int32(0)], b.tensor(F32, [1, 12, 10, 16]))
    m = b.op("MAX_POOL_2D", [r, *[b.int32(v) for v in (0, 0, 0, 0, 2, 2, 2, 2, 0)],
                             b.bool(False)], b.tensor(F32, [1, 6, 5, 16]))
    m2 = b.op("MAX_POOL_2D", [c, *[b.int32(v) for v in (0, 0, 0, 0, 2, 2, 2, 2, 1)],
                              b.bool(False)], b.tensor(F32, [1, 6, 5, 16]))
    k = b.op("CONCATENATION", [m, m2, b.int32(3)], b.tensor(F32, [1, 6, 5, 32]))
    t = b.op("TANH", [k], b.tensor(F32, [1, 6, 5, 32]))
    # 48 columns: a GEMM of several column panels (its tasks split its rows)
    y = b.op("CONV_2D", [t, const(48, 1, 1, 32), const(48), b.int32(1), b.int32(1),
                         b.int32(1), b.int32(0), b.bool(False)], b.tensor(F32, [1, 6, 5, 48]))
    if norm:  # NCHW: its kernel reduces within work-groups (the NHWC one does not)
        yt = b.op("TRANSPOSE", [y, b.constant(np.array([0, 3, 1, 2], np.int32))],
                  b.tensor(F32, [1, 48, 6, 5]))
        y = b.op("INSTANCE_NORMALIZATION", [yt, b.float32(1.0), b.float32(0.0),
                                            b.float32(1e-3), b.bool(True)],
                 b.tensor(F32, [1, 48, 6, 5]))
    b.mark_output(y)
    return b.finish(), [rng.uniform(-1, 1, (1, 12, 10, 3)).astype(np.float32)]


def plans(pm):
    return [pl for p in pm.partitions for pl in p.plans.values() if pl is not None]


def chains(pm):
    pm.wait_chains()  # compiled in the background (clnn.chain.Job)
    return [s for pl in plans(pm) for s in (pl.chained or ()) if isinstance(s, chain.Chain)]


@pytest.fixture(scope="module")
def chained():
    """The OpenCL device (no fallback) with chains, from two launches on."""
    return open_or_skip("opencl", fallback=False, options=CHAINED)


def test_default_on_cpu_devices_of_several_units(cl_device):
    import pyopencl as cl

    d = cl_device.cl_device
    default = bool(d.type & cl.device_type.CPU) and d.max_compute_units > 1
    assert chain.enabled(d) == chain.enabled(d, DeviceOptions()) == default
    assert not chain.enabled(d, DeviceOptions(chains=False))
    assert chain.enabled(d, DeviceOptions(chains=True))


def test_chained_run_equals_launches_one_by_one(chained):
    model, inputs = block_model()
    pm = chained.prepare_model(model)
    got = outputs_of(model, pm, inputs)
    (ch,) = chains(pm)
    (plan,) = plans(pm)
    assert ch.launches == plan.launches and len(ch.launches) >= 7  # every launch chains
    # the first convolution reads the model's input where the request has it (an execution
    # points the chain's argument at it: clnn.launch.DirectInput)
    (d,) = plan.direct.values()
    assert any(owner is ch for owner, _ in d.slots)
    plain = open_or_skip("opencl", fallback=False,
                         options=CHAINED.replace(chains=False)).prepare_model(model)
    want = outputs_of(model, plain, inputs)
    assert not chains(plain)
    for g, w, r in zip(got, want, run_ref(model, inputs)):
        np.testing.assert_array_equal(g, w)  # the same kernels, in the same order
        assert_close(g, r, "f32")


def test_work_groups_own_blocks_and_gemm_tasks_split_rows(chained):
    """The table: one owner per compute unit; a GEMM's tasks are row ranges x column ranges
    (rows owned: the same rows of every layer on the same work-group), every other launch's
    ranges of work-items."""
    import pyopencl as cl

    model, _ = block_model()
    pm = chained.prepare_model(model)
    (ch,) = chains(pm)
    table = np.empty(ch.table.size // 4, np.int32)
    cl.enqueue_copy(chained.queue, table, ch.table)
    units = chained.cl_device.max_compute_units
    per_unit = chain.tasks_per_unit(chained.cl_device)
    assert table[1] == units
    cols, panels = set(), set()
    for j, la in enumerate(ch.launches):
        h = table[2 + j * chain.HEADER:2 + (j + 1) * chain.HEADER]
        g = list(la.global_size) + [1] * (3 - len(la.global_size))
        assert list(h[1:4]) == g
        assert (h[5] > 0) == (la.name == "gemm.gemm"), (la.name, g)
        if h[5]:
            cols.add(int(h[5]))
            panels.add(g[1])
            rows = h[4] // h[5]
            assert h[4] == rows * h[5] and rows == min(g[0], units * (per_unit // h[5]))
        else:
            assert h[4] * h[6] >= np.prod(g) > (h[4] - 1) * h[6]
    # a GEMM's tasks split its column panels as far as the tasks per unit allow (the 48-column
    # GEMM: 2 or 3 panels, by its tile)
    assert max(cols) == min(per_unit, max(panels)) and max(panels) > 1, (cols, panels)


def test_every_run_resets_the_counters(chained):
    model, _ = block_model()
    pm = chained.prepare_model(model)
    for seed in range(4):  # each run its own inputs: a stale counter would skip the tasks
        inputs = block_model(seed)[1]
        for g, r in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
            assert_close(g, r, "f32")
    (ch,) = chains(pm)
    import pyopencl as cl

    counters = np.empty(ch.sync.size // 4, np.int32)
    cl.enqueue_copy(chained.queue, counters, ch.sync)
    assert not counters.any()


@pytest.mark.parametrize("groups", [1, 2, 3, 7])
def test_any_number_of_work_groups(chained, groups):
    """One work-group runs the chain alone (taking every block); more work-groups than owners
    own nothing and take what is left; none waits for a task that no running one holds."""
    import pyopencl as cl

    model, inputs = block_model(2)
    pm = chained.prepare_model(model)
    want = outputs_of(model, pm, inputs)
    (ch,) = chains(pm)
    ch.global_size = (groups,)
    got = outputs_of(model, pm, inputs)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    counters = np.empty(ch.sync.size // 4, np.int32)
    cl.enqueue_copy(chained.queue, counters, ch.sync)
    assert not counters.any()


def test_kernels_bound_to_their_work_groups_end_a_chain(chained):
    model, inputs = block_model(norm=True)
    # the layout pass off: the NCHW INSTANCE_NORMALIZATION on its own (work-group) kernel
    pm = open_or_skip("opencl", fallback=False, nhwc=False, options=CHAINED).prepare_model(model)
    assert chains(pm)
    for g, r in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(g, r, "f32")
    (plan,) = plans(pm)
    names = [s.name for s in plan.chained]
    assert names[-2:] == ["chain", plan.launches[-1].name], names
    assert plan.launches[-1].name.startswith("normalization."), names
    reasons = {str(v) for k, v in chain.PARTS.items()
               if k[0] == "normalization" and isinstance(v, chain.Unchainable)}
    assert any("work-groups" in r for r in reasons), reasons


def test_profiled_runs_time_every_launch(chained):
    model, inputs = block_model()
    pm = chained.prepare_model(model)
    outputs_of(model, pm, inputs)
    events = []
    pm.run(inputs, events=events)
    (plan,) = plans(pm)
    assert [la for la, _ in events] == plan.launches


def test_part_source():
    gemm = ("gemm", "gemm", (("amode", "rows"), ("cmode", "nhwc"), ("dt", "f32"),
                             ("epi", "act"), ("flex", True), ("mr", 8), ("nv", 1),
                             ("odt", "f32"), ("vw", 16)))
    part = chain.Part(gemm)
    assert part.pure and part.params[0] == ("__global const float*", True)
    assert ("int", False) in part.params and ("float", False) in part.params
    assert "@PART@(int clnn_x" in part.function and "__kernel" not in part.function


def test_guarded_helpers_leave_a_part_pure():
    """The int8 GEMM's clnn_mbqm<vw> (common.mako, inside an #ifndef guard) is defined once
    however many variants a chain holds: its variants chain together (the tinyml models run
    as one chain), while unguarded helpers still end a run at a second variant."""
    def key(vw, facc):
        return ("gemm", "gemm", (("amode", "rows"), ("bias", True), ("cmode", "nhwc"),
                                 ("dt", "i8"), ("epi", "act"), *((("facc", True),) if facc
                                                                  else ()),
                                 ("mr", 8), ("nv", 1), ("odt", "i8"), ("vw", vw)))
    parts = [chain.Part(key(16, False)), chain.Part(key(8, True))]
    assert all(p.pure for p in parts) and "clnn_mbqm16" in parts[0].helpers
    src = chain.source(parts, 2)
    assert src.count("#ifndef CLNN_MBQM16") == 1 and src.count("#ifndef CLNN_MBQM8") == 1
    assert chain._GUARDED.sub("", "inline int f(int x) { return x; }\n").strip()


def test_int_pair_helpers_leave_a_part_pure():
    """The int16-pair GEMMs' clnn_pm<vw> (gemm.cl.mako int_pairs_fns: a builtin or vectors,
    chosen inside their guard) are defined once however many variants a chain holds: the
    int8 models' chains are built with them."""
    def key(vw, cv):
        return ("gemm", "gemm", (("amode", "rows"), ("bias", True), ("cmode", "nhwc"),
                                 ("cv", cv), ("dt", "i8"), ("epi", "act"), ("facc", True),
                                 ("ip", True), ("lm", True), ("mr", 4), ("nv", 2),
                                 ("odt", "i8"), ("rq", "up"), ("vw", vw)))
    parts = [chain.Part(key(16, 16)), chain.Part(key(16, 8)), chain.Part(key(8, 4))]
    assert all(p.pure for p in parts) and "clnn_pm16" in parts[0].helpers
    src = chain.source(parts, 2)
    assert src.count("#ifndef CLNN_PM16") == 1 and src.count("#ifndef CLNN_PM8") == 1


def test_plans_for_run_time_shapes_chain_too(chained):
    """A plan made for an execution's input shapes (here a batch the model leaves open)."""
    b = ModelBuilder()
    x = b.input(F32, [0, 5])
    t = b.op("TANH", [x], b.tensor(F32, [0, 5]))
    r = b.op("RELU", [t], b.tensor(F32, [0, 5]))
    b.mark_output(b.op("ADD", [t, r, b.int32(0)], b.tensor(F32, [0, 5])))
    model = b.finish()
    pm = chained.prepare_model(model)
    inputs = [np.linspace(-2, 2, 15, dtype=np.float32).reshape(3, 5)]
    want = run_ref(model, inputs)
    for _ in range(2):
        assert_close(outputs_of(model, pm, inputs)[0], want[0], "f32")
    assert chains(pm)
    assert_close(outputs_of(model, pm, inputs)[0], want[0], "f32")


def test_runs_of_few_launches_stay_unchained():
    """A chain's program is compile work: fewer than MIN_LAUNCHES launches run one by one."""
    model, inputs = block_model()
    pm = open_or_skip("opencl", fallback=False,
                      options=DeviceOptions(chains=True)).prepare_model(model)
    (plan,) = plans(pm)
    outputs_of(model, pm, inputs)
    assert bool(chains(pm)) == (len(plan.launches) >= chain.MIN_LAUNCHES)
    few = DeviceOptions(chains=True, chain_min_launches=len(plan.launches) + 1)
    pm = open_or_skip("opencl", fallback=False, options=few).prepare_model(model)
    outputs_of(model, pm, inputs)
    assert not chains(pm)


class _Pending:
    """A compile helper that is done when the test says so."""

    class proc:  # noqa: N801 - stands for subprocess.Popen
        done = False

        @classmethod
        def poll(cls):
            return 0 if cls.done else None

        @classmethod
        def wait(cls):
            cls.done = True
            return 0

    @classmethod
    def give(cls, source, names, cache_root=None):
        cls.source = source
        return True

    def stop(self):
        pass


def test_chains_built_at_prepare(chained, monkeypatch):
    """A prepare that compiles builds the plan's chains itself (no helper process, nothing
    left to compile once it returns): the executions run them from the first one on, and the
    chained launches' own kernels are made only where they run on their own (a debugging
    run keeping every intermediate), computing the same."""
    from clnn.program_cache import CompileHelper

    monkeypatch.setattr(CompileHelper, "spawn", classmethod(
        lambda cls, ctx, nice=0: pytest.fail("a chain went to a helper")))
    model, inputs = block_model(6)
    pm = chained.prepare_model(model)
    (plan,) = plans(pm)
    assert any(isinstance(s, chain.Chain) and s.kernel is not None for s in plan.chained)
    assert pm.runner.state(plan).job is None
    deferred = [la for la in plan.launches if la.kernel is None]
    assert deferred and all(la.lazy is not None for la in deferred)
    want = run_ref(model, inputs)
    assert_close(outputs_of(model, pm, inputs)[0], want[0], "f32")
    kept = pm.run_keeping_all(inputs)  # one by one: the deferred kernels made now
    assert all(la.kernel is not None and la.lazy is None for la in plan.launches)
    assert_close(kept[model.main.output_indexes[0]], want[0], "f32")
    assert_close(outputs_of(model, pm, inputs)[0], want[0], "f32")  # chained again


def test_background_compile(chained, monkeypatch, tmp_path):
    """Where the prepare did not build a plan's chains (a plan made at an execution, from
    run-time shapes; here the prepare told not to), a chain never built on this machine
    compiles in a helper process (here one the test finishes) from the plan's CHAIN_AFTER-th
    execution on: until then, and while it compiles, the plan runs its launches one by one;
    then the chain, marked as built."""
    from clnn.execution import Chained
    from clnn.program_cache import CompileHelper

    monkeypatch.setattr(chain, "_marker", lambda plan, context, *_: str(tmp_path / "never-built"))
    monkeypatch.setattr(CompileHelper, "wanted", classmethod(lambda cls, ctx, n: True))
    monkeypatch.setattr(CompileHelper, "spawn", classmethod(lambda cls, ctx, nice=0: _Pending()))
    _Pending.proc.done = False
    _Pending.source = ""
    monkeypatch.setattr(Chained, "chains_at_prepare", lambda self: False)
    model, inputs = block_model(3)
    pm = chained.prepare_model(model)
    (plan,) = plans(pm)
    want = run_ref(model, inputs)
    state = pm.runner.state(plan)
    for run in range(1, CHAIN_AFTER + 2):
        assert_close(outputs_of(model, pm, inputs)[0], want[0], "f32")
        assert plan.chained is None  # one by one
        assert (state.job is not None) == (run >= CHAIN_AFTER), run
    assert "clnn_chain" in _Pending.source
    _Pending.proc.done = True  # the next execution finds it done and builds the chain
    assert_close(outputs_of(model, pm, inputs)[0], want[0], "f32")
    assert state.job is None and any(isinstance(s, chain.Chain) for s in plan.chained)
    assert (tmp_path / "never-built").exists()  # marked: the next prepare builds it at once


def test_a_chain_built_before_is_built_at_once(chained, monkeypatch):
    from clnn.program_cache import CompileHelper

    model, inputs = block_model(4)
    pm = chained.prepare_model(model)
    assert chains(pm)  # built (in the background or not) and marked
    monkeypatch.setattr(CompileHelper, "spawn", classmethod(
        lambda cls, ctx, nice=0: pytest.fail("a marked chain went to a helper")))
    pm = chained.prepare_model(model)
    (plan,) = [pl for p in pm.partitions for pl in p.plans.values() if pl is not None]
    assert pm.runner.state(plan).job is None and plan.chained  # ready from the warm-up on


def test_a_model_from_the_compilation_cache_restores_its_chains(chained, tmp_path):
    """The compilation cache keeps a chain's program and its kernels' sources: a prepare from
    it builds the chain from there (nothing rendered, nothing compiled) and the executions run
    it from the first one on."""
    from clnn.program_cache import STATS

    model, inputs = block_model(5)
    files = {"model_cache": [str(tmp_path / "model.cache")],
             "data_cache": [str(tmp_path / "data.cache")], "token": bytes(range(32))}
    assert chains(chained.prepare_model(model, **files))
    rendered, built = STATS["rendered"], STATS["built"]
    pm = chained.prepare_model_from_cache(**files)
    (plan,) = plans(pm)
    assert STATS["rendered"] == rendered and STATS["built"] == built
    assert any(isinstance(s, chain.Chain) and s.kernel is not None for s in plan.chained)
    assert pm.runner.state(plan).job is None
    want = run_ref(model, inputs)
    assert_close(outputs_of(model, pm, inputs)[0], want[0], "f32")


def test_profile_times_chained_launches_by_cycle_counters(chained):
    """clnn run --profile on a chained plan: each chained operation timed inside the chain (its
    profiled variant's cycle counters), the times positive and adding up to about the chain's
    run; the profiled variant computes the same outputs."""
    from clnn.bench import chain_profile
    from clnn.cli.run import profile_prepared
    from clnn.launch import ChainEvents

    model, inputs = block_model()
    pm = chained.prepare_model(model)
    want = outputs_of(model, pm, inputs)
    (ch,) = chains(pm)
    hz = chain_profile.cycle_rate(chained.context)
    if hz is None:  # a compiler without the cycle counter: launches timed one by one
        rows = profile_prepared(pm, model, inputs, 2)
        assert not any(r.get("chained") for r in rows)
        return
    assert 1e8 < hz < 1e11, hz
    rows = profile_prepared(pm, model, inputs, 3)
    timed = [r for r in rows if r["operation"] is not None and r["ms"] > 0]
    assert {r["operation"] for r in timed} == {la.op_index for la in ch.launches}
    assert all(r["chained"] for r in timed)
    assert chain_profile.ready([ch], chained.context)
    with chain_profile.profiled([ch]):
        assert ch.kernel is ch.profiled_kernel
        events = ChainEvents()
        t0 = time.perf_counter()
        got = pm.run(inputs, events=events)
        wall = time.perf_counter() - t0
        assert [s for s, _ in events] == [ch]  # the chain ran, as one launch
        times = chain_profile.launch_times(ch, chained.queue, hz)
    assert ch.kernel is not ch.profiled_kernel
    assert len(times) == len(ch.launches) and all(t > 0 for t in times)
    assert sum(times) < wall, (sum(times), wall)  # within the execution
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_profile_without_cycle_counter_times_launches_one_by_one(chained, monkeypatch):
    """A device whose compiler has no cycle counter (Oclgrind: "Undefined external function:
    llvm.readcyclecounter"): the profile runs the launches one by one, timed by events."""
    from clnn.bench import chain_profile
    from clnn.cli.run import profile_prepared
    from clnn.devices import open_device

    dev = open_device(chained.cl_device.name, profiling=True,  # (events need profiling)
                      options=CHAINED)
    model, inputs = block_model()
    pm = dev.prepare_model(model)
    (ch,) = chains(pm)
    monkeypatch.setitem(chain_profile._RATES, dev.context.int_ptr, None)
    rows = profile_prepared(pm, model, inputs, 2)
    timed = [r for r in rows if r["operation"] is not None and r["ms"] > 0]
    assert {r["operation"] for r in timed} == {la.op_index for la in ch.launches}
    assert not any(r["chained"] for r in timed)


def test_launch_cycles_leave_a_late_start_out():
    """A work-group that starts late passes the launches done before it in no time: each
    launch's time is the longest a work-group spent in it, not the late start."""
    from clnn.bench.chain_profile import launch_cycles

    # group 0 starts at 0 and leaves launches at 10, 30, 60; group 1 starts at 25 (late),
    # passes launch 0 at once, shares launches 1 and 2
    stamps = np.array([[0, 10, 30, 60], [25, 25, 30, 60]], np.uint64)
    np.testing.assert_array_equal(launch_cycles(stamps), [10, 20, 30])
    assert launch_cycles(stamps).sum() == 60  # the chain's run


def test_a_chain_program_is_kept_as_a_binary_and_built_from_it(chained, monkeypatch, tmp_path):
    import pyopencl as cl

    model, _ = block_model(5)
    (ch,) = chains(chained.prepare_model(model))
    root = str(tmp_path / "cache")
    prg = chain._program(chained.context, chained.cl_device, ch.source, root)
    kept = list((tmp_path / "cache" / "programs" / "binaries").glob("*.bin"))
    assert len(kept) == 1 and kept[0].stat().st_size > 0
    monkeypatch.setattr(cl, "Program", _NoSourceBuild(cl.Program))  # from the binary only
    again = chain._program(chained.context, chained.cl_device, ch.source, root)
    assert "clnn_chain" in again.get_info(cl.program_info.KERNEL_NAMES)
    assert "clnn_chain" in prg.get_info(cl.program_info.KERNEL_NAMES)



def test_a_program_s_code_is_made_through_ctypes_or_as_before(chained, monkeypatch, tmp_path):
    """A program built from source (here a chain's) has its binaries made through ctypes
    (clnn.codegen.generate_code: out of the GIL) before its binary is kept; where the OpenCL
    library cannot be called so (none found, or the query fails), the program is built and
    kept as before, and the chains compute the same."""
    import ctypes

    import pyopencl as cl

    from clnn import codegen
    from clnn.program_cache import compiler

    model, inputs = block_model(8)
    (ch,) = chains(chained.prepare_model(model))
    made = []
    real = codegen.generate_code
    monkeypatch.setattr(codegen, "generate_code",
                        lambda prg, lib: made.append(real(prg, lib)) or made[-1])
    chain._program(chained.context, chained.cl_device, ch.source, str(tmp_path / "a"))
    assert made == [True]
    assert list((tmp_path / "a" / "programs" / "binaries").glob("*.bin"))

    class Failing:  # a library whose clGetProgramInfo reports an error
        clGetProgramInfo = ctypes.CFUNCTYPE(ctypes.c_int32)(lambda: -30)

    for lib, where in ((None, "b"), (Failing(), "c")):
        made.clear()
        monkeypatch.setattr(compiler, "_opencl_library", lambda lib=lib: lib)
        prg = chain._program(chained.context, chained.cl_device, ch.source, str(tmp_path / where))
        assert made == [False]
        assert "clnn_chain" in prg.get_info(cl.program_info.KERNEL_NAMES)
        assert list((tmp_path / where / "programs" / "binaries").glob("*.bin"))
    want = run_ref(model, inputs)
    made.clear()
    fresh = open_or_skip("opencl", fallback=False,
                         options=CHAINED.replace(cache_dir=str(tmp_path / "d")))
    pm = fresh.prepare_model(model)
    assert False in made and chains(pm)  # (the fresh device's programs: built as before)
    assert_close(outputs_of(model, pm, inputs)[0], want[0], "f32")


class _NoSourceBuild:
    """pyopencl.Program that fails a build from source (a binary build goes through)."""

    def __init__(self, real):
        self.real = real

    def __call__(self, context, *args):
        if len(args) == 1 and isinstance(args[0], str):
            pytest.fail("the chain program was built from source, not from its kept binary")
        return self.real(context, *args)


def test_tasks_per_unit_is_the_device_class_s(chained, monkeypatch):
    """The tasks per compute unit: the device class's row (clnn/kernels/_defaults.py
    chain_tasks) unless clnn.chain.TASKS_PER_UNIT says (benchmarks/chain_tasks.py)."""
    from clnn.kernels import _defaults
    from clnn.workgroups import DeviceLimits

    row = _defaults.defaults(_defaults.traits(DeviceLimits.of(chained.cl_device)))
    assert chain.tasks_per_unit(chained.cl_device) == row.chain_tasks
    monkeypatch.setattr(chain, "TASKS_PER_UNIT", 3)
    assert chain.tasks_per_unit(chained.cl_device) == 3


def test_buffer_arguments_round_up_to_a_power_of_two():
    """A chain program's buffer arguments (the class's ``chain_buffers``): the count rounded up
    to a power of two of at least ``least``, within the device's limit, never fewer than the
    chain's buffers; 0 leaves the count as it is."""
    assert [chain.buffer_arguments(n, 16, 124) for n in (1, 16, 17, 46, 51, 94, 124)] == \
        [16, 16, 32, 64, 64, 124, 124]
    assert chain.buffer_arguments(46, 0, 124) == 46


def test_called_families_are_called_not_inlined():
    """``called`` families' kernels are functions of their own (noinline: the compiler
    optimizes their body outside the task loop), the others inlined into it; the unused
    buffer arguments are declared all the same."""
    gemm = ("gemm", "gemm", (("amode", "rows"), ("cmode", "nhwc"), ("dt", "f32"),
                             ("epi", "act"), ("flex", True), ("mr", 8), ("nv", 1),
                             ("odt", "f32"), ("vw", 16)))
    copy = ("strided_copy", "copy", (("dt", "i32"), ("vw", 4)))
    parts = [chain.Part(gemm), chain.Part(copy)]
    src = chain.source(parts, 8, called=("gemm",))
    assert "static __attribute__((noinline)) void clnn_part0(" in src
    assert "static inline void clnn_part1(" in src and "@INLINE@" not in src
    assert "__global uchar* B7," in src and "__global uchar* B8" not in src
    assert "static __attribute__((noinline)) void clnn_part" not in chain.source(parts, 8)


def test_padded_buffer_arguments_leave_the_results_alone(chained):
    """The chain's program takes the device class's rounded buffer count (``chain_buffers``:
    two models of the same kernels in the same order and not as many buffers,
    palm_detection_full and _lite, then build one program), the unused arguments bound to
    the table; the chained run computes what the model computes."""
    from clnn.kernels import _defaults
    from clnn.workgroups import DeviceLimits

    row = _defaults.defaults(_defaults.traits(DeviceLimits.of(chained.cl_device)))
    model, inputs = block_model(seed=3)
    pm = chained.prepare_model(model)
    (ch,) = chains(pm)
    assert ch.nbuf == chain.buffer_arguments(len(ch.buffers), row.chain_buffers,
                                             chain._buffer_limit(chained.cl_device))
    assert ch.called == tuple(row.chain_called)
    assert ch.spin == row.chain_spin
    assert ch.unroll == (not row.chain_no_unroll)
    assert ch.source == chain.source(ch.parts, ch.nbuf, called=ch.called, spin=ch.spin,
                                     unroll=ch.unroll)
    assert ("#pragma clang loop unroll(disable)" in ch.source) == row.chain_no_unroll
    args = ch.arguments()
    assert len(args) == ch.nbuf + 2 and args[len(ch.buffers):-1] == \
        [ch.table] * (ch.nbuf - len(ch.buffers) + 1)
    for g, r in zip(outputs_of(model, pm, inputs), run_ref(model, inputs)):
        assert_close(g, r, "f32")


def test_a_chain_that_does_not_build_says_so(chained, monkeypatch, caplog):
    """A chain whose program fails to build runs its launches one by one, with the
    reference's results, and a warning naming why (it was silent: a whole model ran
    unchained)."""

    def fail(self, *args, **kwargs):
        raise RuntimeError("clBuildProgram failed: a stand-in error\nmore lines")

    monkeypatch.setattr(chain.Chain, "build", fail)
    model, inputs = block_model(seed=11)
    with caplog.at_level("WARNING", logger="clnn"):
        pm = chained.prepare_model(model)
        got = outputs_of(model, pm, inputs)
        assert not chains(pm)
    assert any("did not build" in r.getMessage() and "a stand-in error" in r.getMessage()
               for r in caplog.records), caplog.text
    for g, r in zip(got, run_ref(model, inputs)):
        assert_close(g, r, "f32")


def test_constants_packed_into_one_buffer(chained, monkeypatch):
    """The device class's ``chain_pack_constants``: the chain's read-only constants (weights
    and biases made from host memory) are one buffer argument, each kernel pointed at its
    offset in it (clnn.chain.pack_constants); the results are the unpacked chain's, bit for
    bit."""
    import dataclasses

    import pyopencl as cl

    model, inputs = block_model(seed=5)
    row = chain._class(chained.cl_device)
    assert row.chain_pack_constants  # (the CPU class's: the device these tests chain on)
    pm = chained.prepare_model(model)
    got = outputs_of(model, pm, inputs)
    (ch,) = chains(pm)
    want_flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
    assert not any(int(b.flags) == want_flags for b in ch.buffers)
    monkeypatch.setitem(chain._CLASSES, chained.cl_device.int_ptr,
                        dataclasses.replace(row, chain_pack_constants=False))
    other = open_or_skip("opencl", fallback=False, options=CHAINED).prepare_model(model)
    want = outputs_of(model, other, inputs)
    (plain,) = chains(other)
    assert len(plain.buffers) > len(ch.buffers)  # (two constants or more, one buffer now)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_pack_constants_words(chained):
    """pack_constants: the constants' pointer words carry the packed buffer's index and their
    128-byte-aligned offsets, the other buffers keep theirs in order; scalar words stay;
    fewer than two constants are left as they are."""
    import pyopencl as cl

    ctx, mf = chained.context, cl.mem_flags
    const = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR,
                       hostbuf=np.full(n, k + 1, np.int32)) for k, n in enumerate((3, 40, 5))]
    pool = cl.Buffer(ctx, mf.READ_WRITE, 64)
    bufs = [const[0], pool, const[1], const[2]]
    words = [chain._Pointer(k) for k in range(4)] + [7]
    out, w = chain.pack_constants(bufs, words, ctx, chained.cl_device)
    assert out[0] is pool and len(out) == 2 and w[4] == 7
    offs = [(w[k] >> chain.PACK_BITS) << chain.PACK_ALIGN_BITS for k in (0, 2, 3)]
    assert [w[k] & chain.PACK_INDEX for k in (0, 2, 3)] == [1, 1, 1] and w[1] == 0
    assert offs == [0, 128, 384]
    q = cl.CommandQueue(ctx)
    got = np.empty(out[1].size // 4, np.int32)
    cl.enqueue_copy(q, got, out[1])
    for k, (off, n) in enumerate(zip(offs, (3, 40, 5))):
        assert (got[off // 4:off // 4 + n] == k + 1).all()
    one, w1 = chain.pack_constants([const[0], pool], [chain._Pointer(0), chain._Pointer(1)],
                                   ctx, chained.cl_device)
    assert one == [const[0], pool] and w1 == [0, 1]


def test_a_large_constant_keeps_its_own_argument(chained, monkeypatch):
    """pack_constants: a constant larger than PACK_EACH_MAX (a plan's weight arena) is not
    copied into the packed buffer; the smaller ones are, and every word still points at its
    bytes."""
    import pyopencl as cl

    monkeypatch.setattr(chain, "PACK_EACH_MAX", 100)
    ctx, mf = chained.context, cl.mem_flags
    const = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR,
                       hostbuf=np.full(n, k + 1, np.int32)) for k, n in enumerate((3, 40, 5))]
    pool = cl.Buffer(ctx, mf.READ_WRITE, 64)
    bufs = [const[0], pool, const[1], const[2]]
    out, w = chain.pack_constants(bufs, [chain._Pointer(k) for k in range(4)], ctx,
                                  chained.cl_device)
    assert out[:2] == [pool, const[1]] and len(out) == 3  # (the 160 bytes: its own)
    assert [w[k] & chain.PACK_INDEX for k in range(4)] == [2, 0, 1, 2]
    assert [(w[k] >> chain.PACK_BITS) << chain.PACK_ALIGN_BITS for k in (0, 3)] == [0, 128]
    q = cl.CommandQueue(ctx)
    got = np.empty(out[2].size // 4, np.int32)
    cl.enqueue_copy(q, got, out[2])
    assert (got[:3] == 1).all() and (got[32:37] == 3).all()
