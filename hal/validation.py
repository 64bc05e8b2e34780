"""validate_model: what ValidateHal checks of a model, with a reason for every rejection
(requests: hal/validation_request.py).

Every failure raises :class:`hal.errors.InvalidArgument` whose message names the subgraph,
operand or operation at fault.
"""

from __future__ import annotations

import contextlib
import math
import threading

import numpy as np

from hal.errors import HalError, InvalidArgument
from hal.extensions import UnsupportedExtensionType, resolve_model
from hal.operations import lookup
from hal.operations.context import OperationContext, operation_context
from hal.operations.registry import OperationRegistration
from hal.types import (
    ExtensionOperandType,
    ExtensionOperationType,
    Memory,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Operation,
    OperationType,
    Subgraph,
    is_scalar_type,
)
from hal.values import static_view

OT = OperandType
LT = OperandLifeTime
#: dimensions are uint32 in the HAL
UINT32_MAX = 0xFFFF_FFFF
CONSTANT = (LT.CONSTANT_COPY, LT.CONSTANT_REFERENCE)


def _fail(msg: str):
    raise InvalidArgument(msg)


# ------------------------------------------------------------------------------- operands

def validate_operand(model: Model, sg_name: str, index: int, op: Operand):
    """Checks one operand of a model whose types are resolved (hal.extensions.resolve_model:
    an operand's type is an OperandType or a bound ExtensionOperandType)."""
    what = f"{sg_name} operand {index}"
    t = op.type
    if isinstance(t, UnsupportedExtensionType):  # only its place in the graph can be checked
        return
    if not isinstance(t, (OT, ExtensionOperandType)):
        _fail(f"{what} has an invalid operand type {op.type}")
    dims = tuple(op.dimensions)
    if any((not isinstance(d, (int, np.integer))) or not 0 <= d <= UINT32_MAX for d in dims):
        _fail(f"{what} ({t.name}) has invalid dimensions {list(dims)}: each must be an "
              f"integer in [0, {UINT32_MAX}]")
    if isinstance(op.extra_params, (bytes, bytearray)) and not isinstance(
            t, ExtensionOperandType):
        _fail(f"{what} ({t.name}) has extension operand parameters, but only an extension "
              "operand type may have them")
    if isinstance(t, ExtensionOperandType):
        _validate_extension_operand(what, t, op)
    elif is_scalar_type(t) or t == OT.SUBGRAPH:
        if dims:
            _fail(f"{what} ({t.name}) is a scalar but has dimensions {list(dims)}")
        if op.scale != 0.0 or op.zero_point != 0:
            _fail(f"{what} ({t.name}) must have scale 0 and zero point 0, "
                  f"got scale {op.scale} and zero point {op.zero_point}")
    else:
        validate_tensor_quant(what, t, op)
    if op.extra_params is not None and t != OT.TENSOR_QUANT8_SYMM_PER_CHANNEL \
            and not isinstance(t, ExtensionOperandType):
        _fail(f"{what} ({t.name}) must not have per-channel quantization parameters")
    _validate_lifetime(model, what, t, op)


def _validate_extension_operand(what: str, t: ExtensionOperandType, op: Operand):
    """An extension operand: the extension says whether it is a tensor; its scale and zero
    point, if it uses them, and its parameters (bytes) are the extension's to interpret."""
    if not t.is_tensor and op.dimensions:
        _fail(f"{what} ({t.name}) is a scalar but has dimensions {list(op.dimensions)}")
    if not isinstance(op.scale, (int, float, np.integer, np.floating)) or not math.isfinite(
            op.scale):
        _fail(f"{what} ({t.name}) has scale {op.scale!r}; a scale must be a finite number")
    if not _integral(op.zero_point):
        _fail(f"{what} ({t.name}) has zero point {op.zero_point!r}; a zero point must be an "
              "integer")
    if op.extra_params is not None and not isinstance(op.extra_params, (bytes, bytearray)):
        _fail(f"{what} ({t.name}) is an extension operand; its extra parameters must be "
              f"extension bytes, not {type(op.extra_params).__name__}")


def _integral(x) -> bool:
    try:
        return not isinstance(x, (bool, str)) and float(x).is_integer()
    except (TypeError, ValueError, OverflowError):
        return False


