"""The referenced subgraphs of IF / WHILE on the OpenCL device: their runs (partitions, plans,
pools), planned at prepare as far as their shapes are known, and run in an execution with
their outputs handed on as copies, regions of their pools or as they are."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from clnn.control_flow.scalars import ScalarOp, host_scalar_ops
from clnn.memory import PoolTensor, on_host
from clnn.plan import CONTROL_FLOW, Partition, Planner, partition
from hal.errors import GeneralFailure
from hal.types import OperandLifeTime

if TYPE_CHECKING:
    from clnn.control_flow.host_loops import Replay

#: the SUBGRAPH inputs of each control-flow operation
SUBGRAPH_INPUTS = {"IF": (1, 2), "WHILE": (0, 1)}
#: the runs of a small WHILE body (pools of its own each: a loop that runs ahead of its
#: conditions enqueues up to RUNS - 1 iterations ahead), and the pool bytes of a small one
RUNS, RUN_AHEAD_BYTES = 3, 4 << 20


def referenced(model, sg, operation) -> list[int]:
    """Indexes of the subgraphs a control-flow operation of ``sg`` runs."""
    found = []
    for j in SUBGRAPH_INPUTS[operation.type.name]:
        opnd = sg.operands[operation.inputs[j]]
        if opnd.lifetime != OperandLifeTime.SUBGRAPH:
            raise GeneralFailure(f"{operation.type.name}: input {j} is not a subgraph")
        found.append(int(opnd.location.offset))
    return found


def support_reason(device, model, sg, operation, seen=(), memo=None) -> str | None:
    """None when every operation of the subgraphs that ``operation`` (an IF / WHILE of ``sg``)
    runs has OpenCL kernels (recursively), else why not: the first one that does not. Each
    subgraph is judged once (``memo``): an IF whose branches are one subgraph, nested a
    hundred deep, would otherwise be judged 2^100 times."""
    memo = {} if memo is None else memo
    for index in dict.fromkeys(referenced(model, sg, operation)):
        if index in seen:  # validation rejects cycles; never recurse forever on one
            return f"subgraph {index} references itself"
        if index not in memo:
            memo[index] = _subgraph_reason(device, model, index, (*seen, index), memo)
        if memo[index] is not None:
            return memo[index]
    return None


def _subgraph_reason(device, model, index: int, seen, memo) -> str | None:
    sub = model.referenced[index]
    for k, op in enumerate(sub.operations):
        if op.type.name in CONTROL_FLOW:
            reason = support_reason(device, model, sub, op, seen, memo)
        else:
            reason = device.unsupported_reason_in(model, sub, k, op)
        if reason is not None:
            return f"{op.type.name} (operation {k} of subgraph {index}): {reason}"
    return None


@dataclass
class SubgraphRun:
    """The partitions and plans of one referenced subgraph (``copy`` 1: a WHILE body's second
    run, with pools of its own: the two take turns, run._run_while)."""

    index: int
    partitions: list[Partition]
    planner: Planner
    copy: int = 0
    #: (pool, byte offset, bytes) -> that region of the pool as an OpenCL sub-buffer (an
    #: output handed on as a buffer of its own, :func:`_region`), made once
    regions: dict = field(default_factory=dict)
    #: the byte alignment a sub-buffer's origin needs (CL_DEVICE_MEM_BASE_ADDR_ALIGN)
    align: int = 1
    #: operation -> its clnn.host_scalars.ScalarOp (those the host runs)
    scalars: dict = field(default_factory=dict)
    #: (partition, whether the host's scalar operations run it) in order, and the
    #: subgraph's input operands: what every run reads (:meth:`steps`), found once
    _steps: list | None = None
    _given: frozenset = frozenset()
    #: the positions of the subgraph's inputs that an OpenCL partition (or an IF / WHILE)
    #: reads (:meth:`device_reads`)
    _device_reads: frozenset | None = None
    #: the subgraph's constants (clnn.execution.Execution.executor's, found at the first run)
    constants: dict | None = None
    #: what the device partitions of a host-driven loop's body did in its last run that may
    #: be enqueued again as it was (host_loops.Replay), or None
    replay: Replay | None = None

    def fresh_values(self, execution) -> dict:
        """A new dict of the subgraph's constants, the values a run starts from (the
        executor's constants, found at the first run and kept: a loop runs the subgraph
        often)."""
        if self.constants is None:
            self.constants = execution.executor.constants(self.index)
        return dict(self.constants)

    def steps(self) -> list:
        """(partition, whether it is a partition of scalar operations run on the host), in
        order (found at the first run)."""
        if self._steps is None:
            self._given = frozenset(self.planner.sg.input_indexes)
            self._steps = [(part, scalar_part(self, part)) for part in self.partitions]
        return self._steps

    def device_reads(self) -> frozenset:
        """The positions of the subgraph's inputs read by an OpenCL partition of it (or by an
        IF / WHILE in it), found once."""
        if self._device_reads is None:
            reads = {i for p in self.partitions if p.on_cl or p.control for i in p.inputs}
            self._device_reads = frozenset(
                j for j, i in enumerate(self.planner.sg.input_indexes) if i in reads)
        return self._device_reads

    @property
    def given(self) -> frozenset:
        """The subgraph's input operands."""
        self.steps()
        return self._given


