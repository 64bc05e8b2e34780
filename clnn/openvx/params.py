"""The parameter structs of vx_khr_nn.h as dataclasses, field for field."""

from __future__ import annotations

from dataclasses import dataclass

from clnn.openvx.constants import (
    VX_CONVERT_POLICY_SATURATE,
    VX_NN_DS_SIZE_ROUNDING_FLOOR,
    VX_NN_POOLING_MAX,
    VX_ROUND_POLICY_TO_ZERO,
)

#: node inputs the header marks [static]: they become constants of the HAL model
STATIC_INPUTS = frozenset({"weights", "biases"})


@dataclass
class ConvolutionParams:
    """vx_nn_convolution_params_t. ``dilation_x``/``dilation_y`` count the zeros inserted
    between kernel elements (0: a dense kernel), as the header defines them."""

    padding_x: int = 0
    padding_y: int = 0
    overflow_policy: int = VX_CONVERT_POLICY_SATURATE
    rounding_policy: int = VX_ROUND_POLICY_TO_ZERO
    down_scale_size_rounding: int = VX_NN_DS_SIZE_ROUNDING_FLOOR
    dilation_x: int = 0
    dilation_y: int = 0


@dataclass
class DeconvolutionParams:
    """vx_nn_deconvolution_params_t: padding is subtracted from the output; ``a_x``/``a_y``
    pick one of the upscale's possible output sizes (0 <= a < upscale)."""

    padding_x: int = 0
    padding_y: int = 0
    overflow_policy: int = VX_CONVERT_POLICY_SATURATE
    rounding_policy: int = VX_ROUND_POLICY_TO_ZERO
    a_x: int = 0
    a_y: int = 0


@dataclass
class RoiPoolParams:
    """vx_nn_roi_pool_params_t: only VX_NN_POOLING_MAX is supported."""

    pool_type: int = VX_NN_POOLING_MAX