def validate_tensor_quant(what: str, t: OperandType, op: Operand):
    s, zp = op.scale, op.zero_point
    if not isinstance(s, (int, float, np.integer, np.floating)):
        _fail(f"{what} ({t.name}) has scale {s!r}; a scale must be a number")
    if not _integral(zp):
        _fail(f"{what} ({t.name}) has zero point {zp!r}; a zero point must be an integer")
    if t in (OT.TENSOR_FLOAT32, OT.TENSOR_FLOAT16, OT.TENSOR_BOOL8):
        if s != 0.0 or zp != 0:
            _fail(f"{what} ({t.name}) must have scale 0 and zero point 0, got scale {s} and "
                  f"zero point {zp}")
    elif t == OT.TENSOR_INT32:
        if zp != 0:
            _fail(f"{what} (TENSOR_INT32) must have zero point 0, got {zp}")
        if not 0 <= s < math.inf:
            _fail(f"{what} (TENSOR_INT32) must have a non-negative scale (and finite), got {s}")
    elif t == OT.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        if zp != 0 or s != 0.0:
            _fail(f"{what} (TENSOR_QUANT8_SYMM_PER_CHANNEL) must have scale 0 and zero point 0 "
                  "(its scales are per channel)")
        cq = op.extra_params
        if cq is None:
            _fail(f"{what} (TENSOR_QUANT8_SYMM_PER_CHANNEL) has no per-channel scales")
        rank = len(op.dimensions)
        if not 0 <= cq.channel_dim < max(rank, 1):
            _fail(f"{what}: channel dimension {cq.channel_dim} is out of range for rank {rank}")
        if rank and op.dimensions[cq.channel_dim] not in (0, len(cq.scales)):
            _fail(f"{what}: {len(cq.scales)} per-channel scales for a channel dimension of "
                  f"size {op.dimensions[cq.channel_dim]}")
        bad = [sc for sc in cq.scales if not (0 < sc < math.inf)]
        if bad:
            _fail(f"{what} (TENSOR_QUANT8_SYMM_PER_CHANNEL): every per-channel scale must be "
                  f"positive and finite, got {bad[0]}")
    else:
        if not 0 < s < math.inf:
            _fail(f"{what} ({t.name}) must have a positive scale (and finite), got {s}")
        ranges = {OT.TENSOR_QUANT8_ASYMM: (0, 255), OT.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
                  OT.TENSOR_QUANT16_ASYMM: (0, 65535)}
        if t in ranges:
            lo, hi = ranges[t]
            if not lo <= zp <= hi:
                _fail(f"{what} ({t.name}) has zero point {zp}, outside [{lo}, {hi}]")
        elif zp != 0:
            _fail(f"{what} ({t.name}) must have zero point 0, got {zp}")


def _validate_lifetime(model: Model, what: str, t: OperandType, op: Operand):
    try:
        lt = LT(op.lifetime)
    except ValueError:
        _fail(f"{what} has an invalid lifetime {op.lifetime}")
    loc = op.location
    if lt in CONSTANT:
        if not op.is_fully_specified() and not is_scalar_type(t):
            _fail(f"{what} is a {lt.name} but its dimensions {list(op.dimensions)} are not "
                  "fully specified")
        if lt == LT.CONSTANT_COPY:
            if loc.pool_index != 0:
                _fail(f"{what} is CONSTANT_COPY but names pool {loc.pool_index}")
            size = len(model.operand_values)
        else:
            if not 0 <= loc.pool_index < len(model.pools):
                _fail(f"{what} is CONSTANT_REFERENCE to pool {loc.pool_index}, but the model "
                      f"has {len(model.pools)} pools")
            size = model.pools[loc.pool_index].size
        if loc.offset < 0 or loc.length < 0 or loc.offset + loc.length > size:
            _fail(f"{what}: location offset {loc.offset} + length {loc.length} exceeds the "
                  f"{size} bytes of its {'operand values' if lt == LT.CONSTANT_COPY else 'pool'}")
        if loc.length != op.byte_size():
            _fail(f"{what} ({t.name} {list(op.dimensions)}) needs {op.byte_size()} bytes, its "
                  f"location has length {loc.length}")
    elif lt == LT.SUBGRAPH:
        if t != OT.SUBGRAPH:
            _fail(f"{what} has lifetime SUBGRAPH but type {t.name}")
        if not 0 <= loc.offset < len(model.referenced) or loc.pool_index or loc.length:
            _fail(f"{what} references subgraph {loc.offset}, but the model has "
                  f"{len(model.referenced)} referenced subgraphs")
    else:
        if t == OT.SUBGRAPH:
            _fail(f"{what} has type SUBGRAPH but lifetime {lt.name}")
        if loc.pool_index or loc.offset or loc.length:
            _fail(f"{what} has lifetime {lt.name} and must not have a location")


# ------------------------------------------------------------------------------- operations

#: this thread's contexts kept by :func:`kept_contexts` (None: none kept)
_KEPT = threading.local()


