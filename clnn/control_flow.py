"""IF and WHILE on the OpenCL device.

A supported IF / WHILE is a partition of its own (clnn/plan.py ``partition``). Its referenced
subgraphs are planned as the main one is: partitions, one plan per input-shape signature (so
shapes that change across iterations get plans of their own), constants in a buffer of their
own, and IF / WHILE inside them run the same way (recursively). Only the condition is read back
(one byte per IF, one per WHILE iteration, and those of iterations run ahead); the tensors
passed to and from the subgraphs stay in device memory (:class:`clnn.memory.PoolTensor`).

A subgraph's outputs are read from pool bytes that no run overwrites while they are read. A
WHILE body has two runs with pools of their own (:class:`SubgraphRun` ``copy``; a small body
RUNS) that take turns: each iteration's outputs are handed to the next as regions of the pools
they are in (OpenCL sub-buffers, which the next run's kernels read directly: nothing is copied
per iteration), and the run that reads them writes other pools. A loop whose body can be
dropped unseen runs ahead of its conditions (:func:`_run_ahead`): bodies enqueued before the
host has read the condition that decides them, so the device works while the host waits for
a read and wakes up (each read is a round trip to the device: on PoCL ~30-55 us, three times
a 512x512 ADD; benchmarks/condition_read.py). The outputs of a subgraph run
at most once per execution (an IF's branch in the main subgraph, a WHILE's last iteration:
:func:`reruns`) stay in its pools too; those of a subgraph run again while they are read (two
IFs naming one branch, a loop inside a loop's body) are copied on the device into buffers of
their own when it returns (``detached``).

The loop timeout and the deadline hold as on the reference device
(hal/operations/control_flow.py): the condition runs, then a loop past the execution's loop
timeout (LOOP_TIMEOUT_DEFAULT_NS when the execution gives none) fails with
MISSED_DEADLINE_TRANSIENT, and the execution deadline is checked between partitions.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field, replace

import numpy as np

from clnn.launch import direct_inputs_on
from clnn.memory import PoolTensor, on_device, on_host
from clnn.plan import CONTROL_FLOW, Partition, Planner, partition
from hal.errors import ErrorStatus, GeneralFailure, HalError, InvalidArgument, MissedDeadline
from hal.interfaces import LOOP_TIMEOUT_DEFAULT_NS
from hal.operations import lookup
from hal.operations.context import operation_context
from hal.types import OperandLifeTime

#: the SUBGRAPH inputs of each control-flow operation
SUBGRAPH_INPUTS = {"IF": (1, 2), "WHILE": (0, 1)}
#: the runs of a small WHILE body (pools of its own each: a loop that runs ahead of its
#: conditions enqueues up to RUNS - 1 iterations ahead), and the pool bytes of a small one
RUNS, RUN_AHEAD_BYTES = 3, 4 << 20
#: iterations of a loop whose commands are enqueued together (:class:`Gate`)
GATE_ITERATIONS = 16


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
    run, with pools of its own: the two take turns, :func:`_run_while`)."""

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
    #: be enqueued again as it was (:class:`Replay`), or None
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
            self._steps = [(part, _scalar_part(self, part)) for part in self.partitions]
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


# The scalar operations of IF / WHILE subgraphs run on the host (DeviceOptions.host_scalars).
#
# A WHILE's counter and its test (``i + 1``, ``i < n``: one-element tensors) cost a launch each
# on the device, and a condition computed there is read back, a round trip to the device per
# iteration. NumPy computes a few elements in less time than a launch takes on any device, and a
# condition computed on the host needs no read: a loop whose counter and test run there makes
# one launch per iteration for its tensors and waits for nothing. Which operations
# (:func:`host_scalar_ops`): those whose every tensor has a known shape of at most
# :data:`HOST_SCALAR_BYTES`, reading only constants, the subgraph's inputs and other such
# operations' outputs (never a tensor the device computed in the same run). They run with the
# reference implementation (hal/operations), their operation context made once
# (:class:`ScalarOp`), not per run: a loop runs them every iteration.

