"""org.clnn.openvx ACTIVATION (docs/openvx-extension.md): the header's nine functions
(LOGISTIC, HYPERBOLIC_TAN a*tanh(b*x), RELU, BRELU min(a, max(0, x)), SOFTRELU log(1+e^x),
ABS, SQUARE, SQRT, LINEAR a*x+b) on fixed-point or float tensors.

| input | meaning                                      |
|-------|----------------------------------------------|
| 0     | D input, rank 1 to 4                         |
| 1     | INT32 function (0 LOGISTIC ... 8 LINEAR)     |
| 2, 3  | FLOAT32 a, b                                 |
"""

from __future__ import annotations

from hal.operations import _openvx_misc_math as m
from hal.operations._openvx_ext import (
    F32,
    FLOAT,
    INT,
    check_data,
    check_enum,
    check_exact,
    data,
    op,
    out_args,
    position,
    raw_bits,
    signatures,
)
from hal.operations._openvx_fixed import ABS, ACTIVATION_NAMES, BRELU, RELU, SQUARE
from hal.operations.context import OperationContext
from hal.operations.registry import register

ACTIVATION = op("ACTIVATION")


def validate(ctx: OperationContext):
    check_data(ctx, {0: (1, 2, 3, 4)})
    check_enum(ctx, 1, len(ACTIVATION_NAMES), "activation function")
    prepare(ctx)  # the fixed-point range check


def prepare(ctx: OperationContext):
    x, fn = ctx.inputs[0], ctx.scalar(1)
    if x.type != F32 and fn in (RELU, BRELU, ABS):  # integer paths: |x| at x's position
        check_exact(ctx, raw_bits(x) + 1, position(x))
    elif x.type != F32 and fn == SQUARE:  # x^2 at twice x's position
        check_exact(ctx, 2 * raw_bits(x), 2 * position(x))
    return [ctx.input_shape(0)]


def execute(ctx: OperationContext):
    x, qx = data(ctx, 0)
    return [m.activation(x, qx, **out_args(ctx), function=int(ctx.scalar(1)),
                         a=float(ctx.scalar(2)), b=float(ctx.scalar(3)),
                         out_dtype=ctx.outputs[0].dtype)]


register(ACTIVATION, execute, signatures=signatures(1, [INT, FLOAT, FLOAT]), validate=validate,
         prepare=prepare, constant_inputs=range(1, 4), family="openvx_activation")
