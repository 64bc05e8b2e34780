"""VTS-style model mutations of operands (after AOSP's neuralnetworks ValidateModel tests).

Every kind is a function ``kind(mutant, rng) -> str | None`` that changes ``mutant.model`` (a
deep copy of a valid model) in place and returns a one-line description, or None when the
model has nothing that kind can change. Some mutants stay valid (another valid operand type,
an extra graph output, a different valid scale): clnn/suites/mutation_check.py decides by
running them, so a kind needs no opinion on whether its mutant must be rejected.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from hal.types import (
    NUMPY_DTYPE,
    DataLocation,
    ExecutionPreference,
    HostMemory,
    Model,
    Operand,
    OperandLifeTime,
    OperandType,
    Priority,
    Subgraph,
    SymmPerChannelQuantParams,
    is_scalar_type,
)
from hal.values import array_to_bytes, constant_value

OT = OperandType
LT = OperandLifeTime
CONSTANT = (LT.CONSTANT_COPY, LT.CONSTANT_REFERENCE)
#: operand types a valid-type mutation may pick (every type but SUBGRAPH)
VALID_TYPES = [t for t in OT if t != OT.SUBGRAPH]
INVALID_OPERAND_TYPES = (-1, 16, 99, 0x10000)
INVALID_OPERATION_TYPES = (-1, 103, 1000)


@dataclass
class Mutant:
    kind: str
    model: Model
    detail: str = ""
    #: prepare_model arguments (a mutant of these is rejected by prepare_model only)
    preference: int = ExecutionPreference.FAST_SINGLE_ANSWER
    priority: int = Priority.MEDIUM


# ------------------------------------------------------------------------------ helpers

def _subgraphs(m: Model) -> list[tuple[str, Subgraph]]:
    return [("main", m.main)] + [(f"referenced {k}", s) for k, s in enumerate(m.referenced)]


def _pick_subgraph(m: Model, rng: random.Random, need_ops: bool = False):
    choices = [(n, s) for n, s in _subgraphs(m) if s.operations or not need_ops]
    return rng.choice(choices) if choices else (None, None)


def _pick_operand(sg: Subgraph, rng: random.Random, where=lambda o: True):
    idx = [i for i, o in enumerate(sg.operands) if where(o)]
    return rng.choice(idx) if idx else None


def _place_constant(m: Model, op: Operand, data: bytes):
    """Store ``data`` as ``op``'s constant value: appended to operand values (CONSTANT_COPY) or
    to its pool (CONSTANT_REFERENCE), so the old value's bytes stay where they were."""
    if op.lifetime == LT.CONSTANT_COPY:
        buf = bytearray(m.operand_values)
        buf.extend(b"\0" * (-len(buf) % 8))
        off = len(buf)
        m.operand_values = bytes(buf + data)
        op.location = DataLocation(0, off, len(data))
        return
    if not m.pools:
        m.pools.append(HostMemory(b""))
    pool = op.location.pool_index if 0 <= op.location.pool_index < len(m.pools) else 0
    old = bytes(m.pools[pool].view())
    pad = -len(old) % 8
    m.pools[pool] = HostMemory(old + b"\0" * pad + data)
    op.location = DataLocation(pool, len(old) + pad, len(data))


def _valid_quant(op: Operand, t: OT, rng: random.Random):
    """Scale, zero point and per-channel parameters that are valid for type ``t``."""
    op.scale, op.zero_point, op.extra_params = 0.0, 0, None
    if t in (OT.TENSOR_QUANT8_ASYMM, OT.TENSOR_QUANT16_ASYMM, OT.TENSOR_QUANT8_ASYMM_SIGNED,
             OT.TENSOR_QUANT8_SYMM, OT.TENSOR_QUANT16_SYMM):
        op.scale = rng.choice([0.5, 0.25, 1.0, 0.1])
        hi = {OT.TENSOR_QUANT8_ASYMM: 255, OT.TENSOR_QUANT16_ASYMM: 65535}.get(t, 0)
        op.zero_point = rng.randint(0, hi) if hi else 0
        if t == OT.TENSOR_QUANT8_ASYMM_SIGNED:
            op.zero_point = rng.randint(-128, 127)
    elif t == OT.TENSOR_QUANT8_SYMM_PER_CHANNEL and op.dimensions:
        n = op.dimensions[0]
        op.extra_params = SymmPerChannelQuantParams(tuple([0.5] * max(n, 1)), 0)