#: the most bytes of any tensor a scalar operation reads or writes
HOST_SCALAR_BYTES = 64
CONSTANT = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)
#: the operation families whose shape function (``prepare``) reads their inputs' shapes only
#: (hal/operations/broadcast.py, comparison.py)
SHAPES_ONLY = ("broadcast", "comparison")
#: what a reference implementation raises for inputs it cannot compute (as the reference
#: executor: the execution fails with OP_FAILED)
FAILURES = (ValueError, IndexError, ZeroDivisionError, FloatingPointError, OverflowError,
            TypeError, KeyError, MemoryError)


def host_scalar_ops(sg) -> set[int]:
    """The operations of referenced subgraph ``sg`` that run on the host (the comment
    above)."""
    ready, found = set(sg.input_indexes), set()
    for k, op in enumerate(sg.operations):
        if op.type.name in CONTROL_FLOW or not op.outputs or lookup(op.type) is None:
            continue
        if all(_scalar(sg.operands[i]) for i in (*op.inputs, *op.outputs)) and \
                all(i in ready or sg.operands[i].lifetime in CONSTANT for i in op.inputs):
            found.add(k)
            ready.update(op.outputs)
    return found


def _scalar(operand) -> bool:
    return operand.is_fully_specified() and operand.byte_size() <= HOST_SCALAR_BYTES


class ScalarOp:
    """Operation ``k`` of ``sg`` run by its reference implementation with a context made once:
    each run sets its inputs' values and its outputs' declared shapes."""

    def __init__(self, model, sg, k: int, executor):
        op = sg.operations[k]
        self.name = f"{op.type.name} (operation {k})"
        self.registration = lookup(op.type)
        self.ctx = operation_context(model, sg, k, {}, executor=executor)
        self.inputs, self.outputs = list(op.inputs), list(op.outputs)
        self.declared = [tuple(sg.operands[o].dimensions) for o in op.outputs]
        #: the inputs' declared shapes, where the operation's shape function reads shapes
        #: only (SHAPES_ONLY): inputs of these shapes give the declared outputs (the model's
        #: validation prepared the operation at them), so only other shapes run it again
        self.declared_in = [info.shape for info in self.ctx.inputs] \
            if self.registration.family in SHAPES_ONLY else None
        #: (input's info, operand) of the inputs that are not omitted, (info, declared shape)
        #: of the inputs and of the outputs: what every run reads, found once (a loop runs it
        #: every iteration)
        self._reads = [(info, i) for info, i in zip(self.ctx.inputs, self.inputs)
                       if not info.omitted]
        self._inputs_declared = list(zip(self.ctx.inputs, self.declared_in)) \
            if self.declared_in is not None else None
        self._outputs_declared = list(zip(self.ctx.outputs, self.declared))

    def _declared(self) -> bool:
        """Whether the inputs now have the shapes that give the declared outputs."""
        pairs = self._inputs_declared
        if pairs is None:
            return False
        for info, shape in pairs:  # (a loop, not all() over a generator: run per iteration)
            if info.shape != shape:
                return False
        return True

    def run(self, values: dict) -> None:
        """Compute the outputs from ``values`` (a tensor on the device is read first) into it."""
        ctx = self.ctx
        for info, i in self._reads:
            v = values.get(i)
            if v is None:
                raise GeneralFailure(f"{self.name}: input operand {i} has not been computed")
            if not isinstance(v, np.ndarray) and on_device(v):
                v = values[i] = v.to_host()
            info.value, info.shape = v, tuple(v.shape)
        for info, shape in self._outputs_declared:
            info.shape = shape
        reg = self.registration
        try:
            results = reg.execute(ctx) if self._declared() else reg.run(ctx)
        except InvalidArgument as e:
            raise GeneralFailure(e.reason) from e
        except HalError:
            raise
        except FAILURES as e:
            raise GeneralFailure(f"{self.name} failed: {type(e).__name__}: {e}") from e
        for info, o, arr, shape in zip(ctx.outputs, self.outputs, results, self.declared):
            arr = np.asarray(arr)
            if arr.dtype != info.dtype:
                arr = arr.astype(info.dtype)
            if arr.shape != shape:
                raise GeneralFailure(f"{self.name}: output operand {o} has shape "
                                     f"{list(arr.shape)}, declared {list(shape)}")
            values[o] = arr


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
            inputs[j] = v.detached(execution.context, _take(buffers, ("in", j), v.nbytes))
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
    return [values[o] if o in given else _handed(execution, run, values[o], outputs, buffers, j)
            for j, o in enumerate(sg.output_indexes)]


