"""The OpenCL execution plan of a prepared model: partitions, fusions, the buffer pool.

A prepared model splits the main subgraph into *partitions*: maximal runs of operations the
OpenCL kernels support, and runs of the others, which the reference executor runs on the host
(the fallback). A CL partition gets one :class:`ClPlan` per signature of its input shapes:
shapes come from the HAL ``prepare()`` functions, so a plan is made at prepare when the model's
shapes allow it, else at the first execution with those shapes, and kept (least recently used
dropped first, :data:`MAX_PLANS` per partition). A plan holds the kernels with their arguments
set (clnn/launch.py), and one pool buffer where every non-constant tensor of the partition lives
at an offset chosen by liveness (tensors whose lifetimes do not overlap share bytes). Constants
of all partitions are uploaded once, into one constant buffer.
"""

from __future__ import annotations

import time
from collections import ChainMap
from dataclasses import dataclass, field

import numpy as np

from clnn.fusion import find_fusions
from clnn.kernels import kernel_for
from clnn.kernels.registry import Unplannable
from clnn.launch import LaunchBuilder, nbytes
from clnn.memory import on_host
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
    limit = int(device.cl_device.max_mem_alloc_size)
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
    #: non-constant operands read by the partition and written before it (or model inputs)
    inputs: list[int] = field(default_factory=list)
    #: operands written by the partition and read after it (or model outputs)
    outputs: list[int] = field(default_factory=list)
    #: inputs whose values the kernels read at planning (parameters that are not constants)
    host_inputs: list[int] = field(default_factory=list)
    #: (input shapes, host input values) -> ClPlan (None: these run on the reference)
    plans: dict = field(default_factory=dict)


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



def partition(model, supported: list[bool]) -> list[Partition]:
    """Maximal runs of supported / unsupported operations, with the operands that cross them."""
    sg = model.main
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


class Planner:
    """Plans of one prepared model: the constant buffer, shape inference over the model, the
    plans of each CL partition, and which operations were fused into which."""

    def __init__(self, device, model, partitions: list[Partition]):
        import pyopencl as cl

        self.device = device
        self.model = model
        self.programs = device.programs
        self.partitions = partitions
        self.executor = Executor(model)
        self.build_seconds = 0.0
        #: during plan_ahead's first pass: the kernel keys the plans launch (none are built)
        self.collecting: list | None = None
        #: operation -> the operation whose kernels do its work (clnn/fusion.py)
        self.fused_into: dict[int, int] = {}
        sg = model.main
        # constants of CL operations: one buffer, uploaded once
        host_consts = self.executor.constants(None)
        #: the constants' values (not the subgraph references the executor also keeps)
        self.constant_values = {i: v for i, v in host_consts.items()
                                if sg.operands[i].lifetime in CONSTANT}
        const_ops = sorted({i for p in partitions if p.on_cl for k in p.ops
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
        if any(a is None for a in arrays):
            return None
        host_values = {i: on_host(values[i]) for i in part.host_inputs}
        key = (tuple(tuple(a.shape) for a in arrays),
               tuple(host_values[i].tobytes() for i in part.host_inputs))
        plan = part.plans.pop(key, _MISSING)
        if plan is _MISSING:
            plan = self.make_plan(part, dict(zip(part.inputs, key[0])), host_values)
            while len(part.plans) >= MAX_PLANS:  # drop the least recently used
                part.plans.pop(next(iter(part.plans)))
        part.plans[key] = plan  # (re)inserted last: most recently used
        return plan

    def static_shapes(self) -> dict[int, tuple] | None:
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
        if shapes is None:
            return
        # a first pass only lists the kernels the plans launch, so that they are built together
        # (clnn.program_cache.ProgramCache.build_together: one program builds faster than one
        # per kernel); the plans are made (again) below
        self.collecting = []
        try:
            for p in self.partitions:
                if p.on_cl and not p.host_inputs:
                    try:
                        self.make_plan(p, {i: shapes[i] for i in p.inputs}, {})
                    except Exception:  # planned (and reported) again below
                        pass
            keys = self.collecting
        finally:
            self.collecting = None
        self.programs.build_together(keys)
        for p in self.partitions:
            if p.on_cl:
                if p.host_inputs:
                    continue
                key = (tuple(shapes.get(i) for i in p.inputs), ())
                try:
                    p.plans[key] = self.make_plan(p, {i: shapes[i] for i in p.inputs}, {})
                except TooLarge:  # known now: no execution could run
                    raise
                except Exception:  # planned (and reported) again at the execution
                    pass

    def context(self, k: int, shapes: dict, host_values=None) -> OperationContext:
        """Operation k with the constants' values, ``host_values`` (parameters read on the
        host) and the shapes known so far."""
        values = ChainMap(host_values or {}, self.constant_values)
        return operation_context(self.model, self.model.main, k, values, shapes,
                                 executor=self.executor)

    def make_plan(self, part: Partition, in_shapes: dict, host_values: dict
                   ) -> ClPlan | None:
        """Plan a CL partition for concrete input shapes; None runs it on the reference."""
        import pyopencl as cl

        sg = self.model.main
        shapes = dict(in_shapes)
        contexts = []
        for k in part.ops:
            operation = sg.operations[k]
            ctx = self.context(k, shapes, host_values)
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
            if out_shapes is None:  # shapes that only the values tell: run on the reference
                return None
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
        # PAD -> convolution (the convolution reads the unpadded tensor), CONV_2D -> ADD (its
        # epilogue adds the residual), convolution [-> ADD] / ADD ... -> activation (the
        # epilogue applies it): clnn/fusion.py
        fusions = find_fusions(sg, part.ops, contexts, set(part.outputs))
        fused, added, acts = fusions.pads, fusions.adds, fusions.activations
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
        sizes = {o: nbytes(shapes[o], NUMPY_DTYPE[sg.operands[o].type]) for o in live}
        for o in sorted(sizes, key=lambda o: -sizes[o])[:1]:
            check_fits(self.device, f"operand {o} ({NUMPY_DTYPE[sg.operands[o].type]} "
                       f"{list(shapes[o])})", sizes[o])
        offsets, pool_bytes = plan_offsets(sizes, {o: tuple(v) for o, v in live.items()})
        check_fits(self.device, f"the pool of the OpenCL partition of operations "
                   f"{part.ops[0]}..{part.ops[-1]}", pool_bytes, pool_bytes + self.const_bytes)
        pool = cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, max(pool_bytes, 1))
        launches = []
        t0 = time.perf_counter()
        for k, ctx in zip(part.ops, contexts):
            operation = sg.operations[k]
            builder = LaunchBuilder(self, k, ctx, operation, offsets, pool)
            reg = kernel_for(operation.type)
            if any(nbytes(o.shape, o.dtype) == 0 for o in ctx.outputs) or k in skipped:
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
        written: dict[int, list] = {}
        for o, (first, _) in live.items():  # a tensor is written at the first step it lives
            if first >= 0:
                written.setdefault(part.ops[first], []).append(
                    (o, offsets[o], shapes[o], NUMPY_DTYPE[sg.operands[o].type]))
        return ClPlan(pool, pool_bytes, inter, uploads, downloads, launches, shapes, written)