def retype(m: Model, sg: Subgraph, i: int, t: OT, rng: random.Random) -> None:
    """Change operand ``i`` to type ``t`` as a valid operand: quantization parameters valid
    for ``t``, scalar/tensor shape, and a constant's value converted to ``t``."""
    op = sg.operands[i]
    old_value = None
    if op.lifetime in CONSTANT:
        try:
            old_value = constant_value(m, op, i)
        except Exception:  # the constant is already unreadable: keep its location
            old_value = None
    if is_scalar_type(t):
        op.dimensions = ()
    elif is_scalar_type(op.type) or not op.dimensions:
        op.dimensions = (1,)
    op.type = t
    _valid_quant(op, t, rng)
    if old_value is not None:
        flat = np.asarray(old_value, dtype=np.float64).reshape(-1)
        n = int(np.prod(op.dimensions)) if op.dimensions else 1
        flat = np.resize(flat if flat.size else np.zeros(1), n)
        dtype = NUMPY_DTYPE[t]
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            flat = np.clip(np.nan_to_num(flat), info.min, info.max)
        _place_constant(m, op, array_to_bytes(flat.astype(dtype)))


def _add_operand(sg: Subgraph, like: Operand, lifetime: LT) -> int:
    sg.operands.append(Operand(like.type, tuple(like.dimensions), like.scale, like.zero_point,
                               lifetime, DataLocation(), like.extra_params))
    return len(sg.operands) - 1


# ------------------------------------------------------------------------------ operands

def operand_type_invalid(mu: Mutant, rng):
    name, sg = _pick_subgraph(mu.model, rng)
    i = _pick_operand(sg, rng)
    bad = rng.choice(INVALID_OPERAND_TYPES)
    sg.operands[i].type = bad
    return f"{name} operand {i}: type -> {bad}"


def operand_type_valid(mu: Mutant, rng):
    name, sg = _pick_subgraph(mu.model, rng)
    i = _pick_operand(sg, rng, lambda o: o.type != OT.SUBGRAPH)
    if i is None:
        return None
    old = OT(sg.operands[i].type)
    t = rng.choice([t for t in VALID_TYPES if t != old])
    retype(mu.model, sg, i, t, rng)
    return f"{name} operand {i}: type {old.name} -> {t.name}"


def operand_rank(mu: Mutant, rng):
    name, sg = _pick_subgraph(mu.model, rng)
    i = _pick_operand(sg, rng, lambda o: o.type != OT.SUBGRAPH)
    op = sg.operands[i]
    old = tuple(op.dimensions)
    if is_scalar_type(op.type) or not old or rng.random() < 0.5:
        op.dimensions = (1,) + old  # same size, one more dimension (a scalar: invalid)
    else:  # one dimension fewer, the same element count
        op.dimensions = old[:-2] + (old[-2] * old[-1],) if len(old) > 1 else ()
    if op.extra_params is not None and op.dimensions:
        cq = op.extra_params
        op.extra_params = SymmPerChannelQuantParams(cq.scales, min(cq.channel_dim,
                                                                   len(op.dimensions) - 1))
    return f"{name} operand {i}: dimensions {list(old)} -> {list(op.dimensions)}"


def operand_dims(mu: Mutant, rng):
    name, sg = _pick_subgraph(mu.model, rng)
    i = _pick_operand(sg, rng, lambda o: len(o.dimensions) > 0)
    if i is None:
        return None
    op = sg.operands[i]
    old = tuple(op.dimensions)
    k = rng.randrange(len(old))
    new = rng.choice([d for d in (old[k] + 1, max(old[k] - 1, 0), 0, -1, 2**31 - 1, 2**32)
                      if d != old[k]])
    op.dimensions = old[:k] + (new,) + old[k + 1:]
    return f"{name} operand {i}: dimension {k} {old[k]} -> {new}"


def operand_scale(mu: Mutant, rng):
    name, sg = _pick_subgraph(mu.model, rng)
    i = _pick_operand(sg, rng)
    op = sg.operands[i]
    old = op.scale
    # NaN and infinite scales are left to the scale-check work (hal/validation.py)
    op.scale = rng.choice([s for s in (0.0, -1.0, -0.5, 1.0, old * 2 if old else 0.5, 1e-9)
                           if s != old])
    return f"{name} operand {i} ({_tname(op.type)}): scale {old} -> {op.scale}"


def operand_zero_point(mu: Mutant, rng):
    name, sg = _pick_subgraph(mu.model, rng)
    i = _pick_operand(sg, rng)
    op = sg.operands[i]
    old = op.zero_point
    op.zero_point = rng.choice([z for z in (-1, 1, 128, 256, -129, 65536, old + 1, old - 1)
                                if z != old])
    return f"{name} operand {i} ({_tname(op.type)}): zero point {old} -> {op.zero_point}"


def operand_lifetime(mu: Mutant, rng):
    name, sg = _pick_subgraph(mu.model, rng)
    i = _pick_operand(sg, rng)
    op = sg.operands[i]
    old = LT(op.lifetime)
    new = rng.choice([lt for lt in LT if lt != old] + [7, -1])
    op.lifetime = new
    return f"{name} operand {i}: lifetime {old.name} -> {getattr(new, 'name', new)}"


