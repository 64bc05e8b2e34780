"""Runs a subgraph operation by operation with the registered NumPy implementations."""

from __future__ import annotations

import time

import numpy as np

from hal.errors import ErrorStatus, GeneralFailure, HalError, InvalidArgument, MissedDeadline
from hal.operations import lookup
from hal.operations.context import operation_context, shapes_compatible
from hal.types import Model, OperandLifeTime, Subgraph
from hal.values import static_view


class Executor:
    """Executes the subgraphs of one model. Constants are read once per Executor, or once per
    prepared model where its executors pass the same ``constants`` (subgraph -> values)."""

    def __init__(self, model: Model, constants: dict | None = None):
        self.model = model
        self._constants: dict[int, dict[int, np.ndarray]] = {} if constants is None \
            else constants
        self.deadline_ns: int | None = None
        self.loop_timeout_ns: int | None = None
        self._rng = None

    @property
    def rng(self):
        """The generator RANDOM_MULTINOMIAL draws from (seed 0), made when first asked for: an
        executor made for a fallback that never samples does not import numpy.random (~5 ms
        of a prepare's CPU)."""
        if self._rng is None:
            self._rng = np.random.default_rng(0)
        return self._rng

    @rng.setter
    def rng(self, value) -> None:
        self._rng = value

    @property
    def shared_constants(self) -> dict:
        """The constants read so far, to share with another Executor of the same model."""
        return self._constants

    def subgraph(self, index: int | None) -> Subgraph:
        return self.model.main if index is None else self.model.referenced[index]

    def constants(self, index: int | None) -> dict[int, np.ndarray]:
        key = -1 if index is None else index
        if key not in self._constants:
            sg = self.subgraph(index)
            vals = {}
            for i, op in enumerate(sg.operands):
                v = static_view(self.model, op, i, kept=True)
                if v is not None:
                    vals[i] = v
            self._constants[key] = vals
        return self._constants[key]

    def check_deadline(self):
        if self.deadline_ns is not None and time.monotonic_ns() > self.deadline_ns:
            raise MissedDeadline("the execution deadline passed during execution",
                                 ErrorStatus.MISSED_DEADLINE_TRANSIENT)

    def run_subgraph(self, index: int | None, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
        """Run subgraph ``index`` (None = main) on input arrays (None = omitted input)."""
        sg = self.subgraph(index)
        values = self.run_keeping_all(index, inputs)
        return [values[i] for i in sg.output_indexes]

    def run_keeping_all(self, index: int | None, inputs: list[np.ndarray | None]) -> dict:
        """Run subgraph ``index`` and return the value of every operand (constants, inputs,
        every intermediate): for per-operation comparisons with another device."""
        sg = self.subgraph(index)
        values: dict[int, np.ndarray | None] = dict(self.constants(index))
        omitted = set()
        if len(inputs) != len(sg.input_indexes):
            raise GeneralFailure(f"subgraph {index} takes {len(sg.input_indexes)} inputs, "
                                 f"got {len(inputs)}")
        for opnd, arr in zip(sg.input_indexes, inputs):
            if arr is None:
                omitted.add(opnd)
            values[opnd] = arr
        for op_index, operation in enumerate(sg.operations):
            self.check_deadline()
            self.run_operation(sg, op_index, operation, values, omitted)
        return values

    def run_operation(self, sg: Subgraph, op_index, operation, values, omitted):
        reg = lookup(operation.type)
        if reg is None:
            raise GeneralFailure(f"operation {op_index} ({operation.type.name}) has no "
                                 "reference implementation")
        shapes = {i: values[i].shape for i in operation.inputs if values.get(i) is not None}
        ctx = operation_context(self.model, sg, op_index, values, shapes, executor=self)
        for i, info in zip(operation.inputs, ctx.inputs):
            if i in omitted:
                info.lifetime = OperandLifeTime.NO_VALUE
            elif info.lifetime != OperandLifeTime.NO_VALUE and info.value is None:
                raise GeneralFailure(f"{operation.type.name} (operation {op_index}): input "
                                     f"operand {i} has not been computed")
        outs = ctx.outputs
        try:
            results = reg.run(ctx)
        except InvalidArgument as e:  # an operation rejecting its run-time inputs: OP_FAILED
            raise GeneralFailure(e.reason) from e
        except HalError:
            raise
        except (ValueError, IndexError, ZeroDivisionError, FloatingPointError,
                OverflowError, TypeError, KeyError, MemoryError) as e:
            raise GeneralFailure(f"{operation.type.name} (operation {op_index}) failed: "
                                 f"{type(e).__name__}: {e}") from e
        if len(results) != len(operation.outputs):
            raise GeneralFailure(f"{operation.type.name} produced {len(results)} outputs, "
                                 f"expected {len(operation.outputs)}")
        for out_index, (i, arr) in enumerate(zip(operation.outputs, results)):
            info = outs[out_index]
            arr = np.asarray(arr)
            if arr.dtype != info.dtype:
                arr = arr.astype(info.dtype)
            declared = sg.operands[i].dimensions
            if not shapes_compatible(declared, arr.shape):
                raise GeneralFailure(
                    f"{operation.type.name} (operation {op_index}): output {out_index} has "
                    f"shape {list(arr.shape)}, incompatible with the declared "
                    f"{list(declared)}")
            values[i] = arr
