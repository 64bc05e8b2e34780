"""One execution of a prepared model, and how a plan's launches run.

An :class:`Execution` is one request's state: the queue it runs on (the device's, or its
timing queue when the request measures), the device memories its model outputs go to, the
profiling events it collects, whether it keeps every intermediate, and the time and spans of
the partitions that ran on the host. It runs partitions (OpenCL plans, host partitions on the
reference executor, IF / WHILE through clnn/control_flow/), so the prepared model holds no
per-request state.

A :class:`PlanRunner` is how a plan's launches run: :class:`OneByOne` (each launch enqueued
on its own) or :class:`Chained` (runs of them as clnn.chain.Chains, on devices that want
chains). The runner owns its promotion and warm-up policy: which executions count, from which
one a plan's chains are compiled, and waiting for them.
"""

from __future__ import annotations

import contextlib
import math
import time
import weakref
from dataclasses import dataclass

import numpy as np

from clnn import chain, control_flow
from clnn.launch import bind_request, chained_events, enqueue_bound, enqueue_plan
from clnn.memory import on_device
from hal.driver import finished_execution, output_shape, request_key, write_outputs
from hal.errors import ErrorStatus, GeneralFailure, InvalidArgument
from hal.interfaces import LOOP_TIMEOUT_DEFAULT_NS, ExecutionResult
from hal.operations.context import shapes_compatible
from hal.types import NO_TIMING, NUMPY_DTYPE, Memory
from hal.validation_request import request_dimensions

#: the execution of a plan from which its chains are compiled (in the background) when never
#: built on this machine: a model run once or twice (a test, one command) never pays for it;
#: PlanRunner.wait starts them at once
CHAIN_AFTER = 3


class PlanRunner:
    """How a plan's launches run: each launch on its own (the base behaviour)."""

    #: executions not counted by the promotion policy (the warm-up's)
    warming = False

    def run(self, plan, execution, values: dict, device_outputs: dict, resident=()):
        """Enqueue ``plan`` for ``execution`` (clnn.launch.enqueue_plan): ``values`` gives its
        inputs and receives its outputs."""
        enqueue_plan(execution.queue, plan, values, device_outputs, execution.events,
                     execution.keep_all, resident, execution.held)

    def counted(self, plan) -> None:
        """Before an execution that collects no events and keeps no intermediate runs
        ``plan`` by its steps itself (clnn.launch.enqueue_bound: the short path): the
        policy's count (nothing here)."""

    @contextlib.contextmanager
    def warm_up(self):
        """While the block runs, executions are the warm-up's (not counted)."""
        self.warming = True
        try:
            yield
        finally:
            self.warming = False

    def chains_at_prepare(self) -> bool:
        """Whether this prepare builds chains (:meth:`chain_first`)."""
        return False

    def chain_first(self, plan) -> list | None:
        """At prepare, before the plan's programs are built: the plan's steps where runs of
        its launches are to be chains built at prepare (:meth:`build_chains`; their launches'
        own kernels then made only where they run on their own), else None."""
        return None

    def build_chains(self, plan) -> None:
        """Build the chains :meth:`chain_first` made for ``plan`` (its other launches' kernels
        made)."""

    def wait(self, plans: list) -> None:
        """Make ready now whatever later executions of ``plans`` would run (nothing here)."""

    def started(self, plans: list) -> bool:
        """Whether anything was made, or started, for ``plans`` beyond their launches."""
        return False

    def chains(self, plans: list) -> list:
        """The clnn.chain.Chains the executions of ``plans`` run."""
        return []


class OneByOne(PlanRunner):
    """Every launch enqueued on its own (devices without chains)."""


@dataclass
class _PlanChains:
    """A plan's chain state: executions counted, whether its chains were asked for, the steps
    (launches and Chains) and the job building them (None once ready or without chains)."""

    plan: object
    runs: int = 0
    tried: bool = False
    steps: list | None = None
    job: object = None