@contextlib.contextmanager
def kept_contexts():
    """While the block runs, :func:`validation_context` makes each operation's context once
    on this thread (a driver's support report asks for the contexts that validate_model made
    just before: a second process's prepare of pose_landmark_full built 140 twice). The
    model must not change inside the block."""
    outer = getattr(_KEPT, "contexts", None)
    _KEPT.contexts = {} if outer is None else outer
    try:
        yield
    finally:
        _KEPT.contexts = outer


def validation_context(model: Model, sg: Subgraph, op_index: int) -> OperationContext:
    """The context an operation is validated with: constants (and subgraph references) have
    their values, every operand its declared shape (kept inside :func:`kept_contexts`)."""
    kept = getattr(_KEPT, "contexts", None)
    key = (id(model), id(sg), op_index)
    if kept is not None and key in kept:
        return kept[key][1]
    operation = sg.operations[op_index]
    values = {}
    for i in (*operation.inputs, *operation.outputs):
        v = static_view(model, sg.operands[i], i)
        if v is not None:
            values[i] = v
    ctx = operation_context(model, sg, op_index, values)
    if kept is not None:  # (the model and subgraph held: their ids stay theirs)
        kept[key] = ((model, sg), ctx)
    return ctx


def match_signature(reg: OperationRegistration, ctx: OperationContext):
    in_types = [i.type for i in ctx.inputs]
    omitted = [i.omitted for i in ctx.inputs]
    out_types = [o.type for o in ctx.outputs]
    for s in reg.signatures:
        if s.matches(in_types, omitted, out_types):
            return s
    ins = ", ".join("omitted" if o else t.name for t, o in zip(in_types, omitted))
    outs = ", ".join(t.name for t in out_types)
    allowed = "; ".join(s.describe() for s in reg.signatures[:4])
    more = f" (and {len(reg.signatures) - 4} more)" if len(reg.signatures) > 4 else ""
    ctx.fail(f"operand types ({ins}) -> ({outs}) match no signature of {reg.type.name}; "
             f"allowed: {allowed}{more}")


def validate_operation(model: Model, sg: Subgraph, op_index: int, operation: Operation):
    op_type = operation.type  # resolved (hal.extensions.resolve_model)
    if not isinstance(op_type, (OperationType, ExtensionOperationType)):
        _fail(f"operation {op_index} has an invalid operation type {operation.type}")
    reg = lookup(op_type)
    if reg is None:
        _fail(f"operation {op_index} ({op_type.name}) is not known to this HAL")
    for i in list(operation.inputs) + list(operation.outputs):
        if not 0 <= i < len(sg.operands):
            _fail(f"{op_type.name} (operation {op_index}) names operand {i}, but the subgraph "
                  f"has {len(sg.operands)} operands")
    ctx = validation_context(model, sg, op_index)
    if not reg.custom_signature:
        match_signature(reg, ctx)
    for i in reg.constant_inputs:
        if i < len(ctx.inputs) and not ctx.inputs[i].omitted:
            ctx.require(ctx.inputs[i].is_constant, f"input {i} must be a constant operand")
    if reg.validate is not None:
        try:
            reg.validate(ctx)
        except HalError:
            raise
        except Exception as e:  # a validator must never crash the driver
            ctx.fail(f"validation failed: {type(e).__name__}: {e}")
    return ctx


# ------------------------------------------------------------------------------- graphs

def _uses_unsupported_extension(sg: Subgraph, operation: Operation) -> bool:
    return isinstance(operation.type, UnsupportedExtensionType) or any(
        isinstance(sg.operands[i].type, UnsupportedExtensionType)
        for i in (*operation.inputs, *operation.outputs) if 0 <= i < len(sg.operands))


