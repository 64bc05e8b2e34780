"""ClPreparedModel: the execution paths of a model prepared for the OpenCL device.

The plan (partitions, fusions, the buffer pool) is clnn/plan.py's; the launches clnn/launch's.
An execution of a CL partition enqueues the copies of its inputs, every kernel and the copies of
the tensors that leave it, then waits once. A tensor that a later CL partition reads stays in
device memory (clnn.memory.PoolTensor, copied pool to pool on the device); only model inputs /
outputs and the tensors a host partition reads travel between host and device. Host partitions
run on the reference executor (the fallback); an IF / WHILE runs its subgraphs as CL
partitions of their own (clnn/control_flow/). Each request runs as a clnn.execution.Execution
(its queue, output memories, events, host time); how a plan's launches run (one by one, or as
chains) is the prepared model's clnn.execution.PlanRunner.
"""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np

from clnn import control_flow, program_cache
from clnn.execution import Execution, ShortPath, runner_for
from clnn.launch import enqueue_launch
from clnn.memory import ClBuffer, DeviceTensor, PoolTensor, host_region, on_host
from clnn.plan import Planner, partition
from hal.driver import (
    DriverPreparedModel,
    begin_execution,
    failed_execution,
    finished_execution,
    read_inputs,
    write_outputs,
)
from hal.errors import ErrorStatus
from hal.interfaces import ExecutionResult
from hal.types import NO_TIMING, NUMPY_DTYPE, MeasureTiming, Memory, Timing