def _take(buffers, key, nbytes: int):
    return buffers.take(key, nbytes) if buffers is not None else None


def _handed(execution, run, v, outputs: str, buffers, j: int):
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
    return v.detached(execution.context, _take(buffers, j, v.nbytes))


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


def _condition(value, what: str) -> bool:
    cond = np.asarray(on_host(value)).reshape(-1)  # the one value read back
    if cond.size != 1:
        raise GeneralFailure(f"{what} has {cond.size} elements, expected 1")
    return bool(cond[0])


def run_control(execution, sg, k: int, values: dict, owner: int | None = None):
    """Run IF / WHILE operation ``k`` of ``sg`` (referenced subgraph ``owner``, None: the
    main one) in ``execution`` (clnn.execution.Execution): ``values`` gives its inputs and
    receives its outputs. The profiling events of its subgraphs' kernels are reported as
    operation k's (their own operation indexes are of another subgraph)."""
    operation = sg.operations[k]
    ins = [values[i] for i in operation.inputs]
    first, second = referenced(execution.prepared.model, sg, operation)
    events = execution.events
    inner = execution.nested([] if events is not None else None)
    found = reruns(execution.prepared)
    if operation.type.name == "IF":
        branch = first if _condition(ins[0], f"IF (operation {k}): the condition") else second
        if owner is None and execution.device_outputs:
            _branch_outputs(execution, inner, operation, branch)
        outs = run_subgraph(inner, branch, ins[3:], REGION if branch in found.once else COPY)
    else:
        final = _while_outputs(execution, operation) if owner is None else {}
        outs = _run_while(inner, k, first, second, ins[2:], len(operation.outputs), final)
        if owner not in found.once or second not in found.loops:
            # the body runs again while the outputs are read: out of its pools
            outs = [v.detached(inner.context) if isinstance(v, PoolTensor) and v.home
                    else v for v in outs]
    inner = inner.events
    if events is not None:
        events.extend((replace(launch, op_index=k), ev) for launch, ev in inner)
    for o, v in zip(operation.outputs, outs):
        values[o] = v


def _branch_outputs(execution, inner, operation, branch: int) -> None:
    """An IF of the main subgraph whose outputs are model outputs with bytes in the client's
    memory: the branch's plans (``inner``'s) leave their outputs there (written by their
    kernels where the device shares the host's memory: clnn.launch.DirectOutput), not in
    their pools to be read there afterwards."""
    run = subgraph_run(execution.prepared, branch)
    sub = run.planner.sg
    found = {}
    for o, so in zip(operation.outputs, sub.output_indexes):
        dst = execution.device_outputs.get(o)
        if isinstance(dst, np.ndarray) and so not in found and so not in run.given:
            found[so] = dst
    if found:
        inner.device_outputs, inner.outputs_of = found, run.planner


def _while_outputs(execution, operation) -> dict:
    """A WHILE of the main subgraph whose outputs are model outputs with bytes in the
    client's memory: output position -> those bytes (where the loop's last body may leave
    them: :func:`_host_loop`)."""
    found = {}
    for j, o in enumerate(operation.outputs):
        dst = execution.device_outputs.get(o)
        if isinstance(dst, np.ndarray):
            found[j] = dst
    return found


def _to_device(execution, value):
    """A host array as a PoolTensor in a buffer of its own (others as they are)."""
    import pyopencl as cl

    if not isinstance(value, np.ndarray):
        return value
    arr = np.ascontiguousarray(value)
    data = arr.view(np.uint8) if arr.dtype == np.bool_ else arr
    pm = execution.prepared
    # read where it lies on a device sharing the host's memory (the request's memory, alive
    # until the execution ends): no buffer's pages to fill per execution
    flag = cl.mem_flags.USE_HOST_PTR if data.nbytes and _direct(pm) else \
        cl.mem_flags.COPY_HOST_PTR
    buf = cl.Buffer(execution.context, cl.mem_flags.READ_ONLY | flag,
                    hostbuf=data if data.nbytes else np.zeros(1, np.uint8))
    return PoolTensor(execution.queue, buf, 0, arr.shape, arr.dtype, own=True)


