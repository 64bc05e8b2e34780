"""IF and WHILE: control flow over referenced subgraphs (HAL 1.3).

| op    | inputs                                                  | outputs           |
|-------|---------------------------------------------------------|-------------------|
| IF    | 0: TENSOR_BOOL8 [1] condition; 1: SUBGRAPH then-branch; | 0..m-1: outputs   |
|       | 2: SUBGRAPH else-branch; 3..n+2: branch inputs          | of the branch     |
| WHILE | 0: SUBGRAPH condition; 1: SUBGRAPH body;                | 0..m-1: final     |
|       | 2..: m input-output, k state-only, n input-only values  | input-output vals |

Both branches of IF take the n branch inputs and produce the m outputs. The WHILE condition
takes m + k + n inputs and produces one TENSOR_BOOL8 [1]; the body takes the same inputs and
produces m + k outputs (m = the operation's output count, k = body outputs - m,
n = body inputs - m - k). Referenced subgraph operands must agree with the operation's operands
in type, rank and dimensions where both are specified, scale and zero point.

A WHILE loop that runs past the execution's loop timeout fails with MISSED_DEADLINE_TRANSIENT.
"""

from __future__ import annotations

import time

import numpy as np

from hal.errors import ErrorStatus, GeneralFailure, MissedDeadline
from hal.interfaces import LOOP_TIMEOUT_DEFAULT_NS
from hal.operations.context import OperandInfo, OperationContext
from hal.operations.registry import register
from hal.types import OperandType, is_tensor_type

OT = OperandType


def _describe(t) -> str:
    if hasattr(t, "name"):  # an OperandType or an extension's type
        return t.name
    try:
        return OT(t).name
    except ValueError:
        return str(t)


def _shapes_agree(a: tuple[int, ...], b: tuple[int, ...], tensor: bool) -> bool:
    if tensor and (len(a) == 0 or len(b) == 0):
        return True  # unknown rank
    if len(a) != len(b):
        return False
    return all(x == 0 or y == 0 or x == y for x, y in zip(a, b))


def _check_agree(ctx: OperationContext, what: str, info: OperandInfo, operand):
    """An operation operand (info) against a referenced subgraph operand (operand)."""
    if info.type != operand.type:
        ctx.fail(f"{what} has type {_describe(operand.type)}, the operation operand is "
                 f"{info.type.name}")
    is_tensor = is_tensor_type(info.type)
    if not _shapes_agree(tuple(info.shape), tuple(operand.dimensions), is_tensor):
        ctx.fail(f"{what} has dimensions {list(operand.dimensions)}, incompatible with the "
                 f"operation operand's {list(info.shape)}")
    if info.scale != operand.scale or info.zero_point != operand.zero_point:
        ctx.fail(f"{what} has scale {operand.scale} and zero point {operand.zero_point}, the "
                 f"operation operand has {info.scale} and {info.zero_point}")
    if isinstance(operand.extra_params, (bytes, bytearray)) or info.extension_params:
        if info.extension_params != operand.extra_params:
            ctx.fail(f"{what} has different extension parameters than the operation operand")
        return
    a, b = info.channel_quant, operand.extra_params
    if (a is None) != (b is None) or (a is not None and (
            tuple(a.scales) != tuple(b.scales) or a.channel_dim != b.channel_dim)):
        ctx.fail(f"{what} has different per-channel quantization than the operation operand")


def _subgraph(ctx: OperationContext, index: int, what: str):
    info = ctx.inputs[index]
    ctx.require(info.type == OT.SUBGRAPH,
                f"input {index} ({what}) must be a SUBGRAPH, got {info.type.name}")
    ref = ctx.scalar(index)
    model = ctx.model
    if ref is None or model is None:
        return None
    ctx.require(0 <= ref < len(model.referenced),
                f"input {index} ({what}) references subgraph {ref}, the model has "
                f"{len(model.referenced)}")
    return model.referenced[ref]


def _check_no_subgraph_operands(ctx: OperationContext, first: int):
    for i in range(first, len(ctx.inputs)):
        ctx.require(ctx.inputs[i].type != OT.SUBGRAPH, f"input {i} must not be a SUBGRAPH")
        ctx.require(not ctx.inputs[i].omitted, f"input {i} must not be omitted")
    for i, o in enumerate(ctx.outputs):
        ctx.require(o.type != OT.SUBGRAPH, f"output {i} must not be a SUBGRAPH")


# ----------------------------------------------------------------------------------- IF

def validate_if(ctx: OperationContext):
    ctx.require(len(ctx.inputs) >= 3, f"IF takes at least 3 inputs, got {len(ctx.inputs)}")
    ctx.require(len(ctx.outputs) >= 1, "IF needs at least one output")
    cond = ctx.inputs[0]
    ctx.require(cond.type == OT.TENSOR_BOOL8,
                f"input 0 (condition) must be a TENSOR_BOOL8, got {cond.type.name}")
    ctx.require(all(d in (0, 1) for d in cond.shape),
                f"input 0 (condition) must have one element (shape [1]), got "
                f"{list(cond.shape)}")
    _check_no_subgraph_operands(ctx, 3)
    n = len(ctx.inputs) - 3
    for index, what in ((1, "then branch"), (2, "else branch")):
        sg = _subgraph(ctx, index, what)
        if sg is None:
            continue
        ctx.require(len(sg.input_indexes) == n,
                    f"input {index} ({what}) takes {len(sg.input_indexes)} inputs, the "
                    f"operation passes {n}")
        ctx.require(len(sg.output_indexes) == len(ctx.outputs),
                    f"input {index} ({what}) produces {len(sg.output_indexes)} outputs, the "
                    f"operation has {len(ctx.outputs)}")
        for k, i in enumerate(sg.input_indexes):
            _check_agree(ctx, f"{what} input {k}", ctx.inputs[3 + k], sg.operands[i])
        for k, i in enumerate(sg.output_indexes):
            _check_agree(ctx, f"{what} output {k}", ctx.outputs[k], sg.operands[i])