class ClPreparedModel(DriverPreparedModel):
    def __init__(self, device, model, supported: list[bool], compiled: bool = False,
                 marker=None):
        """``compiled``: the programs come from a compilation cache (nothing to compile);
        ``marker``: the model's marker where the device started its compile work before the
        layout pass (clnn.device.ClDevice._compile_ahead), None: started here."""
        self.device = device
        self.model = model
        #: the device's queue (an execution that measures runs on the device's timing queue)
        self.queue = device.queue
        self.partitions = partition(model, supported)
        self.planner = Planner(device, model, self.partitions)
        self.executor = self.planner.executor
        self._lock = threading.RLock()
        #: the last execution (clnn.execution.Execution): its host spans for clnn run --trace
        self.last_execution: Execution | None = None
        #: the layout pass that made ``model`` from the one given to prepare (clnn/layout.py's
        #: Rewrite; None: the model as given)
        self.layout = None
        #: referenced subgraph -> its partitions and plans (clnn/control_flow/)
        self.subgraph_runs: dict = {}
        #: which subgraph runs may leave their outputs in their pools (clnn.control_flow.reruns)
        self.reruns = None
        #: whether the device reads host arrays in place (clnn.launch.direct_inputs_on; found
        #: at the first WHILE: clnn.control_flow.run._to_device)
        self.direct_inputs = None
        #: (condition, body) -> the loop values a host-driven WHILE's scalar operations read,
        #: None where the loop is not host-driven (clnn.control_flow.host_loops._host_reads)
        self.host_loops: dict = {}
        #: how the plans' launches run (one by one, or as chains); programs from a compilation
        #: cache: the warm-up makes no chain (compile work; the second execution makes them)
        self.runner = runner_for(device, compiled)
        if marker is None:
            marker = self._spare_helper(device, model, compiled)
        self.planner.runner = self.runner
        try:
            self.planner.plan_ahead()
            control_flow.plan_ahead(self, model.main, self.partitions)
        except BaseException:
            for h in (self.planner.spare_helper, self.planner.compile_helper):
                if h is not None:
                    h.stop()
            raise
        tuner = getattr(device, "tuner", None)
        if tuner is not None:  # the layers the tuning budget left to the heuristic
            tuner.flush()
        constants = self.executor.constants(None)
        #: no IF / WHILE, and no plan made from an input's values (only from constants)
        self._plans_static = not model.referenced and all(
            i in constants for p in self.partitions for i in p.host_inputs)
        #: the request's inputs are only uploaded (and every partition an OpenCL one): read as
        #: views of the request's memory, not copied (a copy per execution grows with the
        #: input: an image model's input is megabytes; clnn bench models)
        self._uploads_only = all(p.on_cl for p in self.partitions) and (
            self._plans_static or self._subgraphs_upload(constants))
        #: per model input, whether an execution copies it out of the request's memory (where
        #: not every input is only uploaded: :meth:`_copied_inputs`)
        self._input_copies = False if self._uploads_only else self._copied_inputs()
        #: the path of the requests that need no more than a launch of the plan
        #: (clnn.execution.ShortPath), None where the model has more
        self.short_path = ShortPath(self) if ShortPath.wanted(self) else None
        #: seconds of the warm-up launches at prepare (see :meth:`warm_up`)
        self.warm_up_seconds = 0.0
        #: of them: the launches one by one ("launches_s": kernels compiled at their first
        #: launch) and the zero execution ("zero_s"; the first launches where it makes them)
        self.warm_up_parts = {"launches_s": 0.0, "zero_s": 0.0}
        with self.runner.warm_up():
            self.warm_up()
        if marker is not None:  # (its kernels now in PoCL's cache; its chains' programs too)
            chains = [ch.key for ch in self.runner.chains(self._all_plans()) if ch.key]
            program_cache.keep_binary_list(
                marker, device.programs.binary_files([*self.planner.kernel_keys, *chains]))

    def _subgraphs_upload(self, constants) -> bool:
        """Whether a model with IF / WHILE only uploads its inputs too: no plan of the main
        subgraph made from an input's values, and every partition of every subgraph an
        OpenCL one planned from shapes alone (an IF's condition is read on the host during
        the execution, a WHILE's inputs uploaded before its first iteration)."""
        return all(i in constants for p in self.partitions for i in p.host_inputs) and all(
            p.on_cl and not p.host_inputs for run in self.subgraph_runs.values()
            for p in run.partitions)

    def _copied_inputs(self) -> list[bool]:
        """Per model input, whether an execution reads it as a copy of the request's memory:
        unless only OpenCL partitions planned at prepare read it, and WHILE loops whose
        subgraphs read it on the device only (clnn.control_flow.loop_input_on_device: it is
        read in place or uploaded before the first iteration). A WHILE's 1 MiB input is then
        not copied per execution, its counters (read by the host) are."""
        return [not all(self._read_on_device(p, i) for p in self.partitions if i in p.inputs)
                for i in self.model.main.input_indexes]

    def _read_on_device(self, part, i: int) -> bool:
        if i in part.host_inputs:
            return False
        if part.control:
            return control_flow.loop_input_on_device(self, self.model.main, part.ops[0], i)
        return part.on_cl and bool(part.plans) and None not in part.plans.values()

    def _spare_helper(self, device, model, compiled: bool):
        """Where the model was never prepared here (clnn.program_cache.model_marker,
        returned) and its kernels compile, get the compile work going during the planning:
        where the runner builds chains at prepare (one program per chain), the compiler warmed
        up on a thread (clnn.program_cache.ProgramCache.warm_compiler); else, where a helper
        process may compile part of the kernels, the helper started now, so that its start-up
        overlaps the planning (else one starts as the kernels' first half builds, where they
        were never built here: clnn.program_cache.ProgramCache.build_together)."""
        cl_ops = sum(len(p.ops) for p in self.partitions if p.on_cl)
        chains = self.runner.chains_at_prepare()
        helper = device.options.compile_helper and \
            program_cache.CompileHelper.wanted(device.context, cl_ops // 2)
        if compiled or not (chains or helper):
            return None
        marker = program_cache.model_marker(device, model)
        if marker.exists():  # its programs built from their binaries while the plans are made
            device.programs.prefetch(program_cache.kept_binary_list(marker))
        elif chains:
            device.programs.warm_compiler()
        else:
            self.planner.spare_helper = program_cache.CompileHelper.spawn(device.context)
        return marker

    @property
    def fused_into(self) -> dict[int, int]:
        """operation -> the operation whose kernels do its work (clnn/fusion)"""
        return self.planner.fused_into

    @property
    def build_seconds(self) -> float:
        return self.planner.build_seconds

    def warm_up(self):
        """Run every launch of the plans made at prepare once, so the first execution compiles
        nothing: PoCL compiles a kernel at its first enqueue (most of a cold first execution:
        clnn bench prepare --models); a program binary taken afterwards (the compilation
        cache) carries the compiled kernels. Then one execution on zero inputs through the
        execution path itself (:meth:`_zero_inputs`), so that the first execution also costs
        what a steady-state one does: compiles evict the constants from the caches, and a
        request's host arrays come from fresh memory the first time (the first execution
        against the next ones, with and without it: clnn bench prepare --models).

        The launches one by one, each on its zeroed pool (so an index a kernel reads is 0,
        never one computed from another kernel's output), are needed where a helper process
        compiles part of the kernels (clnn.program_cache.CompileHelper: this process launches
        its own first, then the helper's from its last back, from PoCL's cache where the helper
        compiled them, and the helper is stopped), where a progress bar follows the compiles,
        and where the zero execution cannot run or fails part-way; otherwise the zero execution
        launches every kernel itself."""
        t0 = time.perf_counter()
        parts = list(self.partitions)  # and the IF / WHILE subgraphs' (clnn/control_flow/)
        planners = [self.planner]
        for run in self.subgraph_runs.values():
            parts.extend(run.partitions)
            planners.append(getattr(run, "planner", None))
        todo = [(plan, launch) for p in parts for plan in p.plans.values()
                if plan is not None for launch in plan.launches if launch.lazy is None]
        helpers = [h for h in (getattr(pl, "compile_helper", None) for pl in planners) if h]
        if helpers:  # this process's kernels first, then the helpers' from their last back
            todo.sort(key=lambda t: max(h.order(t[1].kernel.function_name) for h in helpers))
        zero_inputs = self._zero_inputs()
        one_by_one = bool(helpers or program_cache.listeners) or zero_inputs is None
        try:
            if one_by_one:
                self._timed("launches_s", self._launch_each, todo, bool(helpers))
        finally:
            for h in helpers:
                h.stop()
            for pl in planners:
                if pl is not None:
                    pl.compile_helper = None
        if zero_inputs is not None and not self._timed("zero_s", self._run_zero, zero_inputs) \
                and not one_by_one:
            self._timed("launches_s", self._launch_each, todo, False)
        self.warm_up_seconds = time.perf_counter() - t0

    def _timed(self, part: str, fn, *args):
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.warm_up_parts[part] += time.perf_counter() - t0

    def _all_plans(self) -> list:
        parts = list(self.partitions)
        for run in self.subgraph_runs.values():  # the IF / WHILE subgraphs'
            parts.extend(run.partitions)
        return [plan for p in parts for plan in p.plans.values() if plan is not None]

    def planned_shapes(self) -> dict:
        """Operand -> shape of the main graph's plans made so far (the shapes the kernels ran
        at: where the model's dimensions leave some open, e.g. an ONNX import's batch)."""
        shapes: dict = {}
        for p in self.partitions:
            for plan in p.plans.values():
                if plan is not None:
                    shapes.update(plan.shapes)
        return shapes

    def wait_chains(self):
        """Make the plans' chains now (those not started yet: compiled in the background from
        a plan's clnn.execution.CHAIN_AFTER-th execution on) and wait until they are built
        (clnn.chain.Job): from then on the executions run them. Measurements of the steady
        state call it."""
        with self._lock:
            self.runner.wait(self._all_plans())

    def chains_started(self) -> bool:
        """Whether chains were made, or started, for any plan (clnn.chain)."""
        return self.runner.started(self._all_plans())

    def chains(self) -> list:
        """The chains the executions run (after :meth:`wait_chains`)."""
        return self.runner.chains(self._all_plans())

    def _launch_each(self, todo: list, report: bool):
        import pyopencl as cl

        zero = np.zeros(1, np.uint8)
        try:
            for done, (plan, launch) in enumerate(todo, 1):
                cl.enqueue_fill_buffer(self.queue, plan.pool, zero, 0, plan.pool.size)
                enqueue_launch(self.queue, launch)
                if program_cache.listeners or report:  # a bar moves as the kernels compile
                    self.queue.finish()
                    program_cache.notify("warm_up", done, len(todo))
            if todo:
                self.queue.finish()
        except cl.Error:  # the execution that launches it reports the error
            pass

    def _zero_inputs(self) -> list | None:
        """Zero arrays for the model's inputs; None where an input's shape is left to the
        request, or where the model has an IF / WHILE (a loop's condition on zero inputs could
        run to the loop timeout)."""
        if not self._plans_static:  # (zeros read on the host would make a plan of their own)
            return None
        sg = self.model.main
        ops = [sg.operands[i] for i in sg.input_indexes]
        if not all(op.is_fully_specified() for op in ops):
            return None
        return [np.zeros(tuple(op.dimensions), NUMPY_DTYPE[op.type]) for op in ops]

    def _run_zero(self, inputs: list) -> bool:
        """The zero execution, a request of its own executed as any other (its pool, the
        inputs' copies and the outputs' writes come from and go to host memory as a user's
        will: the first time, fresh pages, whose faults the first execution would otherwise
        pay: `clnn run`'s first execution time); False where it failed (the real executions
        report their own errors, not prepare)."""
        from hal.builder import make_request

        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (NumPy's on empty tensors in host partitions)
                result = self.execute_synchronously(make_request(self.model, inputs))
        except Exception:  # noqa: BLE001 (see the docstring)
            return False
        return result.status == ErrorStatus.NONE

    # ------------------------------------------------------------------ running
    @property
    def host_spans(self) -> list:
        """(partition, start ns, end ns) of the partitions that ran on the host in the last
        execution (clnn run --trace)."""
        return self.last_execution.host_spans if self.last_execution is not None else []

    def run(self, inputs: list, events=None, execution: Execution | None = None
            ) -> list[np.ndarray]:
        """Run on input arrays (None: omitted); returns the output arrays. ``execution``: the
        request's state (default: on the device's queue, collecting ``events``). Executions
        of one prepared model are serialized: its plans' pools and kernels are shared
        state."""
        with self._lock:
            if execution is None:
                execution = Execution(self, self.queue, events=events)
            return self._run_locked(inputs, execution)

    def run_keeping_all(self, inputs: list) -> dict:
        """A debugging run: the value of every operand (constants, inputs, and every tensor
        an operation writes, downloaded from the pool before it is reused), with the fusions
        and kernels of a normal run. Operands that no kernel writes (the output of a
        convolution whose activation is fused into it) are absent."""
        with self._lock, np.errstate(all="ignore"):
            values = self._run_locked(inputs, Execution(self, self.queue, keep_all=True),
                                      all_values=True)
        return {i: on_host(v) for i, v in values.items()}

    def _run_locked(self, inputs: list, execution: Execution, all_values=False):
        sg = self.model.main
        self.last_execution = execution
        values = dict(self.executor.constants(None))
        omitted = set()
        for i, arr in zip(sg.input_indexes, inputs):
            if arr is None:
                omitted.add(i)
            values[i] = arr
        try:
            execution.run_main(values, omitted)
            if all_values:
                return values
            return [self._model_output(i, values[i], execution) for i in sg.output_indexes]
        finally:
            execution.release()

    def _output_memories(self, request) -> dict:
        """Model output -> where an execution leaves it: the request's device memory
        (ClBuffer), or its bytes in the client's host memory (a writable uint8 array, which
        results are read into, or kernels write: clnn.launch.DirectOutput; not copied there
        after the execution), unless those bytes overlap an input's (read while the kernels
        run: the output is then copied there once the execution is done)."""
        found = {}
        inputs = None
        for arg, i in zip(request.outputs, self.model.main.output_indexes):
            pool = request.pools[arg.location.pool_index]
            if not isinstance(pool, Memory):  # (a host Memory checked first: ClBuffer's
                if isinstance(pool, ClBuffer):  # check is abc's)
                    found[i] = pool
            elif arg.location.length:
                if inputs is None:
                    inputs = _input_spans(request)
                loc = arg.location
                if any(p is pool and lo < loc.offset + loc.length and loc.offset < hi
                       for p, lo, hi in inputs):
                    continue
                try:
                    region = np.frombuffer(pool.view(), np.uint8, loc.length, loc.offset)
                except (ValueError, TypeError):  # (validated before: not expected)
                    continue
                if region.flags.writeable:
                    found[i] = region
        return found

    @staticmethod
    def _model_output(i: int, value, execution: Execution):
        """A model output left in device memory (an IF / WHILE result): copied on the device
        into the output's device memory, else downloaded."""
        import pyopencl as cl

        dst = execution.device_outputs.get(i)
        if not isinstance(value, PoolTensor):
            return value
        if isinstance(dst, np.ndarray):  # its bytes in the client's memory: read into them
            return value.to_host(host_region(dst, value.shape, value.dtype))
        if dst is None:
            return value.to_host()
        dst.ensure(value.nbytes)
        if value.nbytes:
            cl.enqueue_copy(execution.queue, dst.cl_buffer, value.cl_buffer,
                            src_offset=value.offset, byte_count=value.nbytes)
            execution.queue.finish()
        return DeviceTensor(dst, value.shape)

    def execute_synchronously(self, request, measure=MeasureTiming.NO, deadline=None,
                              loop_timeout_duration=None) -> ExecutionResult:
        if self.short_path is not None and measure is MeasureTiming.NO and deadline is None \
                and loop_timeout_duration is None:
            try:
                result = self.short_path.execute(request)
            except Exception as e:  # never crash the caller
                return failed_execution(e)
            if result is not None:
                return result
        t0 = time.perf_counter_ns()
        try:
            timeout = begin_execution(self, request, measure, deadline, loop_timeout_duration)
            with self._lock:
                on_device, status, shapes = self._execute_locked(request, measure, deadline,
                                                                 timeout)
        except Exception as e:  # never crash the caller
            return failed_execution(e)
        timing = NO_TIMING
        if measure == MeasureTiming.YES:
            in_driver = (time.perf_counter_ns() - t0) // 1000
            timing = Timing(min(on_device, in_driver) if on_device is not None
                            else NO_TIMING.time_on_device, in_driver)
        return finished_execution(status, shapes, timing)

    def _execute_locked(self, request, measure, deadline, timeout):
        """Read the inputs (device memories stay on the device), run, write the outputs.
        Time on device: the kernels' OpenCL profiling intervals plus the partitions that ran on
        the host (None when the queue gives no profiling information)."""
        inputs = read_inputs(self.model, request, copy=self._input_copies)
        device_outputs = self._output_memories(request)
        self.executor.deadline_ns = deadline
        self.executor.loop_timeout_ns = timeout
        events = [] if measure == MeasureTiming.YES else None
        queue = self.device.timing_queue() if events is not None else self.queue
        execution = Execution(self, queue, device_outputs, events)
        with np.errstate(all="ignore"):
            outputs = self.run(inputs, execution=execution)
        status, shapes = write_outputs(self.model, request, outputs)
        on_device = None
        if events is not None:
            import pyopencl as cl

            try:
                kernel_ns = sum(ev.profile.end - ev.profile.start for _, ev in events)
                on_device = (kernel_ns + execution.host_ns) // 1000
            except cl.Error:  # no profiling information: not available
                on_device = None
        return on_device, status, shapes

    # ------------------------------------------------------------------ reporting
    def pool_report(self) -> dict:
        """Pool bytes next to the sum of the (aligned) tensor sizes, over every plan made."""
        plans = [pl for p in self.partitions for pl in p.plans.values() if pl is not None]
        return {"partitions": [("cl" if p.on_cl else "reference", len(p.ops))
                               for p in self.partitions],
                "plans": len(plans),
                "pool_bytes": sum(pl.pool_bytes for pl in plans),
                "tensor_bytes": sum(pl.intermediate_bytes for pl in plans),
                "constant_bytes": self.planner.const_bytes,
                "launches": sum(len(pl.launches) for pl in plans),
                "views": sum(len(pl.views) for pl in plans)}


def _input_spans(request) -> list:
    """(pool, first byte, end byte) of the request's inputs that have a value."""
    return [(request.pools[a.location.pool_index], a.location.offset,
             a.location.offset + a.location.length)
            for a in request.inputs if not a.has_no_value]