def _direct(pm) -> bool:
    """Whether the device of ``pm`` reads host arrays in place (clnn.launch.direct_inputs_on),
    found once."""
    if pm.direct_inputs is None:
        pm.direct_inputs = direct_inputs_on(pm.device.cl_device, pm.device.options)
    return pm.direct_inputs


def _run_while(execution, k: int, cond_index: int, body_index: int, loop: list, m: int,
               final: dict):
    """As hal/operations/control_flow.py execute_while, with the subgraphs on the device. The
    body's runs take turns (each with pools of its own), its outputs handed to the next
    iteration as regions of the pools they are in: no copy, and the run that reads them
    writes other pools. The outputs may be in the body's pools.

    Once a first iteration shows the body may run ahead (:func:`_may_run_ahead`), the loop
    goes on in :func:`_run_ahead`; else each condition is read before its body runs.
    ``final``: output position -> the request's bytes it goes to (:func:`_while_outputs`)."""
    ex = execution.executor
    mk = len(execution.prepared.model.referenced[body_index].output_indexes)
    timeout = ex.loop_timeout_ns if ex.loop_timeout_ns is not None else LOOP_TIMEOUT_DEFAULT_NS
    deadline = time.monotonic_ns() + timeout

    def check(iteration: int) -> None:  # after a true condition, before its body
        if time.monotonic_ns() > deadline:
            raise MissedDeadline(f"WHILE (operation {k}) ran past its loop timeout of "
                                 f"{timeout} ns after {iteration} iterations",
                                 ErrorStatus.MISSED_DEADLINE_TRANSIENT)

    # host values (model inputs, constants) uploaded once, not by every iteration's plans
    # (those only the host reads, a loop's counter and its limit, stay there)
    pm = execution.prepared
    loop = [_to_device(execution, v) if _read_on_device(pm, (cond_index, body_index), j)
            else v for j, v in enumerate(loop)]
    host = _host_driven(execution, (cond_index, body_index), loop, mk)
    checks = (check, f"WHILE (operation {k}): the condition output")
    if host and final and _peeks(pm, cond_index):
        return _host_loop(execution, (cond_index, body_index), loop, (m, mk), checks, final)
    gate = Gate(execution) if host else None
    try:
        return _loop(execution, (cond_index, body_index), loop, (m, mk), checks, gate)
    finally:
        if gate is not None:
            gate.release()


def _loop(execution, indexes: tuple, loop: list, counts: tuple, checks: tuple, gate) -> list:
    """The iterations of :func:`_run_while` (``counts``: the WHILE's outputs, the body's;
    ``checks``: the loop timeout's check, the condition's name)."""
    cond_index, body_index = indexes
    m, mk = counts
    check, what = checks
    carried = Carried(execution.context)
    iteration = 0
    while True:
        if gate is not None and iteration % GATE_ITERATIONS == 0:
            gate.hold()
        (cond,) = run_subgraph(execution, cond_index, loop, IN_POOL)
        if not _condition(cond, what):
            return loop[:m]
        check(iteration)
        carried.hold(loop)
        outs = run_subgraph(execution, body_index, loop, REGION, carried, iteration % 2)
        before, loop = loop, list(outs[:mk]) + loop[mk:]
        iteration += 1
        if iteration == 1 and cond_index != body_index and gate is None and \
                _may_run_ahead(execution, body_index, before, outs[:mk]):
            runs = body_runs(execution.prepared, body_index)
            return _run_ahead(execution, (cond_index, body_index, runs), loop, mk, what,
                              check)[:m]


def _peeks(pm, cond_index: int) -> bool:
    """Whether the condition of a host-driven loop (:func:`_host_driven`) is computed by its
    scalar operations (none of its outputs is an input passed through): then it may be
    computed from a body's host outputs before the body's device partitions run."""
    run = subgraph_run(pm, cond_index)
    return not any(o in run.given for o in run.planner.sg.output_indexes)