def validate_subgraph(model: Model, sg: Subgraph, name: str) -> set[int]:
    """Validate one subgraph; returns the operations left unchecked because they use an
    extension this HAL does not know (only when validate_model allowed such types)."""
    n = len(sg.operands)
    for i, op in enumerate(sg.operands):
        validate_operand(model, name, i, op)
    for kind, idxs, lt in (("input", sg.input_indexes, LT.SUBGRAPH_INPUT),
                           ("output", sg.output_indexes, LT.SUBGRAPH_OUTPUT)):
        seen = set()
        for i in idxs:
            if not 0 <= i < n:
                _fail(f"{name} {kind} index {i} is out of range ({n} operands)")
            if i in seen:
                _fail(f"{name} lists operand {i} twice as an {kind}")
            seen.add(i)
            if sg.operands[i].lifetime != lt:
                _fail(f"{name} {kind} operand {i} must have lifetime {lt.name}, "
                      f"has {LT(sg.operands[i].lifetime).name}")
        count = sum(1 for o in sg.operands if o.lifetime == lt)
        if count != len(seen):
            _fail(f"{name} has {count} operands with lifetime {lt.name} but lists "
                  f"{len(seen)} {kind}s")
    written = set()
    for i, op in enumerate(sg.operands):
        if op.lifetime in (LT.SUBGRAPH_INPUT, LT.NO_VALUE, LT.SUBGRAPH) or op.lifetime in CONSTANT:
            written.add(i)
    unsupported = set()
    for k, operation in enumerate(sg.operations):
        if _uses_unsupported_extension(sg, operation):
            unsupported.add(k)
        else:
            validate_operation(model, sg, k, operation)
        name_k = f"{operation.type.name} (operation {k})"
        for i in operation.inputs:
            if i not in written:
                _fail(f"{name_k} reads operand {i} before it is written")
        for i in operation.outputs:
            lt = sg.operands[i].lifetime
            if lt not in (LT.TEMPORARY_VARIABLE, LT.SUBGRAPH_OUTPUT):
                _fail(f"{name_k} writes operand {i}, whose lifetime {LT(lt).name} is not "
                      "TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT")
            if i in written:
                _fail(f"{name_k} writes operand {i}, which is already written")
            written.add(i)
    for i, op in enumerate(sg.operands):
        if i not in written:
            _fail(f"{name} operand {i} ({LT(op.lifetime).name}) is never written")
    return unsupported


#: The deepest chain of IF / WHILE references from the main subgraph that a model may have.
#: The executors run a referenced subgraph by calling into it (three Python frames a level),
#: so a deeper model would end every execution in RecursionError; it is refused at prepare.
MAX_SUBGRAPH_NESTING = 100


def _check_references(model: Model):
    """No reference cycles between subgraphs and no nesting deeper than MAX_SUBGRAPH_NESTING;
    iterative (a depth-first search with its own stack), so any model can be checked."""
    n = len(model.referenced)

    def refs(sg):
        return sorted({o.location.offset for o in sg.operands
                       if o.lifetime == LT.SUBGRAPH and 0 <= o.location.offset < n})

    state = [0] * n  # 0 unseen, 1 on the current path, 2 done
    height = [0] * n  # levels of nesting below and including subgraph i
    for root in refs(model.main):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, iter(refs(model.referenced[root])))]
        while stack:
            i, children = stack[-1]
            j = next(children, None)
            if j is None:
                stack.pop()
                state[i] = 2
                below = [height[c] for c in refs(model.referenced[i])]
                height[i] = 1 + max(below, default=0)
                continue
            if state[j] == 1:
                path = ["main"] + [str(k) for k, _ in stack] + [str(j)]
                _fail(f"referenced subgraph {j} is part of a reference cycle "
                      f"({' -> '.join(path)})")
            if state[j] == 0:
                state[j] = 1
                stack.append((j, iter(refs(model.referenced[j]))))
    depth = max((height[r] for r in refs(model.main)), default=0)
    if depth > MAX_SUBGRAPH_NESTING:
        _fail(f"IF / WHILE operations are nested {depth} levels deep; this driver runs at "
              f"most {MAX_SUBGRAPH_NESTING} levels (MAX_SUBGRAPH_NESTING)")


def validate_model(model: Model, unknown_extensions: bool = False) -> set[int]:
    """Raise InvalidArgument with a reason if the model is not valid. Resolves the model's
    types first (hal.extensions.resolve_model). ``unknown_extensions`` (for
    get_supported_operations): a type of an extension this HAL does not know is not an error;
    the main-subgraph operations that use one are returned (unsupported, their operands and
    signatures unchecked); otherwise the set is empty."""
    for p, pool in enumerate(model.pools):
        if not isinstance(pool, Memory):
            _fail(f"model pool {p} is not a memory ({type(pool).__name__})")
    if not model.main.operations:
        _fail("the main subgraph has no operations")
    if not model.main.input_indexes and not model.main.output_indexes:
        _fail("the main subgraph has no inputs and no outputs")
    if not model.main.output_indexes:
        _fail("the main subgraph has no outputs")
    _check_references(model)
    resolve_model(model, unknown_ok=unknown_extensions)
    unsupported = validate_subgraph(model, model.main, "main subgraph")
    for r, sg in enumerate(model.referenced):
        validate_subgraph(model, sg, f"referenced subgraph {r}")
    return unsupported


# ------------------------------------------------------------------------------- requests
