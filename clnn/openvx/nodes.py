"""The eight node-creation functions of vx_khr_nn.h, with the header's parameter names.

Creating a node checks only that its tensors are tensors of the graph's context (a wrong
reference is VX_ERROR_INVALID_REFERENCE at once); every other check runs in Graph.verify, as
OpenVX kernels validate their parameters there (clnn.openvx.checks).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clnn.openvx.constants import (
    VX_ERROR_INVALID_PARAMETERS,
    VX_ERROR_INVALID_REFERENCE,
    VX_ERROR_INVALID_SCOPE,
    VX_KERNEL_ACTIVATION_LAYER,
    VX_KERNEL_CONVOLUTION_LAYER,
    VX_KERNEL_DECONVOLUTION_LAYER,
    VX_KERNEL_FULLY_CONNECTED_LAYER,
    VX_KERNEL_LOCAL_RESPONSE_NORMALIZATION_LAYER,
    VX_KERNEL_POOLING_LAYER,
    VX_KERNEL_ROI_POOLING_LAYER,
    VX_KERNEL_SOFTMAX_LAYER,
    VX_SUCCESS,
    VxError,
)
from clnn.openvx.params import ConvolutionParams, DeconvolutionParams, RoiPoolParams
from clnn.openvx.tensor import Tensor


@dataclass(eq=False)
class Node:
    """vx_node. ``inputs``/``outputs`` name the header's tensor parameters; ``params`` the
    scalar ones; ``derived`` holds what verify works out (skips, upscales, output size)."""

    graph: object
    kind: str
    kernel: int
    inputs: dict
    outputs: dict
    params: dict
    status: int = VX_SUCCESS
    derived: dict = field(default_factory=dict)

    def __repr__(self):
        return f"<node {self.kind} #{self.graph.nodes.index(self)}>"

    @property
    def output(self) -> Tensor:
        return next(iter(self.outputs.values()))


def _tensor(graph, name: str, t, optional: bool = False):
    if t is None and optional:
        return None
    if not isinstance(t, Tensor):
        raise VxError(VX_ERROR_INVALID_REFERENCE, f"{name} is not a tensor (got "
                      f"{type(t).__name__})")
    if t.context is not graph.context:
        raise VxError(VX_ERROR_INVALID_SCOPE, f"{name} belongs to another context")
    if t.virtual and t.graph is not graph:
        raise VxError(VX_ERROR_INVALID_SCOPE,
                      f"{name} is a virtual tensor of another graph")
    return t


def _add(graph, kind, kernel, inputs, outputs, params) -> Node:
    from clnn.openvx.graph import Graph

    if not isinstance(graph, Graph):
        raise VxError(VX_ERROR_INVALID_REFERENCE, f"{graph!r} is not a Graph")
    ins = {k: _tensor(graph, k, t, optional=k == "biases") for k, t in inputs.items()}
    outs = {k: _tensor(graph, k, t) for k, t in outputs.items()}
    node = Node(graph, kind, kernel, ins, outs, params)
    graph._add_node(node)
    return node


def convolution_layer(graph, inputs, weights, biases, convolution_params: ConvolutionParams,
                      outputs) -> Node:
    """vxConvolutionLayer: weights [kernel_x, kernel_y, #IFM, #OFM]; biases None, [#OFM] or
    [width, height, #OFM] (unshared); the skip (stride) follows from the output size."""
    if not isinstance(convolution_params, ConvolutionParams):
        raise VxError(VX_ERROR_INVALID_PARAMETERS,
                      "convolution_params is not a ConvolutionParams")
    return _add(graph, "convolution", VX_KERNEL_CONVOLUTION_LAYER,
                {"inputs": inputs, "weights": weights, "biases": biases},
                {"outputs": outputs}, {"convolution_params": convolution_params})


def fully_connected_layer(graph, inputs, weights, biases, overflow_policy: int,
                          rounding_policy: int, outputs) -> Node:
    """vxFullyConnectedLayer: inputs [#IFM(, #batches)] or [width, height, #IFM(, #batches)]
    (flattened with width fastest), weights [#IFM, #OFM], biases None or [#OFM]."""
    return _add(graph, "fully_connected", VX_KERNEL_FULLY_CONNECTED_LAYER,
                {"inputs": inputs, "weights": weights, "biases": biases},
                {"outputs": outputs},
                {"overflow_policy": overflow_policy, "rounding_policy": rounding_policy})


def pooling_layer(graph, inputs, pooling_type: int, pooling_size_x: int, pooling_size_y: int,
                  pooling_padding_x: int, pooling_padding_y: int, rounding: int,
                  outputs) -> Node:
    """vxPoolingLayer: max or average over a pooling_size rectangle of the zero-padded input;
    the skip follows from the output size."""
    return _add(graph, "pooling", VX_KERNEL_POOLING_LAYER, {"inputs": inputs},
                {"outputs": outputs},
                {"pooling_type": pooling_type, "pooling_size_x": pooling_size_x,
                 "pooling_size_y": pooling_size_y, "pooling_padding_x": pooling_padding_x,
                 "pooling_padding_y": pooling_padding_y, "rounding": rounding})


def softmax_layer(graph, inputs, outputs) -> Node:
    """vxSoftmaxLayer: over dimension 0 for rank 1 and 2, over dimension 2 (classes) for rank
    3 and 4."""
    return _add(graph, "softmax", VX_KERNEL_SOFTMAX_LAYER, {"inputs": inputs},
                {"outputs": outputs}, {})


def local_response_normalization_layer(graph, inputs, type: int, normalization_size: int,  # noqa: A002
                                       alpha: float, beta: float, bias: float,
                                       outputs) -> Node:
    """vxLocalResponseNormalizationLayer: x / (bias + alpha / n * sum(x^2))^beta over a
    normalization_size window within the map (n = size^2) or across maps (n = size)."""
    return _add(graph, "local_response_normalization",
                VX_KERNEL_LOCAL_RESPONSE_NORMALIZATION_LAYER, {"inputs": inputs},
                {"outputs": outputs},
                {"type": type, "normalization_size": normalization_size, "alpha": alpha,
                 "beta": beta, "bias": bias})


def activation_layer(graph, inputs, function: int, a: float, b: float, outputs) -> Node:
    """vxActivationLayer: outputs = function(inputs, a, b) element by element."""
    return _add(graph, "activation", VX_KERNEL_ACTIVATION_LAYER, {"inputs": inputs},
                {"outputs": outputs}, {"function": function, "a": a, "b": b})


def roi_pooling_layer(graph, input_data, input_rois, roi_pool_params: RoiPoolParams,
                      output_arr) -> Node:
    """vxROIPoolingLayer: input_rois [4, roi_count(, #batches)] holds (start_x, start_y,
    end_x, end_y) per rectangle in input pixels, the same data type as input_data;
    output_arr [pooled_width, pooled_height, #IFM, roi_count * #batches] (rectangle r of
    batch n at n * roi_count + r)."""
    if not isinstance(roi_pool_params, RoiPoolParams):
        raise VxError(VX_ERROR_INVALID_PARAMETERS, "roi_pool_params is not a RoiPoolParams")
    return _add(graph, "roi_pooling", VX_KERNEL_ROI_POOLING_LAYER,
                {"input_data": input_data, "input_rois": input_rois},
                {"output_arr": output_arr}, {"roi_pool_params": roi_pool_params})


def deconvolution_layer(graph, inputs, weights, biases,
                        deconvolution_params: DeconvolutionParams, outputs) -> Node:
    """vxDeconvolutionLayer: weights [width, height, #IFM, #OFM], biases None or [#OFM]; the
    upscale follows from the output size."""
    if not isinstance(deconvolution_params, DeconvolutionParams):
        raise VxError(VX_ERROR_INVALID_PARAMETERS,
                      "deconvolution_params is not a DeconvolutionParams")
    return _add(graph, "deconvolution", VX_KERNEL_DECONVOLUTION_LAYER,
                {"inputs": inputs, "weights": weights, "biases": biases},
                {"outputs": outputs}, {"deconvolution_params": deconvolution_params})