def _host_loop(execution, indexes: tuple, loop: list, counts: tuple, checks: tuple,
               final: dict) -> list:
    """The iterations of a host-driven loop (:func:`_host_driven`) whose outputs go to the
    request's bytes (``final``: :func:`_while_outputs`), GATE_ITERATIONS at a time: first the
    host's part of each iteration of the batch (its body's scalar operations, then the next
    condition from their values: they read nothing the device computes), then the batch's
    device partitions enqueued back to back (the loop's last body writing the model outputs
    into the request's bytes: clnn.launch.DirectOutput): the device is woken once per batch
    and runs its kernels back to back while the host computes the next batch."""
    cond_index, body_index = indexes
    m, mk = counts
    check, what = checks
    pm = execution.prepared
    body, cond = subgraph_run(pm, body_index), subgraph_run(pm, cond_index)
    carried_outs = body.planner.sg.output_indexes[:mk]
    (cond_out,) = cond.planner.sg.output_indexes
    carried, gate = Carried(execution.context), Gate(execution)
    going = _condition(_host_part(execution, cond, loop)[cond_out], what)
    iteration = 0
    ahead = list(loop)  # the next iteration's values (the device's: stale, never read here)
    while going:
        batch = []
        while going and len(batch) < GATE_ITERATIONS:
            check(iteration + len(batch))
            values = _host_part(execution, body, ahead)
            batch.append(values)
            ahead = [values.get(o, v) for o, v in zip(carried_outs, ahead)] + ahead[mk:]
            going = _condition(_host_part(execution, cond, ahead)[cond_out], what)
        gate.hold()
        try:
            for n, values in enumerate(batch):
                last = not going and n + 1 == len(batch)
                if last:  # (its kernels write the request's bytes: the queue is waited for)
                    gate.release()
                carried.hold(loop)
                outs = _device_part(execution, subgraph_run(pm, body_index, iteration % 2),
                                    loop, values, carried, final if last else None, mk)
                loop = list(outs[:mk]) + loop[mk:]
                iteration += 1
        finally:
            gate.release()
    return loop[:m]


def _host_part(execution, run, inputs: list) -> dict:
    """The values of one run of a body of a host-driven loop after its scalar operations (the
    constants, the inputs, their outputs)."""
    values = run.fresh_values(execution)
    values.update(zip(run.planner.sg.input_indexes, inputs))
    check_deadline = execution.executor.check_deadline
    for part, scalar in run.steps():
        if scalar:
            check_deadline()
            for k in part.ops:
                run.scalars[k].run(values)
    return values


def _device_part(execution, run, inputs: list, host: dict, carried, final, mk: int) -> list:
    """The device partitions of ``run`` (a body of a host-driven loop) on ``inputs`` with the
    values of its host part (``host``: :func:`_host_part`); its outputs as regions of its
    pools (:func:`run_subgraph` REGION). ``final``: the loop's last body: the outputs that go
    to the request's bytes (:func:`_while_outputs`). A run on the device buffers of its
    last run, whose kernels still point at them, enqueues its launches again
    (:class:`Replay`)."""
    sg = run.planner.sg
    to_request = {sg.output_indexes[j]: dst for j, dst in final.items() if j < mk} \
        if final else {}
    if run.replay is not None:
        outs = run.replay.again(execution, run, inputs, host, to_request)
        if outs is not None:
            return outs
    values = dict(host)
    inputs = list(inputs)
    detached = False
    for j, v in enumerate(inputs):
        if isinstance(v, PoolTensor) and v.home is run:  # its kernels would overwrite it
            inputs[j] = v.detached(execution.context, _take(carried, ("in", j), v.nbytes))
            detached = True
    values.update(zip(sg.input_indexes, inputs))
    if final:
        execution.device_outputs, execution.outputs_of = to_request, run.planner
    check_deadline = execution.executor.check_deadline
    try:
        for part, scalar in run.steps():
            if not scalar:
                check_deadline()
                execution.run_partition(part, values, set(), planner=run.planner)
    finally:
        if execution.outputs_of is run.planner:
            execution.device_outputs, execution.outputs_of = {}, None
    given = run.given
    outs = [values[o] if o in given else _handed(execution, run, values[o], REGION, carried, j)
            for j, o in enumerate(sg.output_indexes)]
    # (a record stands while its checks hold: a run that cannot be replayed, such as a
    # loop's first on the request's bytes or its last into them, points the kernels back)
    record = None if final or detached else Replay.of(execution, run, inputs, outs)
    if record is not None:
        run.replay = record
    return outs


