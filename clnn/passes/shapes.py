"""Pass 2, shapes: the shape of every operand of a CL partition for concrete input shapes
(the HAL ``prepare()`` functions; an operation with data-dependent output shapes at its
largest, ``max_shapes``), with each operation's context (its inputs' values and shapes) for
the passes after it.

    infer_shapes(planner, part, in_shapes, host_values) -> Shapes | None
    static_shapes(planner) -> {operand: shape} | None   (every operand, from the model alone)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clnn.kernels import kernel_for
from clnn.passes.partition import CONTROL_FLOW
from hal.errors import GeneralFailure
from hal.operations import lookup
from hal.operations.context import shapes_compatible
from hal.types import OperandLifeTime

LT = OperandLifeTime


@dataclass
class Shapes:
    """What the shapes pass produced for one partition."""

    #: operand -> shape (the partition's inputs and every operand its operations write)
    shapes: dict
    #: one clnn/hal OperationContext per operation of the partition, in order, with the
    #: output shapes set
    contexts: list = field(default_factory=list)


def _out_shapes(planner, k, ctx, max_shapes):
    """The output shapes of operation ``k``; None: the reference runs the partition."""
    operation = planner.sg.operations[k]
    try:
        return (max_shapes or lookup(operation.type).prepare)(ctx)
    except LookupError:  # a parameter computed inside the partition
        return None
    except Exception:
        # a prepare() that does not raise LookupError for a parameter computed inside the
        # partition (RANK feeding an axis): the reference runs it with the value
        host = kernel_for(operation.type).host_input_indexes(len(ctx.inputs))
        if any(ctx.inputs[j].value is None and not ctx.inputs[j].omitted for j in host):
            return None
        raise


def infer_shapes(planner, part, in_shapes: dict, host_values: dict,
                 omitted=frozenset()) -> Shapes | None:
    """The shapes of partition ``part`` (``planner``: its clnn.plan.Planner, for the
    constants and the operation contexts) from ``in_shapes`` (its inputs'), ``host_values``
    (parameters read on the host) and ``omitted`` (model inputs the request leaves out);
    None where only the values tell a shape (the reference runs the partition)."""
    sg = planner.sg
    shapes = dict(in_shapes)
    contexts = []
    dynamic: set[int] = set()  # outputs whose shapes the kernels tell (max_shapes)
    for k in part.ops:
        if any(i in dynamic for i in sg.operations[k].inputs):
            return None  # shapes known only after a run: the reference runs it
        operation = sg.operations[k]
        ctx = planner.context(k, shapes, host_values)
        max_shapes = kernel_for(operation.type).max_shapes
        if max_shapes is not None:  # data-dependent output shapes: planned at their largest
            dynamic.update(operation.outputs)
        for info in ctx.inputs:  # model inputs the request omits (Planner.plan_for)
            if info.index in omitted:
                info.lifetime = LT.NO_VALUE
        out_shapes = _out_shapes(planner, k, ctx, max_shapes)
        if out_shapes is None:  # shapes that only the values tell: run on the reference
            return None
        for n, (o, s) in enumerate(zip(operation.outputs, out_shapes)):
            s = tuple(int(d) for d in s)
            if max_shapes is None and not shapes_compatible(sg.operands[o].dimensions, s):
                raise GeneralFailure(
                    f"{operation.type.name} (operation {k}): output {n} has shape "
                    f"{list(s)}, incompatible with the declared "
                    f"{list(sg.operands[o].dimensions)}")
            shapes[o] = s
            ctx.outputs[n].shape = s
        contexts.append(ctx)
    return Shapes(shapes, contexts)


def static_shapes(planner) -> dict[int, tuple] | None:
    """Shapes of every operand of the planner's subgraph from the model's dimensions, or None
    if some are unknown (planned at the executions)."""
    sg = planner.sg
    shapes = {}
    for i in sg.input_indexes:
        op = sg.operands[i]
        if not op.is_fully_specified():
            return None
        shapes[i] = tuple(op.dimensions)
    for k, operation in enumerate(sg.operations):
        reg = lookup(operation.type)
        if operation.type.name in CONTROL_FLOW:  # no prepare(): the declared shapes,
            outs = [sg.operands[o] for o in operation.outputs]  # checked against the
            if not all(o.is_fully_specified() for o in outs):  # subgraphs' outputs
                return None
            shapes.update((o, tuple(d.dimensions)) for o, d in zip(operation.outputs, outs))
            continue
        if reg.prepare is None:
            return None
        try:
            ctx = planner.context(k, shapes)
            out_shapes = reg.prepare(ctx)
        except Exception:
            return None
        if out_shapes is None:  # a parameter the execution gives (a model input)
            return None
        for o, s in zip(operation.outputs, out_shapes):
            shapes[o] = tuple(int(d) for d in s)
    return shapes
