"""The OpenCL execution plan of a prepared model: partitions, fusions, the buffer pool.

A prepared model splits the main subgraph into *partitions*: maximal runs of operations the
OpenCL kernels support, and runs of the others, which the reference executor runs on the host
(the fallback). A CL partition gets one :class:`ClPlan` per signature of its input shapes:
shapes come from the HAL ``prepare()`` functions, so a plan is made at prepare when the model's
shapes allow it, else at the first execution with those shapes, and kept (least recently used
dropped first, :data:`MAX_PLANS` per partition). A plan holds the kernels with their arguments
set (clnn/launch/), and one pool buffer where every non-constant tensor of the partition lives
at an offset chosen by liveness (tensors whose lifetimes do not overlap share bytes); RESHAPE,
SQUEEZE, EXPAND_DIMS and identity CASTs of a pool tensor are views (their output is the input's
bytes, no launch, the input's lifetime extended over the view's: clnn/fusion/ find_views).
Constants of all partitions are uploaded once, into one constant buffer. A supported IF / WHILE
is a partition of its own (clnn/control_flow/ plans its subgraphs with Planners of their own).

A plan is made by the passes of clnn/passes (partition -> shapes -> fusion -> memory ->
realize; :meth:`Planner.plan_partition`), its launches pending until their programs are built:
one by one at an execution (:meth:`Planner.plan_for`), together at prepare
(:meth:`Planner.plan_ahead`).
"""

from __future__ import annotations

import threading
import time
from collections import ChainMap

import numpy as np

from clnn.kernels import kernel_for
from clnn.launch import direct_inputs_on, host_memory_shared
from clnn.memory import on_host
from clnn.options import options_of
from clnn.passes import fusion as fusion_pass
from clnn.passes import realize as realize_pass
from clnn.passes import select as select_pass
from clnn.passes import tune as tune_pass
from clnn.passes.memory import ALIGN, _align, plan_memory, plan_offsets  # noqa: F401
from clnn.passes.partition import CONSTANT, CONTROL_FLOW, LT, Partition, partition  # noqa: F401
from clnn.passes.realize import ClPlan, TooLarge, check_fits  # noqa: F401
from clnn.passes.shapes import infer_shapes, static_shapes
from hal.operations.context import OperationContext, operation_context
from hal.reference.executor import Executor  # the fallback: operations without a kernel

#: plans kept per partition (one per input-shape / parameter signature), least recently used
#: dropped first
MAX_PLANS = 32
_MISSING = object()
_NONE_OMITTED: frozenset = frozenset()


def concat_axes(sg, part, contexts, skipped) -> dict[int, int]:
    """CONCATENATION operation of ``part`` -> its axis, where that is a constant (the memory
    pass may write their inputs in place: clnn.passes.memory.find_slots)."""
    axes = {}
    for k, ctx in zip(part.ops, contexts):
        if sg.operations[k].type.name == "CONCATENATION" and k not in skipped:
            axis = ctx.scalar(ctx.num_inputs() - 1)
            if axis is not None:
                axes[k] = int(axis)
    return axes


