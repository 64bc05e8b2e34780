"""The steps of a partitioned compilation: a sub-model per step, prepared on its device, and
the prepared model that runs the steps in order (:class:`PartitionedPreparedModel`).

A step's model holds the step's operations and the operands they touch: the tensors it reads
from the model's inputs or from earlier steps become its inputs, those that later steps or the
model's outputs need become its outputs; constants keep their values (the model's operand
values, memory pools and referenced subgraphs are shared, so an IF / WHILE placed in a step
brings its subgraphs).

Between two steps a tensor crosses through host memory, except between two steps on OpenCL
devices of one cl.Context (clnn.device.open_cl_devices gives the devices of one platform one
context): there it stays in device memory, a ``clnn.memory.ClBuffer`` (the HAL's device
memory, an IBuffer) that the producing step's execution writes as its output and the
consuming steps' executions read as their input, buffer to buffer on the device. A tensor that
is also a model output, or read by a step on another device (the reference device), crosses
through the host.
"""

from __future__ import annotations

import dataclasses
import threading
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
from hal.memory_domain import DeviceBuffer
from hal.types import (
    NO_TIMING,
    UINT64_MAX,
    DataLocation,
    MeasureTiming,
    Model,
    OperandLifeTime,
    RequestArgument,
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
        #: operand -> the device memory (ClBuffer) it crosses in between steps
        self.resident = device_resident(model, steps)
        #: per execution: (operand, "device" or "host") of every tensor between two steps
        self.crossings: list[tuple[int, str]] = []
        self._lock = threading.Lock()  # the device memories are shared by the executions

    def execute_synchronously(self, request, measure=MeasureTiming.NO, deadline=None,
                              loop_timeout_duration=None) -> ExecutionResult:
        t0 = time.perf_counter_ns()
        try:
            begin_execution(self, request, measure, deadline, loop_timeout_duration)
            with self._lock:
                return self._execute(request, measure, deadline, loop_timeout_duration, t0)
        except Exception as e:  # never crash the caller
            return failed_execution(e)

    def _execute(self, request, measure, deadline, loop_timeout_duration, t0):
        try:
            values = dict(zip(self.model.main.input_indexes, read_inputs(self.model, request)))
            on_device = 0
            self.crossings = []
            for s, step in enumerate(self.steps):
                arrays = [values[i] for i in step.inputs]
                if any(_empty(a) for a in arrays):
                    return self._run_whole(s, request, measure, deadline,
                                           loop_timeout_duration)
                self.crossings.extend((i, "device" if i in self.resident else "host")
                                      for i in step.inputs if i not in
                                      self.model.main.input_indexes)
                r, outs = _run_step(step, arrays, measure, deadline, loop_timeout_duration,
                                    self.resident)
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


def _empty(a) -> bool:
    """A zero-sized tensor (a host array, or a device memory holding one)."""
    if a is None:
        return False
    if isinstance(a, DeviceBuffer):
        dims = a.value_dimensions or ()
        return bool(dims) and 0 in dims
    return bool(a.ndim) and a.size == 0


def device_resident(model: Model, steps: list[StepModel]) -> dict:
    """operand -> a ClBuffer for each tensor between two steps that stays in device memory:
    its producing step and every step reading it run on OpenCL devices of one context (their
    prepared models are clnn's), and it is not a model output. The buffer carries the roles of
    the producer's output and the consumers' inputs (hal.memory_domain)."""
    try:
        from clnn.device import shares_context
        from clnn.memory import ClBuffer
        from clnn.prepared_model import ClPreparedModel
    except ImportError:  # no pyopencl: every tensor crosses through the host
        return {}
    out = {}
    model_outputs = set(model.main.output_indexes)
    for s, step in enumerate(steps):
        if not isinstance(step.prepared, ClPreparedModel):
            continue
        device = step.prepared.device
        for k, i in enumerate(step.outputs):
            readers = [(t, later.inputs.index(i)) for t, later in enumerate(steps)
                       if t > s and i in later.inputs]
            if i in model_outputs or not readers or not all(
                    isinstance(steps[t].prepared, ClPreparedModel)
                    and shares_context(device, steps[t].prepared.device) for t, _ in readers):
                continue
            roles = {(id(step.prepared), "output", k)}
            roles.update((id(steps[t].prepared), "input", j) for t, j in readers)
            operand = model.main.operands[i]
            out[i] = ClBuffer(device, operand, tuple(operand.dimensions), roles)
    return out


def _step_request(step: StepModel, arrays, resident: dict, sizes=None):
    """A request for a step: host arrays in pools 0 / 1 (hal.builder.make_request), each
    tensor held in a device memory given as that memory (a pool of its own, offset and length
    0, as the HAL asks)."""
    request = make_request(step.model, [None if isinstance(a, DeviceBuffer) else a
                                        for a in arrays], sizes)
    for k, a in enumerate(arrays):
        if isinstance(a, DeviceBuffer):
            request.inputs[k] = RequestArgument(False, DataLocation(len(request.pools)),
                                                tuple(a.value_dimensions or ()))
            request.pools.append(a)
    for k, i in enumerate(step.outputs):
        if i in resident:
            request.outputs[k] = RequestArgument(False, DataLocation(len(request.pools)))
            request.pools.append(resident[i])
    return request


def _run_step(step: StepModel, arrays, measure, deadline, loop_timeout, resident=None):
    """(result, outputs) of one step: arrays, or the device memory of an output that stays
    on the device; outputs of unknown size get a second try sized by the shapes the first
    returned."""
    resident = resident or {}
    request = _step_request(step, arrays, resident)
    r = step.prepared.execute_synchronously(request, measure, deadline, loop_timeout)
    if r.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE and r.output_shapes:
        sizes = [max(1, _nbytes(step.model, k, s.dimensions))
                 for k, s in enumerate(r.output_shapes)]
        request = _step_request(step, arrays, resident, sizes)
        r = step.prepared.execute_synchronously(request, measure, deadline, loop_timeout)
    if r.status != ErrorStatus.NONE:
        return r, []
    host = read_outputs(_host_outputs(step.model, step.outputs, resident), request,
                        [sh for sh, i in zip(r.output_shapes, step.outputs)
                         if i not in resident]) if resident else \
        read_outputs(step.model, request, r.output_shapes)
    it = iter(host)
    return r, [resident[i] if i in resident else next(it) for i in step.outputs]


def _host_outputs(model: Model, outputs: list[int], resident: dict) -> Model:
    """``model`` seen with only its outputs that cross through the host (for read_outputs)."""
    sg = model.main
    keep = [o for o, i in zip(sg.output_indexes, outputs) if i not in resident]
    return dataclasses.replace(model, main=dataclasses.replace(sg, output_indexes=keep))


def _nbytes(model: Model, k: int, dims) -> int:
    from hal.types import element_size

    op = model.main.operands[model.main.output_indexes[k]]
    n = element_size(op.type)
    for d in dims:
        n *= d
    return n