class Chained(PlanRunner):
    """Runs of a plan's launches as chains (clnn/chain.py). A prepare builds the chains of the
    plans it makes (:meth:`chain_first`; one from the compilation cache, from their programs
    there). For plans made at an execution: a chain built before on this machine is built at
    once; else compiled in the background from the plan's :data:`CHAIN_AFTER`-th execution on
    (the warm-up's run not counted): a model run once or twice never pays for it; for a
    prepared model from the compilation cache (``compiled``), from its second execution on.
    Until the chains are ready, and in executions that collect per-launch events or keep every
    intermediate, the launches run one by one."""

    def __init__(self, cl_device, context, compiled: bool = False,
                 min_launches: int | None = None, helpers: bool = True,
                 cache_root: str | None = None, programs=None):
        """``helpers``: the device's ``compile_helper`` option (False: chains built here);
        ``cache_root``: its ``cache_dir`` option (where the chains' programs are cached);
        ``programs``: its clnn.program_cache.ProgramCache (chains restored from a compilation
        cache are found there)."""
        self.programs = programs
        self.cl_device = cl_device
        self.context = context
        self.helpers = helpers
        self.cache_root = cache_root
        #: the fewest launches chained (clnn.chain.MIN_LAUNCHES by default)
        self.min_launches = chain.MIN_LAUNCHES if min_launches is None else min_launches
        #: the counted execution from which a plan's chains are asked for (0: the warm-up's)
        self.first = 2 if compiled else 0
        self._plans: dict[int, _PlanChains] = {}
        #: seconds building chains at prepare (:meth:`build_chains`)
        self.build_s = 0.0

    def state(self, plan) -> _PlanChains:
        """``plan``'s chain state (made at its first execution)."""
        st = self._plans.get(id(plan))
        if st is None:  # (the state holds the plan: its id is not reused)
            st = self._plans[id(plan)] = _PlanChains(plan)
        return st

    def run(self, plan, execution, values: dict, device_outputs: dict, resident=()):
        self.promote(plan, execution)
        super().run(plan, execution, values, device_outputs, resident)

    def promote(self, plan, execution) -> None:
        """The policy, before ``execution`` runs ``plan``: an execution that would run chains
        (no per-launch events, no intermediates kept) and is not the warm-up's counts; from
        the :attr:`first` counted one the chains are asked for (started from the
        :data:`CHAIN_AFTER`-th); a job compiling them is polled."""
        self._promote(plan, chained_events(execution.events) and not execution.keep_all)

    def counted(self, plan) -> None:
        st = self._plans.get(id(plan))
        if st is None or not st.tried or st.job is not None:  # (else: nothing left to do)
            self._promote(plan, True)

    def _promote(self, plan, counts: bool) -> None:
        st = self.state(plan)
        if not st.tried and counts:
            if not self.warming:
                st.runs += 1
            if st.runs >= self.first:
                self._ask(st, start=st.runs >= CHAIN_AFTER)
        elif st.job is not None:
            self._poll(st)

    def _ask(self, st: _PlanChains, start: bool) -> None:
        """Make the plan's chains: built at once where built before on this machine (from the
        caches), else, with ``start``, compiled in the background (clnn.chain.Job)."""
        plan = st.plan
        if any(la.args is None for la in plan.launches):
            st.tried = True
            return
        before = chain.built_before(plan, self.context, self.min_launches, self.cache_root)
        if not start and not before:
            return  # (a later execution starts it)
        st.tried = True
        st.steps = chain.chain_plan(plan, self.cl_device, self.context, self.min_launches,
                                    self.cache_root)
        if not any(isinstance(s, chain.Chain) for s in st.steps):
            return
        job = chain.Job(plan, st.steps, self.context, before, self.helpers, self.min_launches,
                        self.cache_root)
        # (built at once: no job)
        st.job = job if job.pending else None

    def chain_first(self, plan) -> list | None:
        """The chains built at prepare: a chain's program compiles in less time than its
        kernels' own programs (one function per kernel's task loop: clnn/chain.py), so the
        plan the executions run from the first one on costs the cold prepare less, and
        nothing is compiled afterwards. Its launches' own kernels are made only where they run
        on their own (clnn.launch.Launch.defer). A compilation cache saves the chains'
        programs and their kernels' sources with the other programs (clnn.chain._program,
        :meth:`build_chains` record them), and a prepare from it builds them from there."""
        if not self.chains_at_prepare():
            return None
        st = self.state(plan)
        st.tried = True
        st.steps = chain.chain_plan(plan, self.cl_device, self.context, self.min_launches,
                                    self.cache_root)
        if len(plan.launches) >= self.min_launches:  # (their sources made the parts)
            from clnn.program_cache import record

            for key in dict.fromkeys(la.key for la in plan.launches if la.key is not None):
                record(("source", *key))  # (a compilation cache keeps them)
        if not any(isinstance(s, chain.Chain) for s in st.steps):
            return None
        return st.steps

    def chains_at_prepare(self) -> bool:
        return True

    def build_chains(self, plan) -> None:
        st = self.state(plan)
        if st.steps is None or not any(isinstance(s, chain.Chain) for s in st.steps):
            return
        chains = [s for s in st.steps if isinstance(s, chain.Chain)]
        if not chain.built_before(plan, self.context, self.min_launches, self.cache_root):
            _say_chains(chains)
        t0 = time.perf_counter()
        chain.Job(plan, st.steps, self.context, True, False, self.min_launches,
                  self.cache_root, self.programs)
        self.build_s += time.perf_counter() - t0

    @staticmethod
    def _poll(st: _PlanChains, block: bool = False) -> None:
        if st.job.poll(block=block):
            st.job = None

    def wait(self, plans: list) -> None:
        """Make the plans' chains now (those not asked for yet) and wait until they are built:
        from then on the executions run them. Measurements of the steady state call it."""
        for plan in plans:
            st = self.state(plan)
            if not st.tried:
                self._ask(st, start=True)
            if st.job is not None:
                self._poll(st, block=True)

    def started(self, plans: list) -> bool:
        return any(self.state(plan).tried for plan in plans)

    def chains(self, plans: list) -> list:
        return [s for plan in plans for s in plan.chained or () if isinstance(s, chain.Chain)]


