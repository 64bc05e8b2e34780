"""The steps of a partitioned compilation: a sub-model per step, prepared on its device, and
the prepared model that runs the steps in order (:class:`PartitionedPreparedModel`).

A step's model holds the step's operations and the operands they touch: the tensors it reads
from the model's inputs or from earlier steps become its inputs, those that later steps or the
model's outputs need become its outputs; constants keep their values (the model's operand
values, memory pools and referenced subgraphs are shared, so an IF / WHILE placed in a step
brings its subgraphs). Between two steps a tensor crosses through host memory.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from hal.builder import make_request, read_outputs
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
from hal.types import (
    NO_TIMING,
    UINT64_MAX,
    DataLocation,
    MeasureTiming,
    Model,
    OperandLifeTime,
    Subgraph,
    Timing,
)

LT = OperandLifeTime
_VALUED = (LT.CONSTANT_COPY, LT.CONSTANT_REFERENCE, LT.NO_VALUE, LT.SUBGRAPH)


@dataclass
class StepModel:
    device: int
    model: Model
    inputs: list[int]      # operand indexes of the whole model's main subgraph
    outputs: list[int]
    prepared: object = None


def step_models(model: Model, steps) -> list[StepModel]:
    """One StepModel per plan step (a clnn.nnapi.partition.Step)."""
    sg = model.main
    needed_after: list[set[int]] = []
    later = set(sg.output_indexes)
    for step in reversed(steps):
        needed_after.append(set(later))
        for k in step.operations:
            later.update(sg.operations[k].inputs)
    needed_after.reverse()
    return [_step_model(model, step, needed_after[s]) for s, step in enumerate(steps)]


def _step_model(model: Model, step, needed: set[int]) -> StepModel:
    sg = model.main
    produced, inputs, outputs, order = set(), [], [], []
    for k in step.operations:
        operation = sg.operations[k]
        for i in operation.inputs:
            valued = sg.operands[i].lifetime in _VALUED
            if not valued and i not in produced and i not in inputs:
                inputs.append(i)
            if i not in order:
                order.append(i)
        for i in operation.outputs:
            produced.add(i)
            if i not in order:
                order.append(i)
            if i in needed:
                outputs.append(i)
    remap = {i: n for n, i in enumerate(order)}
    operands = []
    for i in order:
        op = sg.operands[i]
        if i in inputs:
            op = dataclasses.replace(op, lifetime=LT.SUBGRAPH_INPUT, location=DataLocation())
        elif i in outputs:
            op = dataclasses.replace(op, lifetime=LT.SUBGRAPH_OUTPUT, location=DataLocation())
        elif op.lifetime in (LT.SUBGRAPH_INPUT, LT.SUBGRAPH_OUTPUT):
            op = dataclasses.replace(op, lifetime=LT.TEMPORARY_VARIABLE, location=DataLocation())
        else:
            op = dataclasses.replace(op)
        op.number_of_consumers = 0
        operands.append(op)
    operations = []
    for k in step.operations:
        o = sg.operations[k]
        operations.append(dataclasses.replace(o, inputs=[remap[i] for i in o.inputs],
                                              outputs=[remap[i] for i in o.outputs]))
        for i in o.inputs:
            operands[remap[i]].number_of_consumers += 1
    main = Subgraph(operands, operations, [remap[i] for i in inputs],
                    [remap[i] for i in outputs])
    sub = Model(main, model.referenced, model.operand_values, model.pools,
                model.relax_computation_float32_to_float16, model.extension_name_to_prefix)
    return StepModel(step.device, sub, inputs, outputs)


class PartitionedPreparedModel(DriverPreparedModel):
    """The steps of a compilation over several devices, run in order; a HAL PreparedModel,
    so that asynchronous executions and bursts run on it as on any driver's."""

    def __init__(self, model: Model, steps: list[StepModel], fallback=None):
        """``fallback``: a callable preparing the whole model on one device that supports
        every operation, for the executions the steps cannot run (a zero-sized tensor
        between two steps: a request cannot give a step's input zero dimensions, 0 meaning
        unknown there); Android's runtime falls back to its CPU device so."""
        self.model = model
        self.steps = steps
        self._fallback = fallback
        self._whole = None

    def execute_synchronously(self, request, measure=MeasureTiming.NO, deadline=None,
                              loop_timeout_duration=None) -> ExecutionResult:
        t0 = time.perf_counter_ns()
        try:
            begin_execution(self, request, measure, deadline, loop_timeout_duration)
            values = dict(zip(self.model.main.input_indexes, read_inputs(self.model, request)))
            on_device = 0
            for s, step in enumerate(self.steps):
                arrays = [values[i] for i in step.inputs]
                if any(a is not None and a.ndim and a.size == 0 for a in arrays):
                    return self._run_whole(s, request, measure, deadline,
                                           loop_timeout_duration)
                r, outs = _run_step(step, arrays, measure, deadline, loop_timeout_duration)
                if r.status != ErrorStatus.NONE:
                    return ExecutionResult(r.status, [], NO_TIMING,
                                           f"step {s} of the partitioned model: {r.message}")
                values.update(zip(step.outputs, outs))
                if on_device != UINT64_MAX and r.timing.time_on_device != UINT64_MAX:
                    on_device += r.timing.time_on_device
                else:
                    on_device = UINT64_MAX
            outputs = [values[i] for i in self.model.main.output_indexes]
            status, shapes = write_outputs(self.model, request, outputs)
        except Exception as e:  # never crash the caller
            return failed_execution(e)
        timing = NO_TIMING
        if measure == MeasureTiming.YES:
            timing = Timing(on_device, (time.perf_counter_ns() - t0) // 1000)
        return finished_execution(status, shapes, timing)


    def _run_whole(self, s, request, measure, deadline, loop_timeout):
        if self._fallback is None:
            return ExecutionResult(ErrorStatus.GENERAL_FAILURE, [], NO_TIMING,
                                   f"step {s} of the partitioned model takes a zero-sized "
                                   "tensor, and no device of the compilation runs the whole "
                                   "model")
        if self._whole is None:
            self._whole = self._fallback()
        return self._whole.execute_synchronously(request, measure, deadline, loop_timeout)


def _run_step(step: StepModel, arrays, measure, deadline, loop_timeout):
    """(result, output arrays) of one step; outputs of unknown size get a second try sized by
    the shapes the first returned."""
    request = make_request(step.model, arrays)
    r = step.prepared.execute_synchronously(request, measure, deadline, loop_timeout)
    if r.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE and r.output_shapes:
        sizes = [max(1, _nbytes(step.model, k, s.dimensions))
                 for k, s in enumerate(r.output_shapes)]
        request = make_request(step.model, arrays, sizes)
        r = step.prepared.execute_synchronously(request, measure, deadline, loop_timeout)
    if r.status != ErrorStatus.NONE:
        return r, []
    return r, read_outputs(step.model, request, r.output_shapes)


def _nbytes(model: Model, k: int, dims) -> int:
    from hal.types import element_size

    op = model.main.operands[model.main.output_indexes[k]]
    n = element_size(op.type)
    for d in dims:
        n *= d
    return n
