"""The OpenCL execution plan of a prepared model: partitions, fusions, the buffer pool.

A prepared model splits the main subgraph into *partitions*: maximal runs of operations the
OpenCL kernels support, and runs of the others, which the reference executor runs on the host
(the fallback). A CL partition gets one :class:`ClPlan` per signature of its input shapes:
shapes come from the HAL ``prepare()`` functions, so a plan is made at prepare when the model's
shapes allow it, else at the first execution with those shapes, and kept (least recently used
dropped first, :data:`MAX_PLANS` per partition). A plan holds the kernels with their arguments
set (clnn/launch.py), and one pool buffer where every non-constant tensor of the partition lives
at an offset chosen by liveness (tensors whose lifetimes do not overlap share bytes); RESHAPE,
SQUEEZE, EXPAND_DIMS and identity CASTs of a pool tensor are views (their output is the input's
bytes, no launch, the input's lifetime extended over the view's: clnn/fusion.py find_views).
Constants of all partitions are uploaded once, into one constant buffer. A supported IF / WHILE
is a partition of its own (clnn/control_flow.py plans its subgraphs with Planners of their own).
"""

from __future__ import annotations

import time
from collections import ChainMap
from dataclasses import dataclass, field

import numpy as np

from clnn.fusion import find_fusions, find_views
from clnn.kernels import _dwpw_variants, kernel_for
from clnn.kernels.registry import Unplannable
from clnn.launch import DirectInput, LaunchBuilder, direct_inputs_on, nbytes
from clnn.memory import on_host
from clnn.options import options_of
from hal.errors import GeneralFailure
from hal.operations import lookup
from hal.operations.context import OperationContext, operation_context, shapes_compatible
from hal.reference.executor import Executor  # the fallback: operations without a kernel
from hal.types import NUMPY_DTYPE, OperandLifeTime

LT = OperandLifeTime
CONSTANT = (LT.CONSTANT_COPY, LT.CONSTANT_REFERENCE)
#: byte alignment of tensors in the pool and constant buffers (>= every element size)
ALIGN = 128


#: plans kept per partition (one per input-shape / parameter signature), least recently used
#: dropped first
MAX_PLANS = 32
_MISSING = object()


class TooLarge(GeneralFailure):
    """A tensor or buffer larger than the OpenCL device can allocate (reported at prepare when
    the shapes are known there, else at the execution)."""


def check_fits(device, what: str, nbytes: int, total: int | None = None):
    """GENERAL_FAILURE naming ``what`` when ``nbytes`` exceed the device's largest buffer
    (CL_DEVICE_MAX_MEM_ALLOC_SIZE), or ``total`` its global memory: asked before the
    allocation, whose own error (INVALID_BUFFER_SIZE) names nothing."""
    limit = device.limits.max_mem_alloc_size
    if nbytes > limit:
        raise TooLarge(f"{what} needs {nbytes} bytes, more than the largest buffer "
                       f"{device.name} can allocate ({limit} bytes)")
    memory = int(device.cl_device.global_mem_size)
    if total is not None and total > memory:
        raise TooLarge(f"{what} needs {nbytes} bytes, which with the model's other buffers "
                       f"({total} bytes) exceeds the global memory of {device.name} "
                       f"({memory} bytes)")


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class Partition:
    on_cl: bool
    ops: list[int]
    #: an IF or WHILE operation alone: its subgraphs run as OpenCL partitions of their own
    #: (clnn/control_flow.py); only its condition is read back
    control: bool = False
    #: non-constant operands read by the partition and written before it (or model inputs)
    inputs: list[int] = field(default_factory=list)
    #: operands written by the partition and read after it (or model outputs)
    outputs: list[int] = field(default_factory=list)
    #: inputs whose values the kernels read at planning (parameters that are not constants)
    host_inputs: list[int] = field(default_factory=list)
    #: (input shapes, host input values) -> ClPlan (None: these run on the reference)
    plans: dict = field(default_factory=dict)
    #: outputs that a later OpenCL partition reads: left in device memory (PoolTensor), never
    #: downloaded unless the host reads them too
    resident: set = field(default_factory=set)