def _say_chains(chains: list) -> None:
    """Log what a prepare compiles as chains (clnn.program_cache.LOG, INFO: quiet unless the
    application configures logging)."""
    from clnn.program_cache import LOG

    kernels = len({la.key for ch in chains for la in ch.launches})
    launches = sum(len(ch.launches) for ch in chains)
    LOG.info("compiling %d OpenCL kernels as %d chained program%s of %d launches; a later "
             "prepare of the same model takes %s from the kernel cache", kernels, len(chains),
             "s" if len(chains) > 1 else "", launches, "them" if len(chains) > 1 else "it")


def runner_for(device, compiled: bool = False) -> PlanRunner:
    """The runner of ``device``'s plans: :class:`Chained` where its options and class want
    chains (clnn.chain.enabled), else :class:`OneByOne`."""
    options = getattr(device, "options", None)
    if chain.enabled(device.cl_device, options):
        return Chained(device.cl_device, device.context, compiled,
                       getattr(options, "chain_min_launches", None),
                       getattr(options, "compile_helper", True),
                       getattr(options, "cache_dir", None), getattr(device, "programs", None))
    return OneByOne()


class Execution:
    """One request's state, and the running of its partitions (see the module's docstring).
    ``queue``: the queue it runs on; ``device_outputs``: model output operand -> the device
    memory (clnn.memory.ClBuffer) it goes to; ``events``: a list collecting (launch, event)
    profiling pairs, or None; ``keep_all``: every intermediate downloaded (a debugging
    run)."""

    def __init__(self, prepared, queue, device_outputs: dict | None = None, events=None,
                 keep_all: bool = False):
        self.prepared = prepared
        self.queue = queue
        self.device_outputs = device_outputs or {}
        self.events = events
        self.keep_all = keep_all
        #: nanoseconds of the main subgraph's partitions that ran on the host
        self.host_ns = 0
        #: (partition, start ns, end ns) of those partitions (clnn run --trace)
        self.host_spans: list = []
        #: host arrays that enqueued commands read, kept alive until :meth:`release`
        self.held: list = []
        #: the planner of the subgraph whose operands ``device_outputs`` names (None: the main
        #: one; an IF's branch whose outputs are the model's: clnn.control_flow)
        self.outputs_of = None

    def nested(self, events) -> Execution:
        """This request's state for an IF / WHILE's subgraphs (on its queue), collecting their
        profiling events in ``events`` (a list, or None); their partitions keep no
        intermediates and write no model output memory."""
        nested = Execution(self.prepared, self.queue, events=events)
        nested.held = self.held
        return nested

    def release(self) -> None:
        """Wait for the commands that read :attr:`held` host arrays, then let them go (the
        end of the execution: its outputs were read, so this seldom waits). The request's
        output bytes (:attr:`device_outputs`) are let go too: the prepared model keeps its
        last execution (:attr:`host_spans`), and the client's memory is the client's once
        the execution returns (holding it would free it in the next execution, when that one
        replaces this: the munmap of a large request's pages timed as the next one's)."""
        if self.held:
            self.queue.finish()
            self.held.clear()
        self.device_outputs = {}

    @property
    def executor(self):
        """The reference executor of the host partitions (its constants, deadline, loop
        timeout)."""
        return self.prepared.executor

    @property
    def context(self):
        return self.prepared.device.context

    def run_main(self, values: dict, omitted: set) -> dict:
        """Run the main subgraph's partitions on ``values`` (the constants and inputs; it
        receives every value computed), timing those that run on the host."""
        events = self.events
        for part in self.prepared.partitions:
            self.executor.check_deadline()  # MISSED_DEADLINE_TRANSIENT between partitions
            n_events = len(events) if events is not None else 0
            t = time.perf_counter_ns()
            self.run_partition(part, values, omitted)
            if events is not None and len(events) == n_events:  # it ran on the host
                end = time.perf_counter_ns()
                self.host_ns += end - t
                self.host_spans.append((part, t, end))
        return values

    def run_partition(self, part, values: dict, omitted: set, planner=None) -> None:
        """Run one partition of the subgraph ``planner`` plans (None: the main one)."""
        pm = self.prepared
        planner = pm.planner if planner is None else planner
        sg = planner.sg
        if part.control:  # IF / WHILE: its subgraphs run as OpenCL partitions
            control_flow.run_control(self, sg, part.ops[0], values, planner.index)
            return
        if part.on_cl:
            plan = self._plan(planner, part, values)
            if plan is not None:
                device_outputs = self.device_outputs if planner is (
                    self.outputs_of or pm.planner) else {}
                pm.runner.run(plan, self, values, device_outputs, part.resident)
                return
        self._run_on_host(sg, part, values, omitted)

    @staticmethod
    def _plan(planner, part, values: dict):
        """The partition's plan for these values (None: it runs on the host)."""
        sg = planner.sg
        try:
            return planner.plan_for(part, values)
        except InvalidArgument as e:  # an operation rejecting its run-time inputs: as the
            raise GeneralFailure(e.reason) from e  # reference device, OP_FAILED
        except (ValueError, IndexError, ZeroDivisionError, OverflowError, KeyError) as e:
            # what the reference executor reports as an operation's failure (an empty
            # convolution window at these shapes): a sentence naming the operations
            names = ", ".join(f"{sg.operations[k].type.name} (operation {k})"
                              for k in part.ops)
            raise GeneralFailure(f"{names} failed while planning the OpenCL run: "
                                 f"{type(e).__name__}: {e}") from e

    def _run_on_host(self, sg, part, values: dict, omitted: set) -> None:
        """The host runs it: device memories are downloaded into host copies, the device
        values themselves kept for the OpenCL partitions that read them later."""
        host = dict(values)
        for i in part.inputs:
            if on_device(host.get(i)):
                host[i] = host[i].to_host()
        for k in part.ops:
            self.executor.check_deadline()
            self.executor.run_operation(sg, k, sg.operations[k], host, omitted)
            for o in sg.operations[k].outputs:
                values[o] = host[o]