def _buffer_key(v):
    """What a loop value is on the device, for :class:`Replay`: (buffer, byte offset), or
    None for a host value."""
    return (v.cl_buffer.int_ptr, v.offset) if isinstance(v, PoolTensor) else None


@dataclass
class Replay:
    """The device partitions of a host-driven loop body's run (:func:`_device_part`) as they
    were enqueued in its last run, to be enqueued again as they were: a loop's iterations
    that run one body run (a run is every second iteration's) read the same device buffers
    (the other run's regions) and write the same pools, so the plans, their kernels'
    arguments and the outputs' regions are those of the last time; only the launches are
    enqueued (the capabilities' WHILE: per iteration ~18 us of the host thread, the plan
    found, its inputs bound, its outputs collected, became ~4 us). Made where nothing else
    is done per run: no profiling events or intermediates, plans that upload nothing, read
    nothing back and whose kernels are made (no chain of their own), every input the
    kernels read a buffer that lives as long as the prepared model (DirectInput.durable);
    used while the plans are still the partitions' and their kernels still point at those
    buffers (another run of the plan, an execution's first iteration on the request's
    bytes, repoints them)."""

    #: per loop value, :func:`_buffer_key`
    key: tuple
    #: (partition, plan, steps enqueued, ((DirectInput, buffer it points at), ...)) each
    parts: tuple
    #: per output of the subgraph its device value (a region), or None: the run's input or
    #: host value of that operand (passed through, or computed by a scalar operation)
    outs: tuple

    @classmethod
    def of(cls, execution, run, inputs: list, outs: list):
        if execution.events is not None or execution.keep_all:
            return None
        parts = []
        for part, scalar in run.steps():
            if scalar:
                continue
            if part.control or not part.on_cl or part.host_inputs or not part.plans:
                return None
            plan = next(reversed(part.plans.values()))  # (the one just run)
            if plan is None:
                return None
            steps = _steps_of(plan)
            if plan.uploads or plan.readbacks or \
                    any(getattr(s, "lazy", None) is not None or getattr(s, "kernel", 1) is None
                        for s in steps) or \
                    not all(d.durable for d in plan.direct.values()) or \
                    any(d.bound is not None for d in plan.direct_out.values()):
                return None
            parts.append((part, plan, steps,
                          tuple((d, d.target) for d in plan.direct.values())))
        sg = run.planner.sg
        device = {o for part, *_ in parts for o in part.outputs}
        kept = tuple(v if o in device and o not in run.given else None
                     for o, v in zip(sg.output_indexes, outs))
        return cls(tuple(_buffer_key(v) for v in inputs), tuple(parts), kept)

    def again(self, execution, run, inputs: list, host: dict, to_request: dict
              ) -> list | None:
        """The run enqueued as the last one was, its outputs; None where it may not be.
        ``to_request``: output operand -> the request's bytes it goes to (a loop's last
        run): the kernels write them there (clnn.launch.DirectOutput), as in
        clnn.launch.enqueue_plan, and point back at their own buffers afterwards."""
        if execution.events is not None or execution.keep_all or \
                len(inputs) != len(self.key):
            return None
        for v, k in zip(inputs, self.key):
            if _buffer_key(v) != k:
                return None
        for part, plan, steps, direct in self.parts:
            if not part.plans or next(reversed(part.plans.values())) is not plan or \
                    _steps_of(plan) is not steps:
                return None
            for d, target in direct:
                if d.target is not target:
                    return None
            for d in plan.direct_out.values():
                if d.bound is not None:
                    return None
        sg = run.planner.sg
        bound: dict = {}
        try:
            if to_request and not self._bind(sg.output_indexes, to_request, bound,
                                             execution.held):
                return None
            self._enqueue(execution)
            written = {o: d.bound for o, d in bound.items()}  # (the request's bytes)
        finally:
            for d in bound.values():
                d.unbind()
        given = dict(zip(sg.input_indexes, inputs))
        return [written[o] if o in written else v if v is not None else
                given[o] if o in given else host[o]
                for o, v in zip(sg.output_indexes, self.outs)]

    def _bind(self, operands, to_request: dict, bound: dict, keep: list) -> bool:
        """The direct outputs of the plans pointed at the request's bytes they go to
        (``bound``: operand -> DirectOutput; ``operands``: the subgraph's outputs); False
        where an output the device computes cannot be written there (its bytes read after
        the kernels instead)."""
        for _, plan, _, _ in self.parts:
            for o, d in plan.direct_out.items():
                dst = to_request.get(o)
                if isinstance(dst, np.ndarray):
                    bound[o] = d
                    d.bind(dst, keep)
                    if d.bound is None:
                        return False
        return all(o in bound for o, v in zip(operands, self.outs)
                   if v is not None and o in to_request)

    def _enqueue(self, execution) -> None:
        from clnn.launch import enqueue_launch

        check_deadline = execution.executor.check_deadline
        runner, queue = execution.prepared.runner, execution.queue
        for _, plan, steps, _ in self.parts:
            check_deadline()
            runner.promote(plan, execution)
            for step in steps:
                enqueue_launch(queue, step)