def execute_if(ctx: OperationContext):
    cond = np.asarray(ctx.input(0)).reshape(-1)
    if cond.size != 1:
        raise GeneralFailure(f"IF (operation {ctx.op_index}): the condition has {cond.size} "
                             "elements, expected 1")
    branch = ctx.scalar(1) if bool(cond[0]) else ctx.scalar(2)
    args = [ctx.input(i) for i in range(3, len(ctx.inputs))]
    return ctx.executor.run_subgraph(int(branch), args)


# ----------------------------------------------------------------------------------- WHILE

def validate_while(ctx: OperationContext):
    ctx.require(len(ctx.inputs) >= 3, f"WHILE takes at least 3 inputs, got {len(ctx.inputs)}")
    m = len(ctx.outputs)
    ctx.require(m >= 1, "WHILE needs at least one output")
    _check_no_subgraph_operands(ctx, 2)
    data = ctx.inputs[2:]
    ctx.require(len(data) >= m, f"WHILE has {m} outputs but only {len(data)} loop inputs")
    cond = _subgraph(ctx, 0, "condition")
    body = _subgraph(ctx, 1, "body")
    if cond is not None:
        ctx.require(len(cond.input_indexes) == len(data),
                    f"input 0 (condition) takes {len(cond.input_indexes)} inputs, the "
                    f"operation passes {len(data)}")
        for k, i in enumerate(cond.input_indexes):
            _check_agree(ctx, f"condition input {k}", data[k], cond.operands[i])
        ctx.require(len(cond.output_indexes) == 1,
                    f"input 0 (condition) must have exactly one output, has "
                    f"{len(cond.output_indexes)}")
        out = cond.operands[cond.output_indexes[0]]
        ctx.require(out.type == OT.TENSOR_BOOL8 and len(out.dimensions) > 0
                    and all(d == 1 for d in out.dimensions),
                    f"the condition output must be a TENSOR_BOOL8 of shape [1], got "
                    f"{_describe(out.type)} {list(out.dimensions)}")
    if body is not None:
        ctx.require(len(body.input_indexes) == len(data),
                    f"input 1 (body) takes {len(body.input_indexes)} inputs, the operation "
                    f"passes {len(data)}")
        n_out = len(body.output_indexes)
        ctx.require(m <= n_out <= len(data),
                    f"input 1 (body) produces {n_out} outputs; it must produce between {m} "
                    f"(the operation's outputs) and {len(data)} (its inputs)")
        for k, i in enumerate(body.input_indexes):
            _check_agree(ctx, f"body input {k}", data[k], body.operands[i])
        for k, i in enumerate(body.output_indexes):
            target = ctx.outputs[k] if k < m else data[k]
            _check_agree(ctx, f"body output {k}", target, body.operands[i])
            # the value feeds the next iteration's input k
            ctx.require(body.operands[i].type == data[k].type,
                        f"body output {k} has type {_describe(body.operands[i].type)}, loop "
                        f"input {k} is {data[k].type.name}")


def execute_while(ctx: OperationContext):
    ex = ctx.executor
    cond_index, body_index = int(ctx.scalar(0)), int(ctx.scalar(1))
    m = len(ctx.outputs)
    body = ex.subgraph(body_index)
    mk = len(body.output_indexes)
    values = [ctx.input(i) for i in range(2, len(ctx.inputs))]
    timeout = ex.loop_timeout_ns if ex.loop_timeout_ns is not None else LOOP_TIMEOUT_DEFAULT_NS
    deadline = time.monotonic_ns() + timeout
    iteration = 0
    while True:
        (cond,) = ex.run_subgraph(cond_index, values)
        cond = np.asarray(cond).reshape(-1)
        if cond.size != 1:
            raise GeneralFailure(f"WHILE (operation {ctx.op_index}): the condition produced "
                                 f"{cond.size} values, expected 1")
        if not bool(cond[0]):
            break
        if time.monotonic_ns() > deadline:
            raise MissedDeadline(f"WHILE (operation {ctx.op_index}) ran past its loop timeout "
                                 f"of {timeout} ns after {iteration} iterations",
                                 ErrorStatus.MISSED_DEADLINE_TRANSIENT)
        outs = ex.run_subgraph(body_index, values)
        values = list(outs[:mk]) + values[mk:]
        iteration += 1
    return values[:m]


register("IF", execute_if, validate=validate_if, custom_signature=True, family="control_flow")
register("WHILE", execute_while, validate=validate_while, custom_signature=True,
         family="control_flow")
