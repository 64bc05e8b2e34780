"""IF and WHILE on the OpenCL device.

A supported IF / WHILE is a partition of its own (clnn/plan.py ``partition``). Its referenced
subgraphs are planned as the main one is: partitions, one plan per input-shape signature (so
shapes that change across iterations get plans of their own), constants in a buffer of their
own, and IF / WHILE inside them run the same way (recursively). Only the condition is read back
(one byte per IF, one per WHILE iteration); the tensors passed to and from the subgraphs stay in
device memory (:class:`clnn.memory.PoolTensor`).

A subgraph's plans run again (every WHILE iteration, or two IFs naming one branch), so its
outputs are copied on the device into buffers of their own when it returns (``detached``): a
loop-carried tensor is never read from pool bytes that the next iteration overwrites.

The loop timeout and the deadline hold as on the reference device
(hal/operations/control_flow.py): the condition runs, then a loop past the execution's loop
timeout (LOOP_TIMEOUT_DEFAULT_NS when the execution gives none) fails with
MISSED_DEADLINE_TRANSIENT, and the execution deadline is checked between partitions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from clnn.memory import PoolTensor, on_host
from clnn.plan import CONTROL_FLOW, Partition, Planner, partition
from hal.errors import ErrorStatus, GeneralFailure, MissedDeadline
from hal.interfaces import LOOP_TIMEOUT_DEFAULT_NS
from hal.types import OperandLifeTime

#: the SUBGRAPH inputs of each control-flow operation
SUBGRAPH_INPUTS = {"IF": (1, 2), "WHILE": (0, 1)}


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
    """The partitions and plans of one referenced subgraph."""

    index: int
    partitions: list[Partition]
    planner: Planner


def subgraph_run(pm, index: int) -> SubgraphRun:
    """The partitions and planner of referenced subgraph ``index`` of the prepared model ``pm``
    (made on first use, then kept)."""
    run = pm.subgraph_runs.get(index)
    if run is None:
        model, device = pm.model, pm.device
        sub = model.referenced[index]
        supported = [(support_reason(device, model, sub, op) if op.type.name in CONTROL_FLOW
                      else device.unsupported_reason_in(model, sub, k, op)) is None
                     for k, op in enumerate(sub.operations)]
        parts = partition(model, supported, sub, outputs_resident=True)
        planner = Planner(device, model, parts, index, executor=pm.executor)
        planner.plan_ahead()
        run = pm.subgraph_runs[index] = SubgraphRun(index, parts, planner)
    return run


def plan_ahead(pm, sg, partitions):
    """Plan at prepare the subgraphs that the control-flow partitions of ``sg`` run (and theirs,
    recursively), as far as their shapes are known there: their kernels are then built at
    prepare, and saved by the compilation cache with the main subgraph's."""
    for part in partitions:
        if part.control:
            for index in referenced(pm.model, sg, sg.operations[part.ops[0]]):
                if index not in pm.subgraph_runs:
                    run = subgraph_run(pm, index)
                    plan_ahead(pm, run.planner.sg, run.partitions)


def run_subgraph(execution, index: int, inputs: list, detach: bool = True,
                 buffers=None) -> list:
    """Run referenced subgraph ``index`` on the device, in ``execution`` (a
    clnn.execution.Execution: its queue, events, executor): its outputs, those in device
    memory copied into buffers of their own (the subgraph's pools are reused by its next run)
    unless ``detach`` is False (a WHILE condition, read before the subgraph runs again);
    ``buffers`` (a :class:`Carried`): where those copies go (else new buffers)."""
    run = subgraph_run(execution.prepared, index)
    sg = run.planner.sg
    values = dict(execution.executor.constants(index))
    values.update(zip(sg.input_indexes, inputs))
    for part in run.partitions:
        execution.executor.check_deadline()  # MISSED_DEADLINE_TRANSIENT between partitions
        execution.run_partition(part, values, set(), planner=run.planner)
    given = set(sg.input_indexes)
    outs = list(sg.output_indexes)
    for j, o in enumerate(outs):
        v = values[o]
        if detach and isinstance(v, PoolTensor) and o not in given:
            outs[j] = v.detached(execution.context,
                                 buffers.take(j, v.nbytes) if buffers is not None else None)
        else:
            outs[j] = v
    return outs


