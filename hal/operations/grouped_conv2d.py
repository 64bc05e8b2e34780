"""GROUPED_CONV_2D: input channels split in num_groups groups, each convolved with its own
depth_out / num_groups filters; the results concatenated.

| input | explicit padding form              | implicit padding form               |
|-------|------------------------------------|-------------------------------------|
| 0     | input [batches, h, w, depth_in]    | idem                                |
| 1     | filter [depth_out, fh, fw, depth_group] | idem                           |
| 2     | bias [depth_out]                   | idem                                |
| 3..6  | padding left, right, top, bottom   | 3: padding scheme (1 SAME, 2 VALID) |
| 7, 8  | stride width, height               | 4, 5: stride width, height          |
| 9     | number of groups                   | 6: number of groups                 |
| 10    | fused activation                   | 7: fused activation                 |
| 11    | NCHW layout (BOOL)                 | 8: NCHW layout (BOOL)               |

depth_in = num_groups * depth_group, depth_out divisible by num_groups. Types as CONV_2D, all
since 1.2 (QUANT8_ASYMM_SIGNED since 1.3); a per-channel filter has channel dimension 0.
"""

from __future__ import annotations

import numpy as np

from hal.operations.context import OperationContext
from hal.operations.conv2d import (
    BOOL,
    CONV_CONFIGS_V1_2,
    INT,
    centered,
    conv_result,
    conv_signatures,
    im2col,
    padded_input,
    parse_window,
    prepare_conv,
    validate_conv,
)
from hal.operations.registry import register

FORMS = [("V1_2", [INT] * 8 + [BOOL]), ("V1_2", [INT] * 5 + [BOOL])]
SIGNATURES = conv_signatures(CONV_CONFIGS_V1_2, FORMS)


def grouped_params(ctx):
    return parse_window(ctx, 3, ctx.num_inputs() == 12, extra_names=("number of groups",),
                        dilation=False)


def _check_groups(ctx, c, o, fc, g):
    if g is None or g <= 0:
        return
    if o:
        ctx.require(o % g == 0, f"input 1 (filter) has {o} output channels, not divisible by "
                    f"input {ctx.num_inputs() - 3} (number of groups) {g}")
    if c and fc:
        ctx.require(c == fc * g, f"input 0 depth {c} must equal filter depth {fc} * number "
                    f"of groups {g}")


def validate(ctx: OperationContext):
    p = grouped_params(ctx)
    validate_conv(ctx, p, 0, lambda c, f: _check_groups(ctx, c, f[0], f[3], p.extra[0]),
                  positive=("number of groups",), filter_in_channels=False)


def prepare(ctx: OperationContext):
    p = grouped_params(ctx)
    return prepare_conv(ctx, p, 0, lambda c, f: _check_groups(ctx, c, f[0], f[3], p.extra[0]),
                        positive=("number of groups",))


def execute(ctx: OperationContext):
    p = grouped_params(ctx)
    xp, (oh, ow) = padded_input(ctx, p)
    o, fh, fw, fc = ctx.inputs[1].shape
    g = p.extra[0]
    cols = im2col(xp, fh, fw, oh, ow, p)
    cols = cols.reshape(cols.shape[:3] + (fh * fw, g, fc))
    f = centered(ctx.inputs[1], ctx.input(1)).reshape(g, o // g, fh * fw, fc)
    # acc[n, y, x, g, q] = sum_{t, k} cols[n, y, x, t, g, k] * f[g, q, t, k]
    acc = np.einsum("nyxtgk,gqtk->nyxgq", cols, f, optimize=True)
    acc = acc.reshape(acc.shape[:3] + (o,))
    return conv_result(ctx, acc, p)


register("GROUPED_CONV_2D", execute, signatures=SIGNATURES, validate=validate,
         prepare=prepare, family="grouped_conv2d")
