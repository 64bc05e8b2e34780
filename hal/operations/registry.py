"""The one registration path for operations: signatures, validate, prepare, execute.

Every op family module calls :func:`register` at its bottom. A registration holds

- ``signatures``: the spec table of the operation, one :class:`Signature` per form (input and
  output operand types and the HAL version that introduced the form), written from the
  operation spec. Validation picks the form whose types match the operation's operands.
- ``validate(ctx)``: checks that the types cannot express (ranks, scalar values, shapes known
  at build time); raises :class:`hal.errors.InvalidArgument` with a reason.
- ``prepare(ctx)``: shape inference from input shapes and constant inputs; returns one shape
  per output. Optional for operations whose output shape depends on input values.
- ``execute(ctx)``: the reference implementation in NumPy; returns one array per output in the
  output operand's storage dtype. The executor runs it through
  :meth:`OperationRegistration.run`: ``prepare(ctx)`` first (when there is one), the shapes it
  returns set on ``ctx.outputs[i].shape``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from hal.extensions import by_full_name
from hal.types import (
    ExtensionOperandType,
    ExtensionOperationType,
    HalVersion,
    OperandType,
    OperationType,
)


def operand_type_of(t) -> OperandType | ExtensionOperandType:
    """A standard operand type (its name or value) or an extension's ("org.clnn.test:TYPE",
    or the type itself)."""
    if isinstance(t, ExtensionOperandType):
        return t
    if isinstance(t, str) and ":" in t:
        found = by_full_name(t, operand=True)
        if found is None:
            raise KeyError(f"no registered extension operand type {t!r}")
        return found
    return OperandType[t] if isinstance(t, str) else OperandType(t)


def operation_type_of(op) -> OperationType | ExtensionOperationType:
    """A standard operation type (its name or value) or an extension's
    ("org.clnn.test:NEGATE", or the type itself)."""
    if isinstance(op, ExtensionOperationType):
        return op
    if isinstance(op, str) and ":" in op:
        found = by_full_name(op, operand=False)
        if found is None:
            raise KeyError(f"no registered extension operation type {op!r}")
        return found
    return OperationType[op] if isinstance(op, str) else OperationType(op)


@dataclass(frozen=True)
class Signature:
    version: HalVersion
    inputs: tuple[OperandType, ...]
    outputs: tuple[OperandType, ...]
    #: indexes of inputs that may be omitted (lifetime NO_VALUE)
    optional: frozenset[int] = frozenset()
    #: input 0 repeats one or more times (CONCATENATION)
    variadic_inputs: bool = False
    #: output 0 repeats one or more times (SPLIT)
    variadic_outputs: bool = False

    def matches(self, in_types, in_omitted, out_types) -> bool:
        ins = self.inputs
        if self.variadic_inputs:
            extra = len(in_types) - len(ins)
            if extra < 0:
                return False
            ins = (ins[0],) * (extra + 1) + ins[1:]
        outs = self.outputs
        if self.variadic_outputs:
            extra = len(out_types) - len(outs)
            if extra < 0:
                return False
            outs = (outs[0],) * (extra + 1) + outs[1:]
        if len(ins) != len(in_types) or len(outs) != len(out_types):
            return False
        for i, (want, got) in enumerate(zip(ins, in_types)):
            if in_omitted[i]:
                if i not in self.optional:
                    return False
            elif want != got:
                return False
        return all(w == g for w, g in zip(outs, out_types))

    def describe(self) -> str:
        ins = ", ".join(t.name for t in self.inputs)
        outs = ", ".join(t.name for t in self.outputs)
        return f"({ins}) -> ({outs}) since {self.version.name}"


def sig(version: str | HalVersion, inputs: Sequence[str | OperandType],
        outputs: Sequence[str | OperandType], optional: Iterable[int] = (),
        variadic_inputs: bool = False, variadic_outputs: bool = False) -> Signature:
    """Shorthand: ``sig("V1_2", ["TENSOR_FLOAT16", "INT32"], ["TENSOR_FLOAT16"])``."""
    v = HalVersion[version] if isinstance(version, str) else HalVersion(version)

    def conv(ts):
        return tuple(operand_type_of(t) for t in ts)

    return Signature(v, conv(inputs), conv(outputs), frozenset(optional), variadic_inputs,
                     variadic_outputs)


@dataclass(frozen=True)
class OperationRegistration:
    type: OperationType | ExtensionOperationType
    execute: Callable
    signatures: tuple[Signature, ...] = ()
    validate: Callable | None = None
    prepare: Callable | None = None
    #: inputs that must be constant operands (CONSTANT_COPY / CONSTANT_REFERENCE)
    constant_inputs: frozenset[int] = frozenset()
    #: operations whose signatures are checked by validate() alone (IF, WHILE)
    custom_signature: bool = False
    family: str = ""
    extra: dict = field(default_factory=dict)

    def run(self, ctx) -> list:
        """How an operation runs: ``prepare(ctx)`` (when there is one) with the shapes it
        returns set on ``ctx.outputs``, then ``execute(ctx)``; returns execute's arrays."""
        if self.prepare is not None:
            for info, shape in zip(ctx.outputs, self.prepare(ctx)):
                info.shape = tuple(int(d) for d in shape)
        return self.execute(ctx)


_REGISTRY: dict[OperationType | ExtensionOperationType, OperationRegistration] = {}


def register(op: OperationType | ExtensionOperationType | str, execute: Callable, *,
             signatures: Iterable[Signature] = (),
             validate: Callable | None = None, prepare: Callable | None = None,
             constant_inputs: Iterable[int] = (), custom_signature: bool = False,
             family: str = "") -> OperationRegistration:
    op = operation_type_of(op)
    if op in _REGISTRY:
        raise RuntimeError(f"operation {op.name} is registered twice "
                           f"({_REGISTRY[op].family} and {family})")
    sigs = tuple(signatures)
    if not sigs and not custom_signature:
        raise RuntimeError(f"operation {op.name} is registered without signatures")
    reg = OperationRegistration(op, execute, sigs, validate, prepare, frozenset(constant_inputs),
                                custom_signature, family)
    _REGISTRY[op] = reg
    return reg


def unregister(op) -> None:
    """Remove a registration (test fixtures remove a test-only extension's operations)."""
    _REGISTRY.pop(operation_type_of(op), None)
