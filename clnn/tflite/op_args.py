"""Reading a TFLite operator's arguments for the converters of :mod:`clnn.tflite.ops`, each
checked where it is read: options fields, padding codes, tensor ranks, constant input
lengths, and the fewest inputs each operator reads (``MIN_INPUTS``). A failed check raises
TfliteImportError naming the operator (through ``imp.fail``)."""

from __future__ import annotations

import struct

import numpy as np

from clnn.tflite.errors import TfliteImportError

#: TFLite Padding (SAME=0, VALID=1) -> NNAPI PaddingCode
PADDING = {0: 1, 1: 2}
#: TfLitePadding of the C API (custom options): kTfLitePaddingSame=1, kTfLitePaddingValid=2
C_PADDING = {1: 1, 2: 2}


def opt(op, name, default=0):
    o = op.options
    if o is None or not hasattr(o, name):
        return default
    try:
        return getattr(o, name)()
    except struct.error:  # a field the structural check cannot size (unknown options table)
        raise TfliteImportError(f"operator {op.index} ({op.name}): option {name} lies outside "
                                "the file") from None


def padding(imp, op, code=None) -> int:
    """The NNAPI padding code of a TFLite Padding option (SAME=0, VALID=1)."""
    code = opt(op, "Padding") if code is None else code
    if code not in PADDING:
        imp.fail(f"padding {code} is neither SAME (0) nor VALID (1)")
    return PADDING[code]


def rank(imp, ti, n, what) -> tuple[int, ...]:
    """The shape of tensor ``ti``, which must have rank ``n``."""
    shape = imp.shape(ti)
    if len(shape) != n:
        imp.fail(f"{what} (tensor {ti}) has rank {len(shape)}, expected {n}")
    return shape


def arg(op, k) -> int:
    return op.inputs[k] if k < len(op.inputs) else -1


def int_list(imp, op, k, what, count=None, pairs=False) -> list[int]:
    """The values of constant input ``k``: exactly ``count`` of them, or an even number."""
    values = [int(v) for v in np.asarray(imp.constant_of(arg(op, k), what)).reshape(-1)]
    if count is not None and len(values) != count:
        imp.fail(f"{what} (tensor {arg(op, k)}) holds {len(values)} values, expected {count}")
    if pairs and len(values) % 2:
        imp.fail(f"{what} (tensor {arg(op, k)}) holds {len(values)} values, not pairs")
    return values


#: the fewest inputs each operator reads (outputs: at least one, SPLIT: NumSplits)
MIN_INPUTS = {
    "CONV_2D": 2, "DEPTHWISE_CONV_2D": 2, "TRANSPOSE_CONV": 3,
    "CUSTOM:Convolution2DTransposeBias": 2, "FULLY_CONNECTED": 2, "ADD": 2, "SUB": 2, "MUL": 2,
    "DIV": 2, "MAXIMUM": 2, "MINIMUM": 2, "POW": 2, "PRELU": 2, "PAD": 2, "PADV2": 2,
    "RESIZE_BILINEAR": 2, "RESIZE_NEAREST_NEIGHBOR": 2, "MEAN": 2, "SUM": 2, "REDUCE_MAX": 2,
    "REDUCE_MIN": 2, "REDUCE_PROD": 2, "REDUCE_ANY": 2, "STRIDED_SLICE": 4, "SLICE": 3,
    "TRANSPOSE": 2, "GATHER": 2, "SPLIT": 2, "SPLIT_V": 3, "ARG_MAX": 2, "ARG_MIN": 2,
    "BATCH_MATMUL": 2, "SPACE_TO_BATCH_ND": 2, "BATCH_TO_SPACE_ND": 2, "LESS": 2,
    "LESS_EQUAL": 2, "GREATER": 2, "GREATER_EQUAL": 2, "EQUAL": 2, "NOT_EQUAL": 2,
}