def _steps_of(plan) -> list:
    """What an execution enqueues of ``plan``: its chained steps, else its launches."""
    return plan.chained if plan.chained is not None else plan.launches


class Gate:
    """The commands of a loop that never waits for the device (:func:`_host_driven`), held
    back behind a marker waiting for a user event until :data:`GATE_ITERATIONS` iterations
    are enqueued (:meth:`hold` releases the previous gate and opens the next), and released
    at the loop's end or failure: on a CPU device each launch enqueued while the workers are
    idle wakes them (a futex wake-up across cores, and on a busy host a thread preempted),
    while launches enqueued together run back to back (the capabilities' WHILE: 0.78 to
    0.64 ms in one process). :func:`_host_loop` holds each batch's device partitions, which
    it enqueues after the batch's host parts."""

    def __init__(self, execution):
        self.execution = execution
        self.event = None

    def hold(self) -> None:
        import pyopencl as cl

        self.release()
        self.event = cl.UserEvent(self.execution.context)
        cl.enqueue_marker(self.execution.queue, wait_for=[self.event])

    def release(self) -> None:
        import pyopencl as cl

        if self.event is not None:
            self.event.set_status(cl.command_execution_status.COMPLETE)
            self.event = None


def _host_driven(execution, indexes: tuple, loop: list, mk: int) -> bool:
    """Whether a WHILE loop on a CPU device never waits for the device: no profiling events,
    its condition computed by scalar operations on the host (:func:`_host_reads`), and every
    loop value they read a host array now. Such a loop's commands may be held back
    (:class:`Gate`): nothing in it waits for them."""
    if execution.events is not None or execution.keep_all:
        return False
    pm = execution.prepared
    if indexes not in pm.host_loops:
        pm.host_loops[indexes] = _host_reads(pm, indexes, mk)
    host = pm.host_loops[indexes]
    return host is not None and all(isinstance(loop[j], np.ndarray) for j in host)


def _host_reads(pm, indexes: tuple, mk: int):
    """The loop values that the scalar operations (:func:`host_scalar_ops`) of a WHILE's
    condition and body read, where the loop may be host-driven (else None): on a CPU device,
    its condition computed by scalar operations only, its body's other partitions OpenCL
    ones planned at prepare (every shape known) reading nothing back, and each of those
    values that is carried written by a scalar operation of the body."""
    import pyopencl as cl

    if indexes[0] == indexes[1] or not pm.device.cl_device.type & cl.device_type.CPU:
        return None
    cond, body = (subgraph_run(pm, i) for i in indexes)
    host = set()
    for run in (cond, body, subgraph_run(pm, indexes[1], 1)):
        sg = run.planner.sg
        if not all(sg.operands[i].is_fully_specified()
                   for i in (*sg.input_indexes, *sg.output_indexes)):
            return None
        for part in run.partitions:
            if _scalar_part(run, part):
                host.update(j for j, i in enumerate(sg.input_indexes)
                            if any(i in run.scalars[k].inputs for k in part.ops))
            elif not part.on_cl or part.control or part.host_inputs or \
                    any(p is None or p.readbacks for p in part.plans.values()) or run is cond:
                return None
    written = {o for k in body.scalars for o in body.scalars[k].outputs}
    outputs = body.planner.sg.output_indexes
    return host if all(j >= mk or outputs[j] in written for j in host) else None