@dataclass
class ClPlan:
    pool: object
    pool_bytes: int
    intermediate_bytes: int
    uploads: list  # (operand, byte offset)
    downloads: list  # (operand, byte offset, shape, dtype)
    launches: list
    shapes: dict
    #: operation -> the tensors its kernels write to the pool (operand, byte offset, shape,
    #: dtype); a fused operation's output is written by the kernels of the one it is fused into.
    #: Read only by runs that keep every intermediate (ClPreparedModel.run_keeping_all)
    written: dict = field(default_factory=dict)
    #: words the kernels write for the host (clnn.launch.Readback): status flags, the counts
    #: of data-dependent output shapes
    readbacks: list = field(default_factory=list)
    #: view operand -> the operand whose pool bytes it is (RESHAPE and the like: no launch)
    views: dict = field(default_factory=dict)
    #: inputs the kernels read from a buffer of their own, not from the pool
    #: (clnn.launch.DirectInput: on a CPU the request's memory itself)
    direct: dict = field(default_factory=dict)
    #: the launches as run, runs of them in clnn.chain.Chains (None: one by one)
    chained: list | None = None
    #: executions that ran it (clnn.prepared_model.ClPreparedModel: chains from the
    #: chain.CHAIN_AFTER-th on)
    runs: int = 0
    #: the launches with runs of them as clnn.chain.Chains, once asked for (not built yet
    #: while a Job compiles them)
    chain_steps: list | None = None
    chain_tried: bool = False
    #: the chains being made ready (clnn.chain.Job), None once ready or without chains
    chain_job: object = None


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



CONTROL_FLOW = ("IF", "WHILE")


def partition(model, supported: list[bool], sg=None, outputs_resident: bool = False
              ) -> list[Partition]:
    """Maximal runs of supported / unsupported operations of subgraph ``sg`` (None: main), with
    the operands that cross them; a supported IF / WHILE is a partition of its own.
    ``outputs_resident``: the subgraph's outputs stay in device memory (a referenced subgraph,
    whose outputs go to the operation that ran it)."""
    sg = model.main if sg is None else sg
    parts: list[Partition] = []

    def data_dependent(k: int) -> bool:  # output shapes known only after its kernels ran
        reg = kernel_for(sg.operations[k].type)
        return reg is not None and reg.max_shapes is not None

    for k, ok in enumerate(supported):
        # an operation with data-dependent output shapes ends its CL partition: the next one
        # is planned with the shapes read back (Planner.make_plan cannot plan its readers);
        # a supported IF / WHILE is a partition of its own
        control = ok and sg.operations[k].type.name in CONTROL_FLOW
        if (parts and parts[-1].on_cl == ok and not control and not parts[-1].control
                and not (ok and data_dependent(parts[-1].ops[-1]))):
            parts[-1].ops.append(k)
        else:
            parts.append(Partition(ok, [k], control))
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
        if p.on_cl and not p.control:
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
                if p.on_cl and (any(r > p_index and parts[r].on_cl for r in readers.get(o, ()))
                                or (outputs_resident and o in outs)):
                    p.resident.add(o)
    return parts


