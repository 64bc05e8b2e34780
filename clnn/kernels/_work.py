"""FLOP of an operation (2 per multiply-add of the mathematical operation, for the
compute-bound families) and its bytes: ``clnn run --profile``'s roofline
(clnn/bench/roofline.py) and the launches' work-group choice on CPUs (clnn/launch/) count
alike. A leaf module: it imports nothing of clnn."""

from __future__ import annotations

import math

COMPUTE = ("CONV_2D", "DEPTHWISE_CONV_2D", "GROUPED_CONV_2D", "TRANSPOSE_CONV_2D",
           "FULLY_CONNECTED", "BATCH_MATMUL")


def _elems(shape) -> int:
    return math.prod(int(d) for d in shape) if shape else 1


def op_flop(type_name: str, in_shapes: list, out_shapes: list) -> int:
    """FLOP of one operation of a compute-bound family (0 for the others or unknown
    shapes)."""
    if type_name not in COMPUTE or not out_shapes or not in_shapes or len(in_shapes) < 2:
        return 0
    out, x, w = out_shapes[0], in_shapes[0], in_shapes[1]
    if not out or not w or not x:
        return 0
    n_out = _elems(out)
    if type_name in ("CONV_2D", "GROUPED_CONV_2D"):  # filter [O, fh, fw, C / groups]
        return 2 * n_out * w[1] * w[2] * w[3]
    if type_name == "DEPTHWISE_CONV_2D":  # filter [1, fh, fw, C * multiplier]
        return 2 * n_out * w[1] * w[2]
    if type_name == "TRANSPOSE_CONV_2D":  # every input pixel scatters C * O * fh * fw MACs
        return 2 * _elems(x) * w[0] * w[1] * w[2]
    if type_name == "FULLY_CONNECTED":  # weights [units, input size]
        return 2 * n_out * w[1]
    # BATCH_MATMUL: [..., M, K] x [..., K, N] (either transposed): K is the dimension of x
    # that is not an output row count
    k = x[-1] if x[-2] == out[-2] else x[-2]
    return 2 * n_out * k