def operand_location(mu: Mutant, rng):
    m = mu.model
    name, sg = _pick_subgraph(m, rng)
    consts = [i for i, o in enumerate(sg.operands) if o.lifetime in CONSTANT]
    if not consts or rng.random() < 0.15:
        i = _pick_operand(sg, rng, lambda o: o.lifetime not in CONSTANT + (LT.SUBGRAPH,))
        if i is None:
            return None
        sg.operands[i].location = DataLocation(0, 8, 4)
        return f"{name} operand {i} ({LT(sg.operands[i].lifetime).name}): given a location"
    i = rng.choice(consts)
    op = sg.operands[i]
    loc = op.location
    size = (len(m.operand_values) if op.lifetime == LT.CONSTANT_COPY
            else m.pools[loc.pool_index].size if 0 <= loc.pool_index < len(m.pools) else 0)
    how, new = rng.choice([
        ("offset past the end", DataLocation(loc.pool_index, size, loc.length)),
        ("offset + length past the end", DataLocation(loc.pool_index, loc.offset,
                                                      size - loc.offset + 1)),
        ("negative offset", DataLocation(loc.pool_index, -1, loc.length)),
        ("length one short", DataLocation(loc.pool_index, loc.offset, max(loc.length - 1, 0))),
        ("length one long", DataLocation(loc.pool_index, loc.offset, loc.length + 1)),
        ("bad pool index", DataLocation(len(m.pools) + 1, loc.offset, loc.length)),
        ("negative pool index", DataLocation(-1, loc.offset, loc.length)),
        ("huge offset", DataLocation(loc.pool_index, 2**63, loc.length)),
    ])
    op.location = new
    return f"{name} operand {i} ({LT(op.lifetime).name}): {how} {new}"


def operand_extra_params(mu: Mutant, rng):
    name, sg = _pick_subgraph(mu.model, rng)
    pc = [i for i, o in enumerate(sg.operands) if o.type == OT.TENSOR_QUANT8_SYMM_PER_CHANNEL]
    if not pc or rng.random() < 0.3:
        i = _pick_operand(sg, rng, lambda o: o.type != OT.TENSOR_QUANT8_SYMM_PER_CHANNEL)
        if i is None:
            return None
        sg.operands[i].extra_params = SymmPerChannelQuantParams((0.5,), 0)
        return f"{name} operand {i} ({_tname(sg.operands[i].type)}): per-channel params added"
    i = rng.choice(pc)
    op = sg.operands[i]
    cq = op.extra_params
    rank = len(op.dimensions)
    how, new = rng.choice([
        ("removed", None),
        ("one scale more", SymmPerChannelQuantParams(cq.scales + (0.5,), cq.channel_dim)),
        ("one scale fewer", SymmPerChannelQuantParams(cq.scales[:-1], cq.channel_dim)),
        ("channel dim = rank", SymmPerChannelQuantParams(cq.scales, rank)),
        ("negative channel dim", SymmPerChannelQuantParams(cq.scales, -1)),
        ("a zero scale", SymmPerChannelQuantParams((0.0,) + cq.scales[1:], cq.channel_dim)),
        ("a negative scale", SymmPerChannelQuantParams((-1.0,) + cq.scales[1:], cq.channel_dim)),
        ("scales doubled", SymmPerChannelQuantParams(tuple(2 * s for s in cq.scales),
                                                     cq.channel_dim)),
    ])
    op.extra_params = new
    return f"{name} operand {i}: per-channel params {how}"


def operand_make_io(mu: Mutant, rng):
    """VTS mutateOperandInputOutputTest, done consistently: a temporary becomes a graph output,
    or a constant a graph input (valid unless an operation needs that input constant)."""
    sg = mu.model.main
    temps = [i for i, o in enumerate(sg.operands) if o.lifetime == LT.TEMPORARY_VARIABLE]
    consts = [i for i, o in enumerate(sg.operands) if o.lifetime in CONSTANT]
    if temps and (not consts or rng.random() < 0.5):
        i = rng.choice(temps)
        sg.operands[i].lifetime = LT.SUBGRAPH_OUTPUT
        sg.output_indexes.append(i)
        return f"main operand {i}: temporary -> a new graph output"
    if not consts:
        return None
    i = rng.choice(consts)
    sg.operands[i].lifetime = LT.SUBGRAPH_INPUT
    sg.operands[i].location = DataLocation()
    sg.input_indexes.append(i)
    return f"main operand {i}: constant -> a new graph input"


def operand_removed(mu: Mutant, rng):
    """VTS removeOperandTest: the operand goes, and every reference to it; later indexes shift."""
    name, sg = _pick_subgraph(mu.model, rng)
    i = _pick_operand(sg, rng)
    del sg.operands[i]

    def fix(idxs):
        return [j - (j > i) for j in idxs if j != i]

    for op in sg.operations:
        op.inputs, op.outputs = fix(op.inputs), fix(op.outputs)
    sg.input_indexes, sg.output_indexes = fix(sg.input_indexes), fix(sg.output_indexes)
    return f"{name} operand {i} removed"


def _tname(t) -> str:
    return getattr(t, "name", str(t))
