"""The OpenCL execution plan: partitions, kernels with their arguments, the buffer pool.

A prepared model splits the main subgraph into *partitions*: maximal runs of operations the
OpenCL kernels support, and runs of the others, which the reference executor runs on the host.
A CL partition gets one :class:`ClPlan` per signature of its input shapes: shapes come from the
HAL ``prepare()`` functions, so a plan is made at prepare when the model's shapes allow it, else
at the first execution with those shapes, and kept. A plan holds the kernels with their
arguments set, and one pool buffer where every non-constant tensor of the partition lives at an
offset chosen by liveness (tensors whose lifetimes do not overlap share bytes). Constants of all
partitions are uploaded once, into one constant buffer.

An execution of a CL partition enqueues the copies of its inputs, every kernel and the copies of
the tensors that leave it, then waits once. Only tensors that cross a partition boundary (or are
model inputs / outputs) travel between host and device.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from clnn.buffer import ClBuffer, DeviceTensor, on_host
from clnn.fusion import activation_fusions, add_fusions, pad_fusions
from clnn.kernels.registry import In, Out, Unplannable, kernel_for
from hal.errors import GeneralFailure
from hal.interfaces import ExecutionResult, PreparedModel
from hal.operations.context import OperandInfo, OperationContext
from hal.operations.registry import lookup
from hal.reference.device import (
    begin_execution,
    failed_execution,
    finished_execution,
    read_inputs,
    write_outputs,
)
from hal.reference.executor import Executor, shapes_compatible
from hal.types import NO_TIMING, NUMPY_DTYPE, MeasureTiming, OperandLifeTime, Timing

LT = OperandLifeTime
CONSTANT = (LT.CONSTANT_COPY, LT.CONSTANT_REFERENCE)
#: byte alignment of tensors in the pool and constant buffers (>= every element size)
ALIGN = 128


#: plans kept per partition (one per input-shape / parameter signature), least recently used
#: dropped first
MAX_PLANS = 32
_MISSING = object()


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _nbytes(shape, dtype) -> int:
    n = dtype.itemsize
    for d in shape:
        n *= int(d)
    return n


@dataclass
class Partition:
    on_cl: bool
    ops: list[int]
    #: non-constant operands read by the partition and written before it (or model inputs)
    inputs: list[int] = field(default_factory=list)
    #: operands written by the partition and read after it (or model outputs)
    outputs: list[int] = field(default_factory=list)
    #: inputs whose values the kernels read at planning (parameters that are not constants)
    host_inputs: list[int] = field(default_factory=list)
    #: (input shapes, host input values) -> ClPlan (None: these run on the reference)
    plans: dict = field(default_factory=dict)


@dataclass
class Launch:
    op_index: int
    name: str
    kernel: object
    global_size: tuple
    local_size: tuple | None = None
    #: buffers made by the plan (packed weights, scratch) that only kernel arguments refer to:
    #: pyopencl's set_args keeps no reference, so the launch keeps them alive
    keep: tuple = ()


@dataclass
class ClPlan:
    pool: object
    pool_bytes: int
    intermediate_bytes: int
    uploads: list  # (operand, byte offset)
    downloads: list  # (operand, byte offset, shape, dtype)
    launches: list
    shapes: dict


def plan_offsets(sizes: dict[int, int], live: dict[int, tuple[int, int]]) -> tuple[dict, int]:
    """Offsets for tensors of the given byte sizes live over [first, last] steps: tensors whose
    lifetimes overlap never share bytes. Greedy by size, lowest fitting offset. Returns
    (offsets, pool size)."""
    placed: list[tuple[int, int, int]] = []  # (offset, size, operand)
    offsets = {}
    for opnd in sorted(sizes, key=lambda o: (-sizes[o], o)):
        size = _align(max(sizes[opnd], 1))
        lo, hi = live[opnd]
        busy = sorted((off, sz) for off, sz, other in placed
                      if not (live[other][1] < lo or hi < live[other][0]))
        off = 0
        for b_off, b_size in busy:
            if off + size <= b_off:
                break
            off = max(off, b_off + b_size)
        offsets[opnd] = off
        placed.append((off, size, opnd))
    total = max((off + sz for off, sz, _ in placed), default=0)
    return offsets, total


class ClPreparedModel(PreparedModel):
    def __init__(self, device, model, supported: list[bool]):
        import pyopencl as cl

        self.device = device
        self.model = model
        self.executor = Executor(model)
        self.queue = device.queue
        self.programs = device.programs
        sg = model.main
        self.partitions = self._partition(supported)
        self._lock = threading.RLock()
        #: per execution: model output operand -> the device memory (ClBuffer) it goes to
        self._device_outputs: dict[int, ClBuffer] = {}
        #: per execution: time of the partitions that ran on the host
        self._host_ns = 0
        self.build_seconds = 0.0
        #: operation -> the operation whose kernels do its work (clnn/fusion.py)
        self.fused_into: dict[int, int] = {}
        # constants of CL operations: one buffer, uploaded once
        host_consts = self.executor.constants(None)
        const_ops = sorted({i for p in self.partitions if p.on_cl for k in p.ops
                            for i in sg.operations[k].inputs
                            if sg.operands[i].lifetime in CONSTANT and sg.operands[i].dimensions})
        self.const_offsets: dict[int, int] = {}
        blob = bytearray()
        for i in const_ops:
            arr = np.ascontiguousarray(host_consts[i])
            self.const_offsets[i] = len(blob)
            blob.extend(arr.view(np.uint8).tobytes() if arr.dtype == np.bool_ else arr.tobytes())
            blob.extend(b"\0" * (_align(len(blob)) - len(blob)))
        self.const_bytes = len(blob)
        self.const_buffer = cl.Buffer(device.context, cl.mem_flags.READ_ONLY |
                                      cl.mem_flags.COPY_HOST_PTR, hostbuf=bytes(blob) or b"\0")
        self._plan_ahead()

    # ------------------------------------------------------------------ partitioning
    def _partition(self, supported: list[bool]) -> list[Partition]:
        sg = self.model.main
        parts: list[Partition] = []
        for k, ok in enumerate(supported):
            if parts and parts[-1].on_cl == ok:
                parts[-1].ops.append(k)
            else:
                parts.append(Partition(ok, [k]))
        producer = {}
        for p_index, p in enumerate(parts):
            for k in p.ops:
                for o in sg.operations[k].outputs:
                    producer[o] = p_index
        readers: dict[int, set[int]] = {}
        for p_index, p in enumerate(parts):
            for k in p.ops:
                for i in sg.operations[k].inputs:
                    readers.setdefault(i, set()).add(p_index)
        outs = set(sg.output_indexes)
        for p_index, p in enumerate(parts):
            seen = set()
            for k in p.ops:
                for i in sg.operations[k].inputs:
                    lt = sg.operands[i].lifetime
                    if lt in CONSTANT or lt in (LT.NO_VALUE, LT.SUBGRAPH) or i in seen:
                        continue
                    if producer.get(i, -1) != p_index:
                        seen.add(i)
                        p.inputs.append(i)
            if p.on_cl:
                for k in p.ops:
                    operation = sg.operations[k]
                    host = kernel_for(operation.type).host_input_indexes(len(operation.inputs))
                    p.host_inputs += [operation.inputs[j] for j in sorted(host)
                                      if operation.inputs[j] in p.inputs
                                      and operation.inputs[j] not in p.host_inputs]
            for k in p.ops:
                for o in sg.operations[k].outputs:
                    if o in outs or any(r > p_index for r in readers.get(o, ())):
                        p.outputs.append(o)
        return parts

    # ------------------------------------------------------------------ planning
    def _static_shapes(self) -> dict[int, tuple] | None:
        """Shapes of every operand from the model's dimensions, or None if some are unknown."""
        sg = self.model.main
        shapes = {}
        for i in sg.input_indexes:
            op = sg.operands[i]
            if not op.is_fully_specified():
                return None
            shapes[i] = tuple(op.dimensions)
        for k, operation in enumerate(sg.operations):
            reg = lookup(operation.type)
            if reg.prepare is None:
                return None
            try:
                ctx = self._context(k, shapes)
                out_shapes = reg.prepare(ctx)
            except Exception:
                return None
            for o, s in zip(operation.outputs, out_shapes):
                shapes[o] = tuple(int(d) for d in s)
        return shapes

    def _plan_ahead(self):
        shapes = self._static_shapes()
        if shapes is None:
            return
        for p in self.partitions:
            if p.on_cl:
                if p.host_inputs:
                    continue
                key = (tuple(shapes.get(i) for i in p.inputs), ())
                try:
                    p.plans[key] = self._make_plan(p, {i: shapes[i] for i in p.inputs}, {})
                except Exception:  # planned (and reported) again at the execution
                    pass

    def _context(self, k: int, shapes: dict, host_values=None) -> OperationContext:
        sg = self.model.main
        operation = sg.operations[k]
        consts = self.executor.constants(None)

        host_values = host_values or {}

        def info(i, shape):
            o = sg.operands[i]
            value = consts.get(i) if o.lifetime in CONSTANT else host_values.get(i)
            return OperandInfo(o.type, tuple(shape), o.scale, o.zero_point, o.extra_params,
                               value, o.lifetime, i)

        ins = [info(i, shapes.get(i, sg.operands[i].dimensions)) for i in operation.inputs]
        outs = [info(o, sg.operands[o].dimensions) for o in operation.outputs]
        return OperationContext(operation.type, ins, outs,
                                relaxed=self.model.relax_computation_float32_to_float16,
                                executor=self.executor, op_index=k)

    def _make_plan(self, part: Partition, in_shapes: dict, host_values: dict
                   ) -> ClPlan | None:
        """Plan a CL partition for concrete input shapes; None runs it on the reference."""
        import pyopencl as cl

        sg = self.model.main
        shapes = dict(in_shapes)
        contexts = []
        for k in part.ops:
            operation = sg.operations[k]
            ctx = self._context(k, shapes, host_values)
            try:
                out_shapes = lookup(operation.type).prepare(ctx)
            except LookupError:  # a parameter computed inside the partition
                return None
            except Exception:
                # a prepare() that does not raise LookupError for a parameter computed inside
                # the partition (RANK feeding an axis): the reference runs it with the value
                host = kernel_for(operation.type).host_input_indexes(len(ctx.inputs))
                if any(ctx.inputs[j].value is None and not ctx.inputs[j].omitted
                       for j in host):
                    return None
                raise
            for n, (o, s) in enumerate(zip(operation.outputs, out_shapes)):
                s = tuple(int(d) for d in s)
                if not shapes_compatible(sg.operands[o].dimensions, s):
                    raise GeneralFailure(
                        f"{operation.type.name} (operation {k}): output {n} has shape "
                        f"{list(s)}, incompatible with the declared "
                        f"{list(sg.operands[o].dimensions)}")
                shapes[o] = s
                ctx.outputs[n].shape = s
            contexts.append(ctx)
        # PAD -> convolution pairs: the convolution reads the unpadded tensor (clnn/fusion.py)
        fused = pad_fusions(sg, part.ops, contexts, set(part.outputs))
        # CONV_2D -> ADD pairs: the convolution's epilogue adds the residual (clnn/fusion.py)
        added = add_fusions(sg, part.ops, contexts, set(part.outputs),
                            {f.pad_op for f in fused.values()})
        # convolution [-> ADD] -> RELU* / PRELU: the convolution's epilogue applies it
        acts = activation_fusions(sg, part.ops, contexts, set(part.outputs), added)
        skipped = {f.pad_op for f in fused.values()} | {f.add_op for f in added.values()} | \
            {f.op for f in acts.values()}
        self.fused_into.update({f.pad_op: j for j, f in fused.items()})
        self.fused_into.update({f.add_op: j for j, f in added.items()})
        self.fused_into.update({f.op: j for j, f in acts.items()})
        reads = {j: {f.source} for j, f in fused.items()}
        # liveness over the partition's steps; inputs live from -1, outputs until the end
        last_step = len(part.ops)
        live: dict[int, list[int]] = {i: [-1, -1] for i in part.inputs}
        for step, k in enumerate(part.ops):
            for i in (*sg.operations[k].inputs, *reads.get(k, ())):
                if i in live:
                    live[i][1] = step
            for o in sg.operations[k].outputs:
                live[o] = [step, step]
        for o in part.outputs:
            live[o][1] = last_step
        for f in fused.values():
            del live[f.padded]
        steps = {k: n for n, k in enumerate(part.ops)}
        for j, f in added.items():  # the ADD's output is written by the convolution
            del live[f.conv_out]
            live[f.add_out][0] = steps[j]
        for j, f in acts.items():  # the activation's output is written by the convolution
            del live[f.source]
            live[f.out][0] = steps[j]
        sizes = {o: _nbytes(shapes[o], NUMPY_DTYPE[sg.operands[o].type]) for o in live}
        offsets, pool_bytes = plan_offsets(sizes, {o: tuple(v) for o, v in live.items()})
        pool = cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, max(pool_bytes, 1))
        launches = []
        t0 = time.perf_counter()
        for k, ctx in zip(part.ops, contexts):
            operation = sg.operations[k]
            builder = LaunchBuilder(self, k, ctx, operation, offsets, pool)
            reg = kernel_for(operation.type)
            if any(_nbytes(o.shape, o.dtype) == 0 for o in ctx.outputs) or k in skipped:
                continue  # an empty output (nothing to compute) or a PAD fused into its reader
            if k in fused:
                builder.input_pad = fused[k]
                builder.alias = {fused[k].padded: fused[k].source}
            if k in added:
                builder.residual = added[k]
                builder.alias[added[k].conv_out] = added[k].add_out
            if k in acts:
                builder.activation = acts[k]
                builder.alias[sg.operations[k].outputs[0]] = acts[k].out
            try:
                reg.plan(ctx, builder)
            except Unplannable:
                return None
            launches.extend(builder.launches)
        self.build_seconds += time.perf_counter() - t0
        uploads = [(i, offsets[i]) for i in part.inputs]
        downloads = [(o, offsets[o], shapes[o], NUMPY_DTYPE[sg.operands[o].type])
                     for o in part.outputs]
        inter = sum(_align(max(s, 1)) for s in sizes.values())
        return ClPlan(pool, pool_bytes, inter, uploads, downloads, launches, shapes)

    # ------------------------------------------------------------------ running
    def _run_partition(self, part: Partition, values: dict, omitted: set, events=None):
        sg = self.model.main
        if part.on_cl:
            arrays = [values.get(i) for i in part.inputs]
            if all(a is not None for a in arrays):
                host_values = {i: on_host(values[i]) for i in part.host_inputs}
                key = (tuple(tuple(a.shape) for a in arrays),
                       tuple(host_values[i].tobytes() for i in part.host_inputs))
                plan = part.plans.pop(key, _MISSING)
                if plan is _MISSING:
                    plan = self._make_plan(part, dict(zip(part.inputs, key[0])), host_values)
                    while len(part.plans) >= MAX_PLANS:  # drop the least recently used
                        part.plans.pop(next(iter(part.plans)))
                part.plans[key] = plan  # (re)inserted last: most recently used
                if plan is not None:
                    self._run_plan(plan, values, events)
                    return
        for i in part.inputs:  # the host runs it: device memories are downloaded
            if isinstance(values.get(i), DeviceTensor):
                values[i] = values[i].to_host()
        for k in part.ops:
            self.executor.check_deadline()
            self.executor.run_operation(sg, k, sg.operations[k], values, omitted)

    def _run_plan(self, plan: ClPlan, values: dict, events=None):
        import pyopencl as cl

        q = self.queue
        keep = []
        for i, off in plan.uploads:
            if isinstance(values[i], DeviceTensor):  # a device memory: copied on the device
                t = values[i]
                if t.nbytes:
                    cl.enqueue_copy(q, plan.pool, t.buffer.cl_buffer, dst_offset=off,
                                    byte_count=t.nbytes)
                continue
            arr = np.ascontiguousarray(values[i])
            if arr.nbytes:
                keep.append(arr)
                cl.enqueue_copy(q, plan.pool, arr, dst_offset=off, is_blocking=False)
        for launch in plan.launches:
            ev = cl.enqueue_nd_range_kernel(q, launch.kernel, launch.global_size,
                                            launch.local_size)
            if events is not None:
                events.append((launch, ev))
        results = []
        for o, off, shape, dtype in plan.downloads:
            dst = self._device_outputs.get(o)
            if dst is not None:  # a model output in a device memory: copied on the device
                n = _nbytes(shape, dtype)
                dst.ensure(n)
                if n:
                    cl.enqueue_copy(q, dst.cl_buffer, plan.pool, src_offset=off, byte_count=n)
                results.append((o, DeviceTensor(dst, shape)))
                continue
            arr = np.empty(shape, dtype)
            if arr.nbytes:
                cl.enqueue_copy(q, arr, plan.pool, src_offset=off, is_blocking=False)
            results.append((o, arr))
        q.finish()
        for o, arr in results:
            values[o] = arr

    def run(self, inputs: list, events=None) -> list[np.ndarray]:
        """Run on input arrays (None: omitted); returns the output arrays. Executions of one
        prepared model are serialized: its plans' pools and kernels are shared state."""
        with self._lock:
            return self._run_locked(inputs, events)

    def _run_locked(self, inputs: list, events=None) -> list[np.ndarray]:
        sg = self.model.main
        values = dict(self.executor.constants(None))
        omitted = set()
        for i, arr in zip(sg.input_indexes, inputs):
            if arr is None:
                omitted.add(i)
            values[i] = arr
        for part in self.partitions:
            self.executor.check_deadline()  # MISSED_DEADLINE_TRANSIENT between partitions
            n_events = len(events) if events is not None else 0
            t = time.perf_counter_ns()
            self._run_partition(part, values, omitted, events)
            if events is not None and len(events) == n_events:  # it ran on the host
                self._host_ns += time.perf_counter_ns() - t
        return [values[i] for i in sg.output_indexes]

    def execute_synchronously(self, request, measure=MeasureTiming.NO, deadline=None,
                              loop_timeout_duration=None) -> ExecutionResult:
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
        import pyopencl as cl

        inputs = read_inputs(self.model, request)
        sg = self.model.main
        self._device_outputs = {
            i: request.pools[arg.location.pool_index]
            for arg, i in zip(request.outputs, sg.output_indexes)
            if isinstance(request.pools[arg.location.pool_index], ClBuffer)}
        self.executor.deadline_ns = deadline
        self.executor.loop_timeout_ns = timeout
        self._host_ns = 0
        events = [] if measure == MeasureTiming.YES else None
        queue = self.queue
        if events is not None:
            self.queue = self.device.timing_queue()
        try:
            with np.errstate(all="ignore"):
                outputs = self.run(inputs, events)
            status, shapes = write_outputs(self.model, request, outputs)
            on_device = None
            if events is not None:
                try:
                    kernel_ns = sum(ev.profile.end - ev.profile.start for _, ev in events)
                    on_device = (kernel_ns + self._host_ns) // 1000
                except cl.Error:  # no profiling information: not available
                    on_device = None
        finally:
            self._device_outputs = {}
            self.queue = queue
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
                "constant_bytes": self.const_bytes,
                "launches": sum(len(pl.launches) for pl in plans)}