def subgraph_run(pm, index: int, copy: int = 0) -> SubgraphRun:
    """The partitions and planner of referenced subgraph ``index`` of the prepared model ``pm``
    (made on first use, then kept; ``copy`` 1: a WHILE body's second run)."""
    key = index if not copy else (index, copy)
    run = pm.subgraph_runs.get(key)
    if run is None:
        model, device = pm.model, pm.device
        sub = model.referenced[index]
        on_host = host_scalar_ops(sub) if device.options.host_scalars else set()
        supported = [k not in on_host and
                     (support_reason(device, model, sub, op) if op.type.name in CONTROL_FLOW
                      else device.unsupported_reason_in(model, sub, k, op)) is None
                     for k, op in enumerate(sub.operations)]
        parts = partition(model, supported, sub, outputs_resident=True)
        first = pm.subgraph_runs.get(index) if copy else None  # (its constants shared)
        planner = Planner(device, model, parts, index, executor=pm.executor,
                          constants_of=first.planner if first is not None else None)
        planner.plan_ahead()
        align = max(int(device.cl_device.mem_base_addr_align) // 8, 1)
        scalars = {k: ScalarOp(model, sub, k, pm.executor) for k in on_host}
        run = pm.subgraph_runs[key] = SubgraphRun(index, parts, planner, copy, align=align,
                                                  scalars=scalars)
    return run


def _runs_of(model, sg, operation) -> list[tuple[int, int]]:
    """(subgraph, copy) of the runs a control-flow operation makes: a WHILE's body has two."""
    found = [(index, 0) for index in referenced(model, sg, operation)]
    if operation.type.name == "WHILE":
        found.append((found[1][0], 1))
    return found


def plan_ahead(pm, sg, partitions):
    """Plan at prepare the subgraphs that the control-flow partitions of ``sg`` run (and theirs,
    recursively), as far as their shapes are known there: their kernels are then built at
    prepare, and saved by the compilation cache with the main subgraph's."""
    for part in partitions:
        if part.control:
            operation = sg.operations[part.ops[0]]
            for index, copy in _runs_of(pm.model, sg, operation):
                if (index if not copy else (index, copy)) not in pm.subgraph_runs:
                    run = subgraph_run(pm, index, copy)
                    plan_ahead(pm, run.planner.sg, run.partitions)
            if operation.type.name == "WHILE":
                _more_runs(pm, referenced(pm.model, sg, operation)[1])


def _more_runs(pm, body: int) -> None:
    """A WHILE body whose plans (known at prepare) have pools of RUN_AHEAD_BYTES in all or
    less gets RUNS runs (their kernels built now): its loop may run further ahead."""
    plans = [plan for p in pm.subgraph_runs[body].partitions for plan in p.plans.values()]
    if plans and None not in plans and sum(p.pool_bytes for p in plans) <= RUN_AHEAD_BYTES:
        for copy in range(2, RUNS):
            subgraph_run(pm, body, copy)


@dataclass
class Reruns:
    """Which subgraph runs may leave their outputs in their pools (nothing runs their plans
    again while the outputs are read): ``once``, the subgraphs (None: the main one) run at
    most once per execution (the main one, and those referenced by a single IF of one of them
    and by no other operation); ``loops``, the WHILE bodies referenced by a single WHILE of
    one of those and by no other operation (the loop's last outputs may stay in the body's
    pools)."""

    once: set
    loops: set


def reruns(pm) -> Reruns:
    """The :class:`Reruns` of the prepared model ``pm`` (found once)."""
    found = pm.reruns
    if found is None:
        model, count, ifs, loops = pm.model, Counter(), [], []
        for owner, sg in [(None, model.main), *enumerate(model.referenced)]:
            for op in sg.operations:
                if op.type.name in CONTROL_FLOW:
                    refs = referenced(model, sg, op)
                    count.update(refs)
                    if op.type.name == "IF":
                        ifs += [(owner, i) for i in refs]
                    else:  # (the condition, the body)
                        loops.append((owner, refs[1]))
        once, grew = {None}, True
        while grew:
            more = {i for owner, i in ifs if owner in once and count[i] == 1} - once
            once, grew = once | more, bool(more)
        found = pm.reruns = Reruns(once, {i for owner, i in loops
                                          if owner in once and count[i] == 1})
    return found


#: what :func:`run_subgraph` does with the outputs its plans leave in their pools
COPY, REGION, IN_POOL = "copy", "region", "in pool"


def run_subgraph(execution, index: int, inputs: list, outputs: str = COPY, buffers=None,
                 copy: int = 0) -> list:
    """Run referenced subgraph ``index`` (its run ``copy``) on the device, in ``execution`` (a
    clnn.execution.Execution: its queue, events, executor). Its outputs left in its pools are
    handed on as ``outputs`` says: COPY: copied into buffers of their own (the subgraph's
    pools are reused by its next run; ``buffers``, a :class:`Carried`: where the copies go,
    else new buffers); REGION: as the regions of the pools they are in (no copy: the caller
    does not run this subgraph again while it reads them); IN_POOL: as they are (a WHILE
    condition, read before the subgraph runs again). An input held in this run's own pools
    (a WHILE whose condition is its body) is copied first, and replaced in ``inputs``."""
    run = subgraph_run(execution.prepared, index, copy)
    sg = run.planner.sg
    values = run.fresh_values(execution)
    for j, v in enumerate(inputs):
        if isinstance(v, PoolTensor) and v.home is run:  # its kernels would overwrite it
            inputs[j] = v.detached(execution.context, take(buffers, ("in", j), v.nbytes))
    values.update(zip(sg.input_indexes, inputs))
    check_deadline = execution.executor.check_deadline
    for part, scalar in run.steps():
        check_deadline()  # MISSED_DEADLINE_TRANSIENT between partitions
        if not scalar:
            execution.run_partition(part, values, set(), planner=run.planner)
            continue
        for k in part.ops:
            run.scalars[k].run(values)
    if outputs == IN_POOL:  # (handed on as they are)
        return [values[o] for o in sg.output_indexes]
    given = run.given
    return [values[o] if o in given else handed(execution, run, values[o], outputs, buffers, j)
            for j, o in enumerate(sg.output_indexes)]


def take(buffers, key, nbytes: int):
    return buffers.take(key, nbytes) if buffers is not None else None


def handed(execution, run, v, outputs: str, buffers, j: int):
    """An output ``v`` of ``run`` as :func:`run_subgraph` hands it on."""
    if outputs == IN_POOL or not isinstance(v, PoolTensor):
        return v
    if outputs == REGION:
        if v.own:  # a buffer of its own already (a region of a nested run's pool)
            return v
        region = _region(run, v)
        if region is not None:
            return region
    elif v.own and v.home is None:
        return v
    return v.detached(execution.context, take(buffers, j, v.nbytes))


def _region(run, v: PoolTensor) -> PoolTensor | None:
    """``v`` (bytes of a pool of ``run``) as a buffer of its own over the same bytes, an
    OpenCL sub-buffer (the next subgraph's kernels read it without a copy), or None where
    the device does not allow a sub-buffer there (an offset off its base alignment)."""
    n = v.nbytes
    if not n or v.offset % run.align:
        return None
    key = (v.cl_buffer.int_ptr, v.offset, n)
    buf = run.regions.get(key)
    if buf is None:
        buf = run.regions[key] = v.cl_buffer.get_sub_region(v.offset, n)
    return PoolTensor.of(v.queue, buf, 0, v.shape, v.dtype, own=True, home=run)


class Carried:
    """The buffers of a WHILE's carried tensors that are copied (a value a body passes through
    from the run whose pools it is in, or an output that cannot be a region of its pool),
    reused across its iterations (two per carried tensor, alternating): no buffer is made,
    nor its pages first touched, per iteration. A buffer is handed out only while no carried
    value lives in it (``busy``, set before each body run), so a value the body passes
    through to another output keeps its bytes."""

    def __init__(self, context):
        self.context = context
        self.spare: dict = {}
        self.busy: set = set()

    def hold(self, loop: list) -> None:
        """The carried values (their buffers are not handed out until the next hold)."""
        self.busy = {v.cl_buffer.int_ptr for v in loop if isinstance(v, PoolTensor)}

    def take(self, j, nbytes: int):
        import pyopencl as cl

        pool = self.spare.setdefault(j, [])
        for buf in pool:
            if buf.int_ptr not in self.busy and buf.size >= max(nbytes, 1):
                self.busy.add(buf.int_ptr)
                return buf
        buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, max(nbytes, 1))
        pool.append(buf)
        self.busy.add(buf.int_ptr)
        return buf


def condition(value, what: str) -> bool:
    cond = np.asarray(on_host(value)).reshape(-1)  # the one value read back
    if cond.size != 1:
        raise GeneralFailure(f"{what} has {cond.size} elements, expected 1")
    return bool(cond[0])


def scalar_part(run, part) -> bool:
    return not part.on_cl and not part.control and all(k in run.scalars for k in part.ops)


def body_runs(pm, body_index: int) -> int:
    """How many runs of a WHILE body there are (2, or :data:`RUNS` for a small body)."""
    return 2 + sum((body_index, c) in pm.subgraph_runs for c in range(2, RUNS))