class Planner:
    """Plans of one prepared model: the constant buffer, shape inference over the model, the
    plans of each CL partition, and which operations were fused into which."""

    def __init__(self, device, model, partitions: list[Partition], index: int | None = None,
                 executor: Executor | None = None):
        import pyopencl as cl

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
        #: during plan_ahead's first pass: the kernel keys the plans launch (none are built)
        self.collecting: list | None = None
        #: operation -> the operation whose kernels do its work (clnn/fusion.py)
        self.fused_into: dict[int, int] = {}
        #: partition inputs get buffers of their own (clnn.launch.DirectInput): on a CPU device
        #: sharing the host's memory, where an execution binds the request's memory itself
        cl_device = getattr(device, "cl_device", None)
        self.direct_inputs = cl_device is not None and direct_inputs_on(
            cl_device, options_of(device))
        # constants of CL operations: one buffer, uploaded once
        host_consts = self.executor.constants(index)
        #: the constants' values (not the subgraph references the executor also keeps)
        self.constant_values = {i: v for i, v in host_consts.items()
                                if sg.operands[i].lifetime in CONSTANT}
        const_ops = sorted({i for p in partitions if p.on_cl and not p.control for k in p.ops
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
        check_fits(device, "the constant tensors of the OpenCL operations together",
                   self.const_bytes)
        self.const_buffer = cl.Buffer(device.context, cl.mem_flags.READ_ONLY |
                                      cl.mem_flags.COPY_HOST_PTR, hostbuf=bytes(blob) or b"\0")

    def plan_for(self, part: Partition, values: dict):
        """The plan of a CL partition for the input values of an execution (made and kept on
        first use); None: the partition runs on the reference device."""
        arrays = [values.get(i) for i in part.inputs]
        # an omitted model input (None): planned as a NO_VALUE operand of shape (0,) when every
        # operation reading it takes omitted inputs (KernelRegistration.omitted_inputs)
        omitted = frozenset(i for i, a in zip(part.inputs, arrays) if a is None)
        if omitted and not self._takes_omitted(part, omitted):
            return None
        host_values = {i: on_host(values[i]) for i in part.host_inputs}
        key = (tuple((0,) if a is None else tuple(a.shape) for a in arrays),
               tuple(host_values[i].tobytes() for i in part.host_inputs), omitted)
        plan = part.plans.pop(key, _MISSING)
        if plan is _MISSING:
            plan = self.make_plan(part, dict(zip(part.inputs, key[0])), host_values, omitted)
            while len(part.plans) >= MAX_PLANS:  # drop the least recently used
                part.plans.pop(next(iter(part.plans)))
        part.plans[key] = plan  # (re)inserted last: most recently used
        return plan

    def _takes_omitted(self, part: Partition, omitted) -> bool:
        sg = self.sg
        return all(getattr(kernel_for(sg.operations[k].type), "omitted_inputs", False)
                   for k in part.ops if omitted.intersection(sg.operations[k].inputs))

    def static_shapes(self) -> dict[int, tuple] | None:
        """Shapes of every operand from the model's dimensions, or None if some are unknown."""
        sg = self.sg
        shapes = {}
        for i in sg.input_indexes:
            op = sg.operands[i]
            if not op.is_fully_specified():
                return None
            shapes[i] = tuple(op.dimensions)
        for k, operation in enumerate(sg.operations):
            reg = lookup(operation.type)
            if operation.type.name in CONTROL_FLOW:  # no prepare(): the declared shapes,
                outs = [sg.operands[o] for o in operation.outputs]  # checked against the
                if not all(o.is_fully_specified() for o in outs):  # subgraphs' outputs
                    return None
                shapes.update((o, tuple(d.dimensions)) for o, d in zip(operation.outputs, outs))
                continue
            if reg.prepare is None:
                return None
            try:
                ctx = self.context(k, shapes)
                out_shapes = reg.prepare(ctx)
            except Exception:
                return None
            if out_shapes is None:  # a parameter the execution gives (a model input)
                return None
            for o, s in zip(operation.outputs, out_shapes):
                shapes[o] = tuple(int(d) for d in s)
        return shapes

    def plan_ahead(self):
        shapes = self.static_shapes()
        if shapes is None:  # planned at the executions: nothing to build now
            if self.spare_helper is not None:
                self.spare_helper.stop()
                self.spare_helper = None
            return
        # the kernels of the plans are made after their programs are built together
        # (clnn.program_cache.ProgramCache.build_together: one program builds faster than one
        # per kernel): the launches are planned pending, then finished
        made = []
        self.collecting = []
        try:
            for p in self.partitions:
                if p.on_cl and not p.control and not p.host_inputs:
                    key = (tuple(shapes.get(i) for i in p.inputs), (), frozenset())
                    try:
                        p.plans[key] = self.make_plan(p, {i: shapes[i] for i in p.inputs}, {})
                        made.append((p, key))
                    except TooLarge:  # known now: no execution could run
                        raise
                    except Exception:  # planned (and reported) again at the execution
                        pass
            keys = self.collecting
        finally:
            self.collecting = None
        self.compile_helper = self.programs.build_together(keys, self.spare_helper)
        self.spare_helper = None
        for p, key in made:
            plan = p.plans[key]
            try:
                for launch in plan.launches if plan is not None else ():
                    launch.finish(self.programs, self.device.limits)
            except Exception:  # a kernel that does not build: planned again at the execution
                del p.plans[key]

    def context(self, k: int, shapes: dict, host_values=None) -> OperationContext:
        """Operation k with the constants' values, ``host_values`` (parameters read on the
        host) and the shapes known so far."""
        values = ChainMap(host_values or {}, self.constant_values)
        return operation_context(self.model, self.sg, k, values, shapes,
                                 executor=self.executor)

    def make_plan(self, part: Partition, in_shapes: dict, host_values: dict,
                  omitted=frozenset()) -> ClPlan | None:
        """Plan a CL partition for concrete input shapes; None runs it on the reference."""
        import pyopencl as cl

        sg = self.sg
        shapes = dict(in_shapes)
        contexts = []
        dynamic: set[int] = set()  # outputs whose shapes the kernels tell (max_shapes)
        for k in part.ops:
            if any(i in dynamic for i in sg.operations[k].inputs):
                return None  # shapes known only after a run: the reference runs it
            operation = sg.operations[k]
            ctx = self.context(k, shapes, host_values)
            max_shapes = kernel_for(operation.type).max_shapes
            if max_shapes is not None:  # data-dependent output shapes: planned at their largest
                dynamic.update(operation.outputs)
            for info in ctx.inputs:  # model inputs the request omits (plan_for)
                if info.index in omitted:
                    info.lifetime = LT.NO_VALUE
            try:
                out_shapes = (max_shapes or lookup(operation.type).prepare)(ctx)
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
            if out_shapes is None:  # shapes that only the values tell: run on the reference
                return None
            for n, (o, s) in enumerate(zip(operation.outputs, out_shapes)):
                s = tuple(int(d) for d in s)
                if max_shapes is None and not shapes_compatible(sg.operands[o].dimensions, s):
                    raise GeneralFailure(
                        f"{operation.type.name} (operation {k}): output {n} has shape "
                        f"{list(s)}, incompatible with the declared "
                        f"{list(sg.operands[o].dimensions)}")
                shapes[o] = s
                ctx.outputs[n].shape = s
            contexts.append(ctx)
        # PAD -> convolution (the convolution reads the unpadded tensor), CONV_2D -> ADD (its
        # epilogue adds the residual), convolution [-> ADD] / ADD ... -> activation (the
        # epilogue applies it): clnn/fusion.py
        fusions = find_fusions(sg, part.ops, contexts, set(part.outputs),
                               dwpw_choose=lambda op, sig: _dwpw_variants.choose(self, op, sig))
        fused, added, acts = fusions.pads, fusions.adds, fusions.activations
        dws = fusions.depthwise
        skipped = {f.pad_op for f in fused.values()} | {f.add_op for f in added.values()} | \
            {f.op for f in acts.values()} | \
            {f.pad_op for f in added.values() if f.pad_op is not None} | \
            {f.dw_op for f in dws.values()}
        self.fused_into.update({f.pad_op: j for j, f in fused.items()})
        self.fused_into.update({f.add_op: j for j, f in added.items()})
        self.fused_into.update({f.pad_op: j for j, f in added.items() if f.pad_op is not None})
        self.fused_into.update({f.op: j for j, f in acts.items()})
        self.fused_into.update({f.dw_op: j for j, f in dws.items()})
        self.fused_into.update({f.pad.pad_op: j for j, f in dws.items() if f.pad is not None})
        reads = {j: {f.source} for j, f in fused.items()}
        for j, f in dws.items():  # the convolution reads the depthwise convolution's input
            reads.setdefault(j, set()).add(f.source)
        for j, f in added.items():  # a channel PAD's input is read by the convolution
            if f.pad_op is not None:
                reads.setdefault(j, set()).add(f.other)
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
        for f in fused.values():  # a PAD fused into several readers appears once per reader
            live.pop(f.padded, None)
        steps = {k: n for n, k in enumerate(part.ops)}
        for j, f in added.items():  # the ADD's output is written by the convolution
            del live[f.conv_out]
            live[f.add_out][0] = steps[j]
            if f.pad_op is not None:  # nor does a channel PAD fused in have bytes
                live.pop(sg.operations[f.pad_op].outputs[0], None)
        for j, f in acts.items():  # the activation's output is written by the convolution
            del live[f.source]
            live[f.out][0] = steps[j]
        for f in dws.values():  # nor does a depthwise output fused away have bytes
            live.pop(f.dw_out, None)
        views = find_views(sg, part.ops, skipped, live)
        for out, src in views.items():  # the source's bytes live as long as its views
            live[src] = [min(live[src][0], live[out][0]), max(live[src][1], live[out][1])]
            del live[out]
        # inputs read by kernels only (no view of their bytes): a buffer of their own, which an
        # execution points at the request's memory (the device shares the host's)
        direct = {}
        for i in part.inputs:
            dtype = NUMPY_DTYPE[sg.operands[i].type]
            size = nbytes(shapes[i], dtype)
            if self.direct_inputs and i in live and i not in views.values() and size > 0:
                check_fits(self.device, f"operand {i} ({dtype} {list(shapes[i])})", size)
                direct[i] = DirectInput(self.device.context, i, size)
                del live[i]
        sizes = {o: nbytes(shapes[o], NUMPY_DTYPE[sg.operands[o].type]) for o in live}
        for o in sorted(sizes, key=lambda o: -sizes[o])[:1]:
            check_fits(self.device, f"operand {o} ({NUMPY_DTYPE[sg.operands[o].type]} "
                       f"{list(shapes[o])})", sizes[o])
        offsets, pool_bytes = plan_offsets(sizes, {o: tuple(v) for o, v in live.items()})
        offsets.update({out: offsets[src] for out, src in views.items()})
        check_fits(self.device, f"the pool of the OpenCL partition of operations "
                   f"{part.ops[0]}..{part.ops[-1]}", pool_bytes, pool_bytes + self.const_bytes)
        pool = cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, max(pool_bytes, 1))
        launches, readbacks = [], []
        t0 = time.perf_counter()
        for k, ctx in zip(part.ops, contexts):
            operation = sg.operations[k]
            builder = LaunchBuilder(self, k, ctx, operation, offsets, pool, direct)
            reg = kernel_for(operation.type)
            # nothing to compute (every output empty; an operation with some outputs empty
            # still writes the others: a sequence of no steps returns its input states), a PAD
            # fused into its reader, or a view of its input's bytes
            if all(nbytes(o.shape, o.dtype) == 0 for o in ctx.outputs) or k in skipped \
                    or operation.outputs[0] in views:
                continue
            if k in fused:
                builder.input_pad = fused[k]
                builder.alias = {fused[k].padded: fused[k].source}
            if k in added:
                builder.residual = added[k]
                builder.alias[added[k].conv_out] = added[k].add_out
            if k in acts:
                builder.activation = acts[k]
                builder.alias[sg.operations[k].outputs[0]] = acts[k].out
            if k in dws:
                builder.depthwise = dws[k]
            try:
                reg.plan(ctx, builder)
            except Unplannable:
                return None
            launches.extend(builder.launches)
            readbacks.extend(builder.readbacks)
        self.build_seconds += time.perf_counter() - t0
        uploads = [(i, offsets[i]) for i in part.inputs if i not in direct]
        downloads = [(o, offsets[o], shapes[o], NUMPY_DTYPE[sg.operands[o].type])
                     for o in part.outputs]
        inter = sum(_align(max(s, 1)) for s in sizes.values())
        written: dict[int, list] = {}
        for o, (first, _) in live.items():  # a tensor is written at the first step it lives
            if first >= 0:
                written.setdefault(part.ops[first], []).append(
                    (o, offsets[o], shapes[o], NUMPY_DTYPE[sg.operands[o].type]))
        # a view has no launch: it is read after the launches of the last operation before it
        # that has some (-1: before every launch), when its bytes already hold its value
        launched, last = {launch.op_index for launch in launches}, -1
        for k in part.ops:
            out = sg.operations[k].outputs[0]
            if out in views:
                written.setdefault(last, []).append((out, offsets[out], shapes[out],
                                                     NUMPY_DTYPE[sg.operands[out].type]))
            last = k if k in launched else last
        return ClPlan(pool, pool_bytes, inter, uploads, downloads, launches, shapes, written,
                      readbacks=readbacks, views=views, direct=direct)