class LaunchBuilder:
    """What a kernel family's plan() sees: records launches with arguments set."""

    def __init__(self, pm: ClPreparedModel, op_index: int, ctx, operation, offsets, pool):
        self.pm = pm
        self.op_index = op_index
        self.ctx = ctx
        self.operation = operation
        self.offsets = offsets
        self.pool = pool
        self.launches: list[Launch] = []
        #: a PAD fused into this convolution (clnn.fusion.PadFusion), an ADD fused into its
        #: epilogue (clnn.fusion.AddFusion) and operand aliases
        self.input_pad = None
        self.residual = None
        #: an activation operation fused into its epilogue (clnn.fusion.ActivationFusion)
        self.activation = None
        self.alias: dict[int, int] = {}

    def tensor(self, operand: int):
        """(buffer, element offset) of an operand of this plan."""
        operand = self.alias.get(operand, operand)
        o = self.pm.model.main.operands[operand]
        size = NUMPY_DTYPE[o.type].itemsize
        if operand in self.pm.const_offsets:
            return self.pm.const_buffer, np.int32(self.pm.const_offsets[operand] // size)
        if operand in self.offsets:
            return self.pool, np.int32(self.offsets[operand] // size)
        raise GeneralFailure(f"operation {self.op_index}: operand {operand} has no device "
                             "storage")

    def buffer(self, array: np.ndarray):
        """A small read-only device buffer (index tables...) owned by the plan: pass it as a
        kernel argument."""
        import pyopencl as cl

        arr = np.ascontiguousarray(array)
        buf = cl.Buffer(self.pm.device.context, cl.mem_flags.READ_ONLY |
                        cl.mem_flags.COPY_HOST_PTR, hostbuf=arr if arr.nbytes else b"\0")
        return buf

    def launch(self, family: str, name: str, params: dict, global_size, args,
               local_size=None):
        import pyopencl as cl

        gs = tuple(int(g) for g in global_size)
        if any(g == 0 for g in gs):
            return
        prg = self.pm.programs.program(family, name, params)
        kernel = cl.Kernel(prg, name)
        flat = []
        for a in args:
            if isinstance(a, In):
                flat.extend(self.tensor(self.operation.inputs[a.index]))
            elif isinstance(a, Out):
                flat.extend(self.tensor(self.operation.outputs[a.index]))
            else:
                flat.append(a)
        kernel.set_args(*flat)
        keep = tuple(a for a in flat if isinstance(a, cl.MemoryObjectHolder))
        self.launches.append(Launch(self.op_index, f"{family}.{name}", kernel, gs,
                                    tuple(local_size) if local_size else None, keep))
