"""VTS-style model mutations of operations, graph inputs/outputs, pools, subgraph references and
prepare arguments (same contract as clnn/suites/mutations_operands.py)."""

from __future__ import annotations

import copy

from clnn.suites.mutations_operands import (
    INVALID_OPERATION_TYPES,
    LT,
    Mutant,
    _add_operand,
    _pick_operand,
    _pick_subgraph,
    _subgraphs,
)
from hal.types import (
    DataLocation,
    ExecutionPreference,
    HostMemory,
    OperandType,
    Operation,
    OperationType,
    Priority,
)

OT = OperandType


def _pick_operation(mu: Mutant, rng, where=lambda op: True):
    name, sg = _pick_subgraph(mu.model, rng, need_ops=True)
    idx = [k for k, op in enumerate(sg.operations) if where(op)]
    if not idx:
        return name, sg, None
    return name, sg, rng.choice(idx)


def _op_name(op: Operation) -> str:
    return getattr(op.type, "name", str(op.type))


# ------------------------------------------------------------------------------ operations

def operation_type_invalid(mu: Mutant, rng):
    name, sg, k = _pick_operation(mu, rng)
    old = _op_name(sg.operations[k])
    sg.operations[k].type = rng.choice(INVALID_OPERATION_TYPES)
    return f"{name} operation {k}: type {old} -> {sg.operations[k].type}"


def operation_type_valid(mu: Mutant, rng):
    name, sg, k = _pick_operation(mu, rng)
    old = sg.operations[k].type
    new = rng.choice([t for t in OperationType if t != old])
    sg.operations[k].type = new
    return f"{name} operation {k}: type {_op_name(Operation(old, [], []))} -> {new.name}"


def operation_operand_index(mu: Mutant, rng):
    name, sg, k = _pick_operation(mu, rng)
    op = sg.operations[k]
    side = "inputs" if (op.inputs and rng.random() < 0.6) or not op.outputs else "outputs"
    idxs = getattr(op, side)
    if not idxs:
        return None
    j = rng.randrange(len(idxs))
    bad = rng.choice([len(sg.operands), len(sg.operands) + 7, -1, 2**32])
    idxs[j] = bad
    return f"{name} operation {k} ({_op_name(op)}): {side[:-1]} {j} -> operand {bad}"


def operation_io_removed(mu: Mutant, rng):
    """VTS removeOperationInputTest / removeOperationOutputTest."""
    name, sg, k = _pick_operation(mu, rng)
    op = sg.operations[k]
    side = "inputs" if rng.random() < 0.7 else "outputs"
    idxs = getattr(op, side)
    if not idxs:
        return None
    j = rng.randrange(len(idxs))
    del idxs[j]
    return f"{name} operation {k} ({_op_name(op)}): {side[:-1]} {j} removed"


def operation_io_added(mu: Mutant, rng):
    """VTS addOperationInputTest / addOperationOutputTest: a new graph input or output."""
    sg = mu.model.main
    if not sg.operations:
        return None
    k = rng.randrange(len(sg.operations))
    op = sg.operations[k]
    first = sg.operands[op.inputs[0]] if op.inputs else sg.operands[op.outputs[0]]
    if rng.random() < 0.5:
        i = _add_operand(sg, first, LT.SUBGRAPH_INPUT)
        op.inputs.append(i)
        sg.input_indexes.append(i)
        return f"main operation {k} ({_op_name(op)}): a new graph input {i} as an extra input"
    i = _add_operand(sg, first, LT.SUBGRAPH_OUTPUT)
    op.outputs.append(i)
    sg.output_indexes.append(i)
    return f"main operation {k} ({_op_name(op)}): a new graph output {i} as an extra output"


def operation_removed(mu: Mutant, rng):
    name, sg, k = _pick_operation(mu, rng)
    op = sg.operations.pop(k)
    return f"{name} operation {k} ({_op_name(op)}) removed"


def operation_order(mu: Mutant, rng):
    """VTS mutateExecutionOrderTest: an operation moved after one that reads its output (or
    swapped with an independent one: still valid)."""
    name, sg = _pick_subgraph(mu.model, rng, need_ops=True)
    if len(sg.operations) < 2:
        return None
    a = rng.randrange(len(sg.operations) - 1)
    b = rng.randrange(a + 1, len(sg.operations))
    sg.operations[a], sg.operations[b] = sg.operations[b], sg.operations[a]
    return f"{name} operations {a} and {b} swapped"


def cycle(mu: Mutant, rng):
    """An operation reads its own output, or the output of a later operation."""
    name, sg, k = _pick_operation(mu, rng, lambda op: op.inputs and op.outputs)
    if k is None:
        return None
    op = sg.operations[k]
    later = [o for later_op in sg.operations[k:] for o in later_op.outputs]
    src = rng.choice(later)
    j = rng.randrange(len(op.inputs))
    op.inputs[j] = src
    return f"{name} operation {k} ({_op_name(op)}): input {j} -> operand {src} (a cycle)"