class ConstantBuffer:
    """The constant operands of a subgraph's OpenCL operations, each at a fixed offset in one
    read-only device buffer, written there when a plan first reads it (:meth:`of`): most of a
    model's constant bytes are weights its kernels read packed, from the plan's own arena
    (clnn.launch.WeightArena), never from here (pose_landmark_full: 12.7 MB of constants,
    0.85 MB of them read by its launches). On a CPU device sharing the host's memory the
    buffer is host-accessible and written through a map (a copy each; an enqueued write was
    30-70 us of PoCL's queue per constant), elsewhere (a GPU's own memory) by enqueued writes."""

    def __init__(self, device, arrays: dict, offsets: dict, nbytes: int):
        import pyopencl as cl

        self.queue = device.queue
        self.offsets, self.nbytes = offsets, max(nbytes, 4)
        self.mapped = host_memory_shared(getattr(device, "cl_device", None))
        flags = cl.mem_flags.READ_ONLY | (cl.mem_flags.ALLOC_HOST_PTR if self.mapped else 0)
        self.buffer = cl.Buffer(device.context, flags, self.nbytes)
        #: operand -> its value, until it is written
        self._unwritten = dict(arrays)
        #: the map being written (mapped), the writes enqueued (elsewhere): until :meth:`wait`
        self._map = None
        self._writes: list = []
        self._any_written = False
        self._lock = threading.Lock()

    def of(self, operand: int):
        """The buffer, ``operand``'s value written into it where no plan read it before (a
        plan's kernels run once :meth:`wait` returned)."""
        if operand in self._unwritten:
            with self._lock:
                arr = self._unwritten.get(operand)
                if arr is not None:
                    if arr.nbytes:
                        self._write(np.ascontiguousarray(arr).reshape(-1).view(np.uint8),
                                    self.offsets[operand])
                    del self._unwritten[operand]
        return self.buffer

    def _write(self, data, offset: int):
        import pyopencl as cl

        if not self.mapped:
            self._writes.append(cl.enqueue_copy(self.queue, self.buffer, data,
                                                dst_offset=offset, is_blocking=False))
            return
        if self._map is None:  # (nothing written yet: nothing to keep)
            flag = cl.map_flags.WRITE if self._any_written else \
                cl.map_flags.WRITE_INVALIDATE_REGION
            self._map, _ = cl.enqueue_map_buffer(self.queue, self.buffer, flag, 0,
                                                 (self.nbytes,), np.uint8)
        self._map[offset:offset + data.nbytes] = data
        self._any_written = True

    def written(self, operand: int) -> bool:
        """Whether ``operand``'s value is in the buffer (a plan read it)."""
        return operand in self.offsets and operand not in self._unwritten

    def wait(self):
        """Finish the writes :meth:`of` made (the map released, the enqueued writes done):
        a plan's launches are built, any queue may run them."""
        with self._lock:
            done, self._writes = self._writes, []
            if self._map is not None:
                done.append(self._map.base.release(self.queue))
                self._map = None
        for event in done:
            event.wait()


