"""The scalar operations of IF / WHILE subgraphs run on the host (DeviceOptions.host_scalars).

A WHILE's counter and its test (``i + 1``, ``i < n``: one-element tensors) cost a launch each
on the device, and a condition computed there is read back, a round trip to the device per
iteration. NumPy computes a few elements in less time than a launch takes on any device, and a
condition computed on the host needs no read: a loop whose counter and test run there makes
one launch per iteration for its tensors and waits for nothing. Which operations
(:func:`host_scalar_ops`): those whose every tensor has a known shape of at most
:data:`HOST_SCALAR_BYTES`, reading only constants, the subgraph's inputs and other such
operations' outputs (never a tensor the device computed in the same run). They run with the
reference implementation (hal/operations), their operation context made once
(:class:`ScalarOp`), not per run: a loop runs them every iteration.
"""

from __future__ import annotations

import numpy as np

from clnn.memory import on_device
from clnn.plan import CONTROL_FLOW
from hal.errors import GeneralFailure, HalError, InvalidArgument
from hal.operations import lookup
from hal.operations.context import operation_context
from hal.types import OperandLifeTime

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
