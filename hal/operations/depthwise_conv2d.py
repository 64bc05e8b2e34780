"""DEPTHWISE_CONV_2D: one filter per input channel, depth_out = depth_in * depth_multiplier.

| input | explicit padding form              | implicit padding form               |
|-------|------------------------------------|-------------------------------------|
| 0     | input [batches, h, w, depth_in]    | idem                                |
| 1     | filter [1, fh, fw, depth_out]      | idem                                |
| 2     | bias [depth_out]                   | idem                                |
| 3..6  | padding left, right, top, bottom   | 3: padding scheme (1 SAME, 2 VALID) |
| 7, 8  | stride width, height               | 4, 5: stride width, height          |
| 9     | depth multiplier                   | 6: depth multiplier                 |
| 10    | fused activation                   | 7: fused activation                 |
| 11    | NCHW layout (BOOL, since 1.2)      | 8: NCHW layout (BOOL, since 1.2)    |
| 12,13 | dilation width, height (1.2)       | 9, 10: dilation width, height (1.2) |

Types as CONV_2D (conv2d.CONV_CONFIGS); a per-channel filter has channel dimension 3.
output[b, i, j, k * m + q] = sum_{di, dj} input[b, ., ., k] * filter[0, di, dj, k * m + q] + bias.
"""

from __future__ import annotations

import numpy as np

from hal.operations.context import OperationContext
from hal.operations.conv2d import (
    BOOL,
    CONV_CONFIGS,
    INT,
    centered,
    conv_result,
    conv_signatures,
    depthwise_upward,
    padded_input,
    parse_window,
    prepare_conv,
    validate_conv,
    windows,
)
from hal.operations.registry import register

FORMS = [("V1_0", [INT] * 8), ("V1_2", [INT] * 8 + [BOOL]),
         ("V1_2", [INT] * 8 + [BOOL, INT, INT]),
         ("V1_0", [INT] * 5), ("V1_2", [INT] * 5 + [BOOL]),
         ("V1_2", [INT] * 5 + [BOOL, INT, INT])]
SIGNATURES = conv_signatures(CONV_CONFIGS, FORMS)


def depthwise_params(ctx):
    explicit = ctx.num_inputs() >= 11 and ctx.input_type(8) == INT
    return parse_window(ctx, 3, explicit, extra_names=("depth multiplier",))


def _check_depth(ctx, c, o, m):
    if m is not None and 0 not in (c, o):
        ctx.require(o == c * m, f"input 1 (filter) has {o} output channels, expected depth_in "
                    f"{c} * depth multiplier {m}")


def validate(ctx: OperationContext):
    p = depthwise_params(ctx)

    def check_filter(c, f):
        ctx.require(f[0] in (0, 1), f"input 1 (filter) must have a first dimension of 1, got "
                    f"{f[0]}")
        _check_depth(ctx, c, f[3], p.extra[0])

    validate_conv(ctx, p, 3, check_filter, positive=("depth multiplier",),
                  filter_in_channels=False)


def prepare(ctx: OperationContext):
    p = depthwise_params(ctx)
    return prepare_conv(ctx, p, 3, lambda c, f: _check_depth(ctx, c, f[3], p.extra[0]),
                        positive=("depth multiplier",))


def execute(ctx: OperationContext):
    p = depthwise_params(ctx)
    xp, (oh, ow) = padded_input(ctx, p)
    _, fh, fw, o = ctx.inputs[1].shape
    m = p.extra[0]
    if m > 1:
        xp = np.repeat(xp, m, axis=-1)
    f = centered(ctx.inputs[1], ctx.input(1))[0]
    acc = np.zeros((xp.shape[0], oh, ow, o), dtype=np.float64)
    for i, j, s in windows(xp, fh, fw, oh, ow, p):
        acc += s * f[i, j]
    return conv_result(ctx, acc, p, depthwise_upward(ctx.inputs[0], o))


register("DEPTHWISE_CONV_2D", execute, signatures=SIGNATURES, validate=validate,
         prepare=prepare, family="depthwise_conv2d")
