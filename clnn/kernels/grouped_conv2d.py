"""GROUPED_CONV_2D on OpenCL: the CONV_2D GEMM with one batch per group (conv2d.py).

Group g reads input channels [g * cg, (g + 1) * cg) through its own im2col block, multiplies
by its packed filter block and writes output channels [g * og, (g + 1) * og) with the fused
bias, activation and requantization of those channels. Float ones take the CONV_2D GEMM's
fusions (clnn/fusion/): a residual ADD and a RELU* / PRELU / LOGISTIC / HARD_SWISH after it
run in the epilogue (ShuffleNet's grouped 1x1 convolutions are each followed by one).
"""

from __future__ import annotations

from clnn.kernels import _gemm_variants
from clnn.kernels.conv2d import (
    epilogue_activations,
    gemm_signature,
    plan_conv_gemm,
    support_conv,
)
from clnn.kernels.registry import register_kernel
from hal.operations import grouped_conv2d as hal_grouped


def plan_grouped(ctx, b):
    p = hal_grouped.grouped_params(ctx)
    plan_conv_gemm(ctx, b, p, groups=int(p.extra[0]))


def select(ctx, node, device, decided) -> list:
    """The select pass's choice of the GEMM variant (clnn.passes.select)."""
    from clnn.passes.fusion import FusedNode

    p = hal_grouped.grouped_params(ctx)
    return [_gemm_variants.select(device, gemm_signature(
        ctx, node if node is not None else FusedNode(-1), p, groups=int(p.extra[0])))]


def epilogue_residual(ctx, channels: bool = False, clamped: bool = False,
                      pooled: bool = False) -> bool:
    """A residual of the output's shape (one of fewer channels, one added after the
    convolution's clamp, or a pooled one: no)."""
    return not channels and not clamped and not pooled


register_kernel("GROUPED_CONV_2D", family="grouped_conv2d", support=support_conv,
                plan=plan_grouped, select=select, epilogue_activations=epilogue_activations,
                epilogue_residual=epilogue_residual)
