"""IF and WHILE operations run in an execution: the branch an IF takes, a WHILE's iterations
(each condition read before its body, a host-driven loop, or bodies run ahead of their
conditions)."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import replace

import numpy as np

from clnn.control_flow.host_loops import GATE_ITERATIONS, Gate, host_driven, host_loop
from clnn.control_flow.subgraphs import (
    COPY,
    IN_POOL,
    REGION,
    Carried,
    body_runs,
    condition,
    referenced,
    reruns,
    run_subgraph,
    subgraph_run,
)
from clnn.launch import direct_inputs_on
from clnn.memory import PoolTensor
from hal.errors import ErrorStatus, MissedDeadline
from hal.interfaces import LOOP_TIMEOUT_DEFAULT_NS


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
        branch = first if condition(ins[0], f"IF (operation {k}): the condition") else second
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
    them: :func:`host_loop`)."""
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
    host = host_driven(execution, (cond_index, body_index), loop, mk)
    checks = (check, f"WHILE (operation {k}): the condition output")
    if host and final and _peeks(pm, cond_index):
        return host_loop(execution, (cond_index, body_index), loop, (m, mk), checks, final)
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
        if not condition(cond, what):
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
    """Whether the condition of a host-driven loop (:func:`host_driven`) is computed by its
    scalar operations (none of its outputs is an input passed through): then it may be
    computed from a body's host outputs before the body's device partitions run."""
    run = subgraph_run(pm, cond_index)
    return not any(o in run.given for o in run.planner.sg.output_indexes)


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
        if not condition(read(), what):
            return loop
        check(done)
        loop = list(outs[:mk]) + loop[mk:]
        done += 1


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