@dataclass(frozen=True)
class _Layout:
    """What the short path reads of a request of one layout (hal.driver.request_key):
    ``inputs``: (operand, pool index, byte offset, element count, dtype, shape) each;
    ``outputs``: (operand, pool index, byte offset, byte length, whether its bytes overlap an
    input's: then read into an array of its own and copied after); ``shapes``: the
    hal.types.OutputShape of each output; ``plan_key``: the key of the partition's plan;
    ``binding``: the plan bound to the request's memories (clnn.launch.Binding), None where
    it runs through clnn.launch.enqueue_plan; ``plan``: a weak reference to the plan bound
    (a plan dropped and made again under its key has kernels of its own)."""

    inputs: tuple
    outputs: tuple
    shapes: list
    plan_key: tuple
    binding: object = None
    plan: object = None


#: the request layouts a ShortPath remembers (a client seldom has more than a few)
SHORT_LAYOUTS = 64


class ShortPath:
    """The execution path of a request to a model that is one OpenCL partition planned from
    shapes alone (no boolean input or output), no omitted argument, host memories only,
    MeasureTiming.NO, no deadline nor loop timeout (issue #36: a tiny model's execution is
    mostly its fixed cost). A request layout that passed the checks before on this prepared
    model (hal.driver.begin_execution, which reads nothing else of a request) runs straight:
    its inputs read as views of the request's memory, its outputs written there by the
    kernels or read into it, through the prepared model's runner (its chain policy kept).
    Any other request, and one whose outputs come back in another shape, takes the general
    path (``execute`` returns None, or hal.driver.write_outputs writes them)."""

    def __init__(self, prepared):
        self.prepared = prepared
        self.part = prepared.partitions[0]
        self.layouts: dict = {}

    @staticmethod
    def wanted(prepared) -> bool:
        """Whether ``prepared``'s executions may take the short path."""
        sg = prepared.model.main
        parts = prepared.partitions
        if len(parts) != 1 or not parts[0].on_cl or parts[0].control or \
                not prepared._uploads_only or not prepared._plans_static or \
                prepared.model.referenced:
            return False
        ops = [sg.operands[i] for i in (*sg.input_indexes, *sg.output_indexes)]
        return all(op.type.name not in ("TENSOR_BOOL8", "BOOL") for op in ops)

    def layout(self, request):
        """The request's _Layout (made at the second request of a layout that passed the
        checks), or None: the general path runs it."""
        key = request_key(request)
        found = self.layouts.get(key)
        if found is not None or key is None:
            return found
        seen = getattr(self.prepared, "_validated_layouts", ())
        if key not in seen:
            return None
        with self.prepared._lock:
            found = self._make(request)
        if len(self.layouts) >= SHORT_LAYOUTS:
            self.layouts.clear()
        self.layouts[key] = found or False  # (False: this layout takes the general path)
        return found

    def _make(self, request) -> _Layout | None:
        """The _Layout of a request that passed the checks (None: not one for the short
        path: an omitted argument, a device memory, an output too small or empty...)."""
        sg, pools = self.prepared.model.main, request.pools
        if any(a.has_no_value or not isinstance(pools[a.location.pool_index], Memory)
               for a in (*request.inputs, *request.outputs)):
            return None
        inputs, values = [], dict(self.prepared.executor.constants(None))
        for k, (a, i) in enumerate(zip(request.inputs, sg.input_indexes)):
            op, loc = sg.operands[i], a.location
            dt, dims = NUMPY_DTYPE[op.type], request_dimensions(f"input {k}", op, a.dimensions)
            if loc.length != math.prod(dims) * dt.itemsize or 0 in dims:
                return None
            inputs.append((i, loc.pool_index, loc.offset, math.prod(dims), dt, dims))
            values[i] = np.zeros(dims, dt)
        plan = self.prepared.planner.plan_for(self.part, values)
        key = next((k for k, v in self.part.plans.items() if v is plan), None)
        if plan is None or key is None:
            return None
        outputs, shapes = self._outputs(request, plan)
        if not outputs:
            return None
        binding = None
        if not self.part.resident and not any(overlap for *_, overlap in outputs):
            binding = bind_request(plan, [(i, p, off, n * dt.itemsize) for i, p, off, n, dt, _
                                          in inputs], [(o, p, off) for o, p, off, *_ in outputs])
        return _Layout(tuple(inputs), outputs, shapes, key, binding, weakref.ref(plan))

    def _outputs(self, request, plan) -> tuple:
        """(the _Layout's outputs, their OutputShapes) of a request run by ``plan``; (None,
        None) where an output's planned shape is unknown, empty, not the request's or larger
        than its bytes."""
        sg = self.prepared.model.main
        spans = [(a.location.pool_index, a.location.offset, a.location.offset +
                  a.location.length) for a in request.inputs]
        outputs, shapes = [], []
        for a, o in zip(request.outputs, sg.output_indexes):
            op, loc = sg.operands[o], a.location
            dims = plan.shapes.get(o)
            if dims is None or (a.dimensions and not shapes_compatible(a.dimensions, dims)) or \
                    not 0 < math.prod(dims) * NUMPY_DTYPE[op.type].itemsize <= loc.length:
                return None, None
            overlap = any(p == loc.pool_index and lo < loc.offset + loc.length and
                          loc.offset < hi for p, lo, hi in spans)
            outputs.append((o, loc.pool_index, loc.offset, loc.length, overlap))
            shapes.append(output_shape(dims, True))
        return tuple(outputs), shapes

    def execute(self, request):
        """The hal.interfaces.ExecutionResult of ``request``, or None: the general path runs
        it (nothing was run)."""
        lay = self.layout(request)
        if not lay:
            return None
        if lay.binding is not None:
            return self._run_bound(request, lay)
        return self._run_values(request, lay)

    def _run_bound(self, request, lay: _Layout):
        """A request whose plan reads and writes its memories in place (_Layout.binding):
        no array made for them, and no clnn.execution.Execution (nothing of the request
        stays after it: no host partition, no event)."""
        binding, pools = lay.binding, request.pools
        views = [pools[p].view() for p in binding.pools]
        for v, (end, writes) in zip(views, binding.ends):
            if v.nbytes < end or v.itemsize != 1 or v.ndim != 1 or not v.c_contiguous or \
                    (writes and v.readonly):  # (a view that is not the writable bytes its
                return None  # memory's size says: the general path's to answer)
        pm = self.prepared
        with pm._lock:
            plan = self.part.plans.get(lay.plan_key)
            if plan is None or plan is not lay.plan():  # (dropped: the layouts made again)
                self.layouts.clear()
                return None
            pm.executor.deadline_ns = None
            pm.executor.loop_timeout_ns = LOOP_TIMEOUT_DEFAULT_NS
            pm.last_execution = None
            pm.runner.counted(plan)
            enqueue_bound(pm.queue, plan, binding, views)
        return ExecutionResult(ErrorStatus.NONE, list(lay.shapes), NO_TIMING)

    def _run_values(self, request, lay: _Layout):
        """A request run through clnn.launch.enqueue_plan on arrays over its memories."""
        pm, pools = self.prepared, request.pools
        values = {}  # (the plan's inputs: the model's; its constants are on the device)
        for i, p, off, n, dt, dims in lay.inputs:
            arr = np.frombuffer(pools[p].view(), dt, n, off)
            arr.flags.writeable = False  # (read while the kernels run: as read_inputs does)
            values[i] = arr.reshape(dims)
        regions = {}
        for o, p, off, length, overlap in lay.outputs:
            region = np.frombuffer(pools[p].view(), np.uint8, length, off)
            if not overlap and region.flags.writeable:
                regions[o] = region
        with pm._lock:
            plan = self.part.plans.get(lay.plan_key)
            if plan is None:
                return None
            pm.executor.deadline_ns = None
            pm.executor.loop_timeout_ns = LOOP_TIMEOUT_DEFAULT_NS
            execution = pm.last_execution = Execution(pm, pm.queue, regions)
            try:
                pm.runner.run(plan, execution, values, regions, self.part.resident)
                outputs = [pm._model_output(o, values[o], execution) for o, *_ in lay.outputs]
            finally:
                execution.release()
        if all(_written_in(arr, regions.get(o), s.dimensions) for arr, (o, *_), s in
               zip(outputs, lay.outputs, lay.shapes)):
            return finished_execution(ErrorStatus.NONE, lay.shapes, NO_TIMING)
        return _written(pm.model, request, outputs)


def _written_in(arr, region, dims) -> bool:
    """Whether ``arr`` (an output) is the request's bytes ``region`` (read or written there
    during the execution) in the output's planned shape ``dims``: a view of ``region`` itself
    (NumPy's ``base`` of a view of a view is the first array, ``region``) made by
    clnn.memory.host_region, from its first byte (its view of ``region[:n]``). Comparing the
    two arrays' addresses (``__array_interface__``, about 0.8 us each) cost ~3 us of a tiny
    model's execution (#36)."""
    return region is not None and isinstance(arr, np.ndarray) and arr.base is region and \
        arr.shape == dims


def _written(model, request, outputs: list):
    """The ExecutionResult of an execution whose outputs are written into the request by
    hal.driver.write_outputs (some not read into its memory, or of another shape)."""
    status, shapes = write_outputs(model, request, outputs)
    return finished_execution(status, shapes, NO_TIMING)