class Carried:
    """The buffers a WHILE's body outputs are copied into, reused across its iterations (two
    per carried tensor, alternating): no buffer is made, nor its pages first touched, per
    iteration. A buffer is handed out only while no carried value lives in it (``busy``, set
    before each body run), so a value the body passes through to another output keeps its
    bytes."""

    def __init__(self, context):
        self.context = context
        self.spare: dict[int, list] = {}
        self.busy: set = set()

    def hold(self, loop: list) -> None:
        """The carried values (their buffers are not handed out until the next hold)."""
        self.busy = {v.cl_buffer.int_ptr for v in loop if isinstance(v, PoolTensor)}

    def take(self, j: int, nbytes: int):
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


def run_control(execution, sg, k: int, values: dict):
    """Run IF / WHILE operation ``k`` of ``sg`` in ``execution`` (clnn.execution.Execution):
    ``values`` gives its inputs and receives its outputs. The profiling events of its
    subgraphs' kernels are reported as operation k's (their own operation indexes are of
    another subgraph)."""
    operation = sg.operations[k]
    ins = [values[i] for i in operation.inputs]
    first, second = referenced(execution.prepared.model, sg, operation)
    events = execution.events
    inner = execution.nested([] if events is not None else None)
    if operation.type.name == "IF":
        branch = first if _condition(ins[0], f"IF (operation {k}): the condition") else second
        outs = run_subgraph(inner, branch, ins[3:])
    else:
        outs = _run_while(inner, k, first, second, ins[2:], len(operation.outputs))
    inner = inner.events
    if events is not None:
        events.extend((replace(launch, op_index=k), ev) for launch, ev in inner)
    for o, v in zip(operation.outputs, outs):
        values[o] = v


def _to_device(execution, value):
    """A host array as a PoolTensor in a buffer of its own (others as they are)."""
    import pyopencl as cl

    if not isinstance(value, np.ndarray):
        return value
    arr = np.ascontiguousarray(value)
    data = arr.view(np.uint8) if arr.dtype == np.bool_ else arr
    buf = cl.Buffer(execution.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=data if data.nbytes else np.zeros(1, np.uint8))
    return PoolTensor(execution.queue, buf, 0, arr.shape, arr.dtype, own=True)


def _run_while(execution, k: int, cond_index: int, body_index: int, loop: list, m: int):
    """As hal/operations/control_flow.py execute_while, with the subgraphs on the device."""
    ex = execution.executor
    mk = len(execution.prepared.model.referenced[body_index].output_indexes)
    timeout = ex.loop_timeout_ns if ex.loop_timeout_ns is not None else LOOP_TIMEOUT_DEFAULT_NS
    deadline = time.monotonic_ns() + timeout
    # host values (model inputs, constants) uploaded once, not by every iteration's plans
    loop = [_to_device(execution, v) for v in loop]
    carried = Carried(execution.context)
    iteration = 0
    while True:
        (cond,) = run_subgraph(execution, cond_index, loop, detach=False)
        if not _condition(cond, f"WHILE (operation {k}): the condition output"):
            break
        if time.monotonic_ns() > deadline:
            raise MissedDeadline(f"WHILE (operation {k}) ran past its loop timeout of "
                                 f"{timeout} ns after {iteration} iterations",
                                 ErrorStatus.MISSED_DEADLINE_TRANSIENT)
        carried.hold(loop)
        outs = run_subgraph(execution, body_index, loop, buffers=carried)
        loop = list(outs[:mk]) + loop[mk:]
        iteration += 1
    return loop[:m]
