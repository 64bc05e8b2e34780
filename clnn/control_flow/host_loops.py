"""Host-driven WHILE loops on a CPU device: a loop whose condition the host computes (its scalar
operations, clnn.control_flow.scalars) never waits for the device. Its commands are held
back behind a gate and enqueued in batches, and a body run on the buffers of its last run
enqueues its launches again as they were."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clnn.control_flow.subgraphs import (
    REGION,
    Carried,
    condition,
    handed,
    scalar_part,
    subgraph_run,
    take,
)
from clnn.memory import PoolTensor

#: iterations of a loop whose commands are enqueued together (:class:`Gate`)
GATE_ITERATIONS = 16


def host_loop(execution, indexes: tuple, loop: list, counts: tuple, checks: tuple,
               final: dict) -> list:
    """The iterations of a host-driven loop (:func:`host_driven`) whose outputs go to the
    request's bytes (``final``: run._while_outputs), GATE_ITERATIONS at a time: first the
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
    going = condition(_host_part(execution, cond, loop)[cond_out], what)
    iteration = 0
    ahead = list(loop)  # the next iteration's values (the device's: stale, never read here)
    while going:
        batch = []
        while going and len(batch) < GATE_ITERATIONS:
            check(iteration + len(batch))
            values = _host_part(execution, body, ahead)
            batch.append(values)
            ahead = [values.get(o, v) for o, v in zip(carried_outs, ahead)] + ahead[mk:]
            going = condition(_host_part(execution, cond, ahead)[cond_out], what)
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
    pools (subgraphs.run_subgraph REGION). ``final``: the loop's last body: the outputs that go
    to the request's bytes (run._while_outputs). A run on the device buffers of its
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
            inputs[j] = v.detached(execution.context, take(carried, ("in", j), v.nbytes))
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
    outs = [values[o] if o in given else handed(execution, run, values[o], REGION, carried, j)
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
        from clnn.launch import launches

        check_deadline = execution.executor.check_deadline
        runner, queue = execution.prepared.runner, execution.queue
        for _, plan, steps, _ in self.parts:
            check_deadline()
            runner.promote(plan, execution)
            for step in steps:
                launches.enqueue_launch(queue, step)


def _steps_of(plan) -> list:
    """What an execution enqueues of ``plan``: its chained steps, else its launches."""
    return plan.chained if plan.chained is not None else plan.launches


class Gate:
    """The commands of a loop that never waits for the device (:func:`host_driven`), held
    back behind a marker waiting for a user event until :data:`GATE_ITERATIONS` iterations
    are enqueued (:meth:`hold` releases the previous gate and opens the next), and released
    at the loop's end or failure: on a CPU device each launch enqueued while the workers are
    idle wakes them (a futex wake-up across cores, and on a busy host a thread preempted),
    while launches enqueued together run back to back (the capabilities' WHILE: 0.78 to
    0.64 ms in one process). :func:`host_loop` holds each batch's device partitions, which
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


def host_driven(execution, indexes: tuple, loop: list, mk: int) -> bool:
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
    """The loop values that the scalar operations (scalars.host_scalar_ops) of a WHILE's
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
            if scalar_part(run, part):
                host.update(j for j, i in enumerate(sg.input_indexes)
                            if any(i in run.scalars[k].inputs for k in part.ops))
            elif not part.on_cl or part.control or part.host_inputs or \
                    any(p is None or p.readbacks for p in part.plans.values()) or run is cond:
                return None
    written = {o for k in body.scalars for o in body.scalars[k].outputs}
    outputs = body.planner.sg.output_indexes
    return host if all(j >= mk or outputs[j] in written for j in host) else None