def _scalar_part(run, part) -> bool:
    return not part.on_cl and not part.control and all(k in run.scalars for k in part.ops)


def _read_on_device(pm, indexes: tuple, j: int) -> bool:
    """Whether input ``j`` of a subgraph of ``indexes`` is read by an OpenCL partition of it
    (or by an IF / WHILE in it)."""
    return any(j in subgraph_run(pm, index).device_reads() for index in indexes)


def loop_input_on_device(pm, sg, k: int, i: int) -> bool:
    """Whether operand ``i`` is read by operation ``k`` of ``sg`` only as the values of a
    WHILE loop that its condition and body read on the device (:func:`_read_on_device`):
    :func:`_run_while` makes each a buffer of its own before the first iteration (over the
    host array where the device reads it in place), and no host operation reads the array."""
    operation = sg.operations[k]
    at = [j for j, x in enumerate(operation.inputs) if x == i]
    if operation.type.name != "WHILE" or not at or min(at) < 2:
        return False
    indexes = tuple(referenced(pm.model, sg, operation))
    return all(_read_on_device(pm, indexes, j - 2) for j in at)


def _run_ahead(execution, indexes: tuple, loop: list, mk: int, what: str, check) -> list:
    """The rest of a WHILE loop (``loop``: the values after its first iteration), each body
    enqueued right after its condition and that condition's non-blocking read, before the
    host has it: up to ``runs`` - 1 iterations are enqueued ahead of the last condition read
    (one after the first iteration, one more after each, so a short loop drops few bodies).
    The device runs them while the host waits for a read and wakes up. After a false
    condition the bodies enqueued ahead of it are dropped: they wrote runs whose pools the
    loop's values (the iteration before's outputs) are not in (iteration i runs body run
    i mod ``runs``). Returns the loop's last values."""
    cond_index, body_index, runs = indexes
    pending: deque = deque()
    ahead, done = list(loop), 1  # the values the next enqueued iteration reads; iterations
    while True:
        while len(pending) < min(done, runs - 1):
            (cond,) = run_subgraph(execution, cond_index, ahead, IN_POOL)
            read = _read_later(execution, cond)
            outs = run_subgraph(execution, body_index, ahead, REGION, None,
                                (done + len(pending)) % runs)
            pending.append((read, outs))
            ahead = list(outs[:mk]) + ahead[mk:]
        read, outs = pending.popleft()
        if not _condition(read(), what):
            return loop
        check(done)
        loop = list(outs[:mk]) + loop[mk:]
        done += 1


def body_runs(pm, body_index: int) -> int:
    """How many runs of a WHILE body there are (2, or :data:`RUNS` for a small body)."""
    return 2 + sum((body_index, c) in pm.subgraph_runs for c in range(2, RUNS))


def _read_later(execution, value):
    """Start reading a condition back without waiting: a function returning it once read."""
    import pyopencl as cl

    if not isinstance(value, PoolTensor) or value.nbytes != 1:
        return lambda: value
    host = np.empty(1, np.uint8)
    event = cl.enqueue_copy(execution.queue, host, value.cl_buffer, src_offset=value.offset,
                            is_blocking=False)

    def read():
        event.wait()
        return host.astype(np.bool_)

    return read


def _may_run_ahead(execution, body_index: int, loop: list, outs: list) -> bool:
    """Whether a body run before its condition is read (and dropped after a false one) does
    nothing else: both its runs are OpenCL partitions only, with plans made for these shapes
    (its outputs' are its inputs'), none read back (an error flag, a data-dependent shape),
    none planned on values read on the host, and the execution collects no profiling events
    (they would count a dropped run)."""
    if execution.events is not None or \
            [getattr(v, "shape", None) for v in outs] != [getattr(v, "shape", None)
                                                          for v in loop[:len(outs)]]:
        return False
    for copy in range(body_runs(execution.prepared, body_index)):
        run = subgraph_run(execution.prepared, body_index, copy)
        for part in run.partitions:
            if not part.on_cl or part.control or part.host_inputs or \
                    any(plan is None or plan.readbacks for plan in part.plans.values()):
                return False
    return all(isinstance(v, PoolTensor) for v in outs)
