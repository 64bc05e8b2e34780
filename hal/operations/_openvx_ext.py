"""The org.clnn.openvx driver extension (docs/openvx-extension.md): its registration with the
HAL (operand types, operation names) and what its four op families share: reading a data
operand's kind and fixed-point position, signatures, parameter checks."""

from __future__ import annotations

import struct

import numpy as np

from hal.extensions import register_extension, registered_extension
from hal.operations._openvx_fixed import KINDS, FixedKind
from hal.operations.context import OperandInfo, OperationContext
from hal.operations.registry import sig
from hal.types import Extension, ExtensionOperandTypeInformation, OperandType

NAME = "org.clnn.openvx"
OPERAND_TYPES = {0: "TENSOR_FIXED8", 1: "TENSOR_FIXED16", 2: "TENSOR_UFIXED8"}
OPERATIONS = {0: "CONVOLUTION", 1: "FULLY_CONNECTED", 2: "POOLING", 3: "SOFTMAX", 4: "LRN",
              5: "ACTIVATION", 6: "ROI_POOLING", 7: "DECONVOLUTION"}

EXTENSION = registered_extension(NAME) or register_extension(
    Extension(NAME, [ExtensionOperandTypeInformation(0, True, 1),
                     ExtensionOperandTypeInformation(1, True, 2),
                     ExtensionOperandTypeInformation(2, True, 1)]),
    operand_names=OPERAND_TYPES, dtypes={0: np.int8, 1: np.int16, 2: np.uint8},
    operations=OPERATIONS)

FIXED8 = EXTENSION.operand("TENSOR_FIXED8")
FIXED16 = EXTENSION.operand("TENSOR_FIXED16")
UFIXED8 = EXTENSION.operand("TENSOR_UFIXED8")
F32 = OperandType.TENSOR_FLOAT32
#: the data tensor types every operation takes
DATA_TYPES = (F32, FIXED8, FIXED16, UFIXED8)
INT, FLOAT = OperandType.INT32, OperandType.FLOAT32


def op(name: str):
    return EXTENSION.operation(name)


def signatures(data_before: int, scalars, data_after: int = 0, optional=()):
    """One form per data type: ``data_before`` data tensors, the scalar types, then
    ``data_after`` data tensors as inputs; one data tensor as output."""
    return [sig("V1_3", [d] * data_before + list(scalars) + [d] * data_after, [d],
                optional=optional) for d in DATA_TYPES]


def kind(info: OperandInfo) -> FixedKind | None:
    """The fixed-point kind of a data operand, None for TENSOR_FLOAT32."""
    return None if info.type == F32 else KINDS[info.type.type_id]


def position(info: OperandInfo) -> int:
    """The fixed-point position of a data operand (its one extension parameter byte)."""
    params = info.extension_params
    return struct.unpack("<b", params)[0] if params else 0


def position_params(q: int) -> bytes:
    """The extension parameters that carry fixed-point position ``q``."""
    return struct.pack("<b", q)


def check_data(ctx: OperationContext, ranks: dict[int, tuple[int, ...]]):
    """Every present data operand: fixed-point parameters well formed (one byte or none, no
    scale or zero point), the rank among those allowed (unknown rank 0 passes)."""
    infos = [(f"input {i}", ctx.inputs[i]) for i in ranks if ctx.has_input(i)]
    infos.append(("output 0", ctx.outputs[0]))
    for what, info in infos:
        if info.type == F32:
            continue
        params = info.extension_params
        ctx.require(params is None or len(params) == 1,
                    f"{what} has {len(params or b'')} bytes of extension parameters; an "
                    f"{NAME} fixed-point tensor carries one (its fixed-point position)")
        ctx.require(info.scale == 0 and info.zero_point == 0,
                    f"{what} is fixed point and must have scale 0 and zero point 0")
    for i, allowed in ranks.items():
        if ctx.has_input(i) and ctx.inputs[i].rank and ctx.inputs[i].rank not in allowed:
            ctx.fail(f"input {i} has rank {ctx.inputs[i].rank}; it must have rank "
                     f"{' or '.join(map(str, allowed))}")


def ints(ctx: OperationContext, indexes) -> list[int]:
    return [int(ctx.scalar(i)) for i in indexes]


def check_enum(ctx: OperationContext, i: int, count: int, what: str):
    v = ctx.scalar(i)
    ctx.require(v is not None and 0 <= v < count,
                f"input {i} ({what}) is {v}; it must be in [0, {count - 1}]")


def check_at_least(ctx: OperationContext, indexes, low: int, what: str):
    for i in indexes:
        v = ctx.scalar(i)
        ctx.require(v is not None and v >= low, f"input {i} ({what}) is {v}; it must be >= {low}")


def data(ctx: OperationContext, i: int):
    """(raw array, position) of data input i, (None, 0) when omitted."""
    if not ctx.has_input(i):
        return None, 0
    return ctx.input(i), position(ctx.inputs[i])


def out_args(ctx: OperationContext) -> dict:
    y = ctx.outputs[0]
    return {"qo": position(y), "kind": kind(y)}


def raw_bits(info: OperandInfo) -> int:
    """Bits of the largest raw magnitude of a fixed-point operand (|-128| = 2^7 < 2^8)."""
    return KINDS[info.type.type_id].bits


def check_exact(ctx: OperationContext, value_bits: int, pos: int, divisor: int = 1):
    """The fixed-point result, a magnitude below 2^value_bits at position ``pos`` (divided by
    ``divisor``), rescaled to output 0's position in 64-bit integers: both the shifted value
    and the divisor must fit, else the arithmetic would not be exact (InvalidArgument)."""
    out_pos = position(ctx.outputs[0])
    shift = out_pos - pos
    ctx.require(value_bits + max(0, shift) <= 62 and
                divisor.bit_length() + max(0, -shift) <= 62,
                f"output 0 has fixed-point position {out_pos}, {abs(shift)} bits from the "
                f"position {pos} of the exact result: the 64-bit arithmetic cannot rescale it "
                "exactly (bring the positions closer)")


def check_exact_sum(ctx: OperationContext, terms: int):
    """check_exact for a sum of ``terms`` products input 0 x input 1 plus the bias (input 2)."""
    if ctx.outputs[0].type == F32:
        return
    qa = position(ctx.inputs[0]) + position(ctx.inputs[1])
    bits = raw_bits(ctx.inputs[0]) + raw_bits(ctx.inputs[1]) + max(terms, 1).bit_length()
    p = qa
    if ctx.has_input(2):
        qb = position(ctx.inputs[2])
        p = max(qa, qb)
        bits = max(bits + p - qa, raw_bits(ctx.inputs[2]) + p - qb) + 1
    check_exact(ctx, bits, p)