def duplicate_writer(mu: Mutant, rng):
    """VTS mutateOperandAddWriterTest: a second operation writes an operand already written."""
    name, sg, k = _pick_operation(mu, rng, lambda op: op.outputs)
    if k is None:
        return None
    op = sg.operations[k]
    if rng.random() < 0.5 or len(sg.operations) < 2:
        sg.operations.insert(k + 1, copy.deepcopy(op))
        return f"{name} operation {k} ({_op_name(op)}) duplicated: two writers of its outputs"
    other = rng.choice([j for j in range(len(sg.operations)) if j != k])
    o2 = sg.operations[other]
    if not o2.outputs:
        return None
    o2.outputs[0] = op.outputs[0]
    return f"{name} operation {other}: output 0 -> operand {op.outputs[0]}, written by {k}"


def remove_write(mu: Mutant, rng):
    """VTS mutateOperationRemoveWriteTest: an output goes to a new temporary, so the old
    operand is never written."""
    name, sg, k = _pick_operation(mu, rng, lambda op: op.outputs)
    if k is None:
        return None
    op = sg.operations[k]
    j = rng.randrange(len(op.outputs))
    old = op.outputs[j]
    op.outputs[j] = _add_operand(sg, sg.operands[old], LT.TEMPORARY_VARIABLE)
    return f"{name} operation {k} ({_op_name(op)}): output {j} moved off operand {old}"


# ------------------------------------------------------------------------------ graph

def graph_io(mu: Mutant, rng):
    """Graph inputs / outputs removed, added (an operand of another lifetime) or listed twice."""
    name, sg = _pick_subgraph(mu.model, rng)
    side = "input_indexes" if rng.random() < 0.5 else "output_indexes"
    idxs = getattr(sg, side)
    how = rng.choice(["removed", "added", "duplicated", "out of range"])
    if how in ("removed", "duplicated") and not idxs:
        return None
    if how == "removed":
        del idxs[rng.randrange(len(idxs))]
    elif how == "duplicated":
        idxs.append(rng.choice(idxs))
    elif how == "added":
        i = _pick_operand(sg, rng, lambda o: o.lifetime not in (LT.SUBGRAPH_INPUT,
                                                                 LT.SUBGRAPH_OUTPUT))
        if i is None:
            return None
        idxs.append(i)
    else:
        idxs.append(len(sg.operands) + rng.randrange(3))
    return f"{name} {side.split('_')[0]}s: one {how} -> {list(idxs)}"


def pools(mu: Mutant, rng):
    m = mu.model
    how = rng.choice(["operand values truncated", "pool truncated", "pool not a memory",
                      "pool removed"])
    if how == "operand values truncated":
        if not m.operand_values:
            return None
        m.operand_values = m.operand_values[: len(m.operand_values) // 2]
    elif not m.pools:
        return None
    elif how == "pool truncated":
        p = rng.randrange(len(m.pools))
        data = bytes(m.pools[p].view())
        m.pools[p] = HostMemory(data[: len(data) // 2])
    elif how == "pool not a memory":
        m.pools[rng.randrange(len(m.pools))] = b"\0" * 16
    else:
        m.pools.pop()
    return how


def subgraph_reference(mu: Mutant, rng):
    """IF / WHILE subgraph operands: a missing subgraph, or a subgraph that references itself."""
    m = mu.model
    refs = [(name, sg, i) for name, sg in _subgraphs(m) for i, o in enumerate(sg.operands)
            if o.lifetime == LT.SUBGRAPH]
    if not refs:
        return None
    name, sg, i = rng.choice(refs)
    op = sg.operands[i]
    if rng.random() < 0.5 or not m.referenced:
        op.location = DataLocation(0, len(m.referenced) + rng.randrange(3), 0)
        return f"{name} operand {i}: references missing subgraph {op.location.offset}"
    # every SUBGRAPH operand of referenced subgraph r now names r itself
    r = rng.randrange(len(m.referenced))
    refs = [o for o in m.referenced[r].operands if o.lifetime == LT.SUBGRAPH]
    if not refs:
        m.referenced[r].operands.append(copy.deepcopy(op))
        refs = m.referenced[r].operands[-1:]
    for o in refs:
        o.location = DataLocation(0, r, 0)
    return f"referenced {r}: a SUBGRAPH operand names itself (a reference cycle)"


def prepare_arguments(mu: Mutant, rng):
    """VTS mutateExecutionPreferenceTest / mutateExecutionPriorityTest: prepare_model must
    refuse, get_supported_operations (which takes neither) must not."""
    if rng.random() < 0.5:
        mu.preference = rng.choice([ExecutionPreference.LOW_POWER - 1,
                                    ExecutionPreference.SUSTAINED_SPEED + 1])
        return f"preference {mu.preference}"
    mu.priority = rng.choice([Priority.LOW - 1, Priority.HIGH + 1])
    return f"priority {mu.priority}"