class Planner:
    """Plans of one prepared model: the constant buffer, shape inference over the model, the
    plans of each CL partition, and which operations were fused into which."""

    def __init__(self, device, model, partitions: list[Partition], index: int | None = None,
                 executor: Executor | None = None, constants_of: Planner | None = None):
        """``constants_of``: a planner of the same subgraph and partitions whose constant
        buffer this one shares (a WHILE body's second run: clnn.control_flow)."""
        self.device = device
        self.model = model
        #: the subgraph planned: None the main one, else a referenced one (IF / WHILE)
        self.index = index
        self.sg = sg = model.main if index is None else model.referenced[index]
        self.programs = device.programs
        self.partitions = partitions
        self.executor = Executor(model) if executor is None else executor
        self.build_seconds = 0.0
        #: the process compiling part of the kernels plan_ahead built (program_cache.CompileHelper)
        self.compile_helper = None
        #: a helper started before planning, for plan_ahead's build (ClPreparedModel)
        self.spare_helper = None
        #: how the plans' launches run (clnn.execution.PlanRunner: the chains it builds at
        #: prepare); None: one by one
        self.runner = None
        #: the kernel keys of the plans plan_ahead made
        self.kernel_keys: list = []
        #: operation -> the operation whose kernels do its work (clnn/fusion/)
        self.fused_into: dict[int, int] = {}
        #: partition inputs get buffers of their own (clnn.launch.DirectInput): on a CPU device
        #: sharing the host's memory, where an execution binds the request's memory itself
        #: (``host_memory``), and in an IF / WHILE subgraph on any device, where an execution
        #: binds the carried tensors' buffers (a host array is copied into the input's buffer)
        cl_device = getattr(device, "cl_device", None)
        options = options_of(device)
        self.host_memory = cl_device is not None and direct_inputs_on(cl_device, options)
        self.direct_inputs = self.host_memory or (
            cl_device is not None and index is not None and
            (options is None or options.direct_inputs))
        #: the subgraph's outputs get buffers of their own (clnn.launch.DirectOutput), which an
        #: execution points at the request's memory: on a CPU device sharing the host's memory
        #: (elsewhere the kernels' writes would cross the bus; a read after them is one copy)
        self.direct_outputs = cl_device is not None and host_memory_shared(cl_device) and \
            (options is None or getattr(options, "direct_outputs", True))
        # constants of CL operations: one buffer, each written once, when a plan first reads it
        host_consts = self.executor.constants(index)
        #: the constants' values (not the subgraph references the executor also keeps)
        self.constant_values = {i: v for i, v in host_consts.items()
                                if sg.operands[i].lifetime in CONSTANT}
        if constants_of is not None:
            self.const_offsets = constants_of.const_offsets
            self.const_bytes = constants_of.const_bytes
            self.const_buffer = constants_of.const_buffer
        else:
            self._upload_constants(partitions, host_consts)

    def _upload_constants(self, partitions, host_consts) -> None:
        """The constant operands of the OpenCL operations in one device buffer
        (:class:`ConstantBuffer`: each written when a plan first reads it)."""
        sg, device = self.sg, self.device
        const_ops = sorted({i for p in partitions if p.on_cl and not p.control for k in p.ops
                            for i in sg.operations[k].inputs
                            if sg.operands[i].lifetime in CONSTANT and sg.operands[i].dimensions})
        self.const_offsets: dict[int, int] = {}
        end = 0
        for i in const_ops:
            self.const_offsets[i] = end
            end = _align(end + host_consts[i].nbytes)
        self.const_bytes = end
        check_fits(device, "the constant tensors of the OpenCL operations together",
                   self.const_bytes)
        self.const_buffer = ConstantBuffer(device, {i: host_consts[i] for i in const_ops},
                                           self.const_offsets, end)

    def plan_for(self, part: Partition, values: dict):
        """The plan of a CL partition for the input values of an execution (made and kept on
        first use); None: the partition runs on the reference device."""
        arrays = [values.get(i) for i in part.inputs]
        # an omitted model input (None): planned as a NO_VALUE operand of shape (0,) when every
        # operation reading it takes omitted inputs (KernelRegistration.omitted_inputs)
        omitted = _NONE_OMITTED
        if any(a is None for a in arrays):
            omitted = frozenset(i for i, a in zip(part.inputs, arrays) if a is None)
            if not self._takes_omitted(part, omitted):
                return None
        host_values = {i: on_host(values[i]) for i in part.host_inputs} \
            if part.host_inputs else {}
        key = (tuple((0,) if a is None else tuple(a.shape) for a in arrays),
               tuple(host_values[i].tobytes() for i in part.host_inputs), omitted)
        plans = part.plans
        if plans and next(reversed(plans)) == key:  # the one used last (a loop's body): kept
            return plans[key]                        # where it is, the most recently used
        plan = plans.pop(key, _MISSING)
        if plan is _MISSING:
            t0 = time.perf_counter()
            plan = self.plan_partition(part, dict(zip(part.inputs, key[0])), host_values,
                                       omitted)
            if plan is not None:  # each kernel built alone (plan_ahead builds them together)
                self._realize(plan)
            self.build_seconds += time.perf_counter() - t0
            while len(part.plans) >= MAX_PLANS:  # drop the least recently used
                part.plans.pop(next(iter(part.plans)))
        part.plans[key] = plan  # (re)inserted last: most recently used
        return plan

    def _realize(self, plan) -> None:
        """Make a plan made at an execution ready to run as it will from then on: as a
        prepare does (:meth:`plan_ahead`), its chains built now, the launches they run
        deferred, the others' kernels made; nothing compiles in the background afterwards."""
        if self.runner is not None:
            self._defer_chained(plan)
        realize_pass.finish(plan.launches, self.programs, self.device.limits)
        if self.runner is not None:
            self.runner.build_chains(plan)

    def _takes_omitted(self, part: Partition, omitted) -> bool:
        sg = self.sg
        return all(getattr(kernel_for(sg.operations[k].type), "omitted_inputs", False)
                   for k in part.ops if omitted.intersection(sg.operations[k].inputs))

    def static_shapes(self) -> dict[int, tuple] | None:
        """Shapes of every operand from the model's dimensions (clnn.passes.shapes), or None
        if some are unknown."""
        return static_shapes(self)

    def plan_ahead(self):
        shapes = self.static_shapes()
        if shapes is None:  # planned at the executions: nothing to build now
            if self.spare_helper is not None:
                self.spare_helper.stop()
                self.spare_helper = None
            return
        # the kernels of the plans are made after their programs are built together
        # (clnn.program_cache.ProgramCache.build_together: one program builds faster than one
        # per kernel): the plans' launches are pending until then; the launches a chain runs
        # are deferred (their kernels made where they run on their own) and the chains built
        # (clnn.execution.PlanRunner.chain_first)
        made = self._plan_static(shapes)
        for p, key in made:  # (renders the chained kernels: Mako, while the compiler warms up)
            if self.runner is not None and p.plans[key] is not None:
                self._defer_chained(p.plans[key])
        self.programs.join_warm()  # (one build at a time: clnn.program_cache.warm_compiler)
        keys = [k for p, key in made if p.plans[key] is not None
                for k in realize_pass.pending_keys(la for la in p.plans[key].launches
                                                   if la.lazy is None)]
        self.kernel_keys = keys
        self.compile_helper = self.programs.build_together(keys, self.spare_helper)
        self.spare_helper = None
        for p, key in made:
            plan = p.plans[key]
            try:
                realize_pass.finish(plan.launches if plan is not None else (), self.programs,
                                    self.device.limits)
                if plan is not None and self.runner is not None:
                    self.runner.build_chains(plan)
            except Exception:  # a kernel that does not build: planned again at the execution
                del p.plans[key]

    def _defer_chained(self, plan) -> None:
        """Defer the launches of ``plan`` that its runner's chains run (made at prepare:
        clnn.execution.PlanRunner.chain_first); the others' kernels are made now."""
        for la in plan.launches:  # (a chain reads the kernel keys and arguments)
            la.defer(self.programs, self.device.limits)
        chained = {id(la) for st in self.runner.chain_first(plan) or ()
                   for la in getattr(st, "launches", ())}  # (a clnn.chain.Chain's)
        for la in plan.launches:
            if id(la) not in chained:
                la.lazy = None

    def _plan_static(self, shapes: dict) -> list:
        """Plan the CL partitions planned from shapes alone (their launches pending); returns
        (partition, plan key) of each plan made."""
        made = []
        for p in self.partitions:
            if p.on_cl and not p.control and not p.host_inputs:
                key = (tuple(shapes.get(i) for i in p.inputs), (), frozenset())
                try:
                    t0 = time.perf_counter()
                    plan = self.plan_partition(p, {i: shapes[i] for i in p.inputs}, {})
                    self.build_seconds += time.perf_counter() - t0
                except TooLarge:  # known now: no execution could run
                    raise
                except Exception:  # planned (and reported) again at the execution
                    continue
                p.plans[key] = plan
                made.append((p, key))
        return made

    def context(self, k: int, shapes: dict, host_values=None) -> OperationContext:
        """Operation k with the constants' values, ``host_values`` (parameters read on the
        host) and the shapes known so far."""
        values = ChainMap(host_values or {}, self.constant_values)
        return operation_context(self.model, self.sg, k, values, shapes,
                                 executor=self.executor)

    def plan_partition(self, part: Partition, in_shapes: dict, host_values: dict,
                       omitted=frozenset()) -> ClPlan | None:
        """The passes (clnn/passes) over a CL partition at concrete input shapes: shapes ->
        fusion -> select -> tune -> memory -> realize; None runs it on the reference. The
        launches are pending (clnn.passes.realize.finish makes their kernels)."""
        shapes = infer_shapes(self, part, in_shapes, host_values, omitted)
        if shapes is None:
            return None
        dwpw = select_pass.DwpwChoices(self.device)
        pooled = select_pass.pooled_residuals(self.device)
        fused = fusion_pass.fuse(self.sg, part, shapes, dwpw, pooled)
        selection = select_pass.select(self, part, shapes, fused, dwpw)
        decided: dict = {}
        tuned = tune_pass.tune(self, part, shapes, fused, selection, decided)
        if tune_pass.dwpw_changed(selection, tuned):  # fused as the tuned choices say
            dwpw = select_pass.DwpwChoices(self.device, decided)
            fused = fusion_pass.fuse(self.sg, part, shapes, dwpw, pooled)
            tuned = tune_pass.tune(self, part, shapes, fused,
                                   select_pass.select(self, part, shapes, fused, dwpw), decided)
        tuned = select_pass.merge_few_rows(self.device, tuned)
        self.fused_into.update(fused.fused_into)
        memory = plan_memory(self.sg, part, shapes.shapes, fused, self.direct_inputs,
                             concat_axes(self.sg, part, shapes.contexts, fused.skipped),
                             self.direct_outputs)
        return realize_pass.realize(self, part, shapes, fused, memory, tuned)
