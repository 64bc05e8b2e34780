"""clnn.openvx: the OpenVX neural-network extension (Khronos ``vx_khr_nn.h``) in Python.

    import numpy as np
    from clnn import openvx as vx

    ctx = vx.Context(device="opencl")                  # or "reference", or a HAL Device
    g = vx.Graph(ctx)
    x = ctx.create_tensor([8, 8, 3, 1], vx.VX_TYPE_FLOAT32)      # [width, height, IFM, N]
    w = ctx.create_tensor([3, 3, 3, 4], vx.VX_TYPE_FLOAT32)      # [kx, ky, IFM, OFM]
    w.write(np.random.rand(3, 3, 3, 4).astype(np.float32))
    y = ctx.create_tensor([8, 8, 4, 1], vx.VX_TYPE_FLOAT32)
    vx.convolution_layer(g, x, w, None, vx.ConvolutionParams(padding_x=1, padding_y=1), y)
    g.verify()                                         # raises VxError with a vx_status
    x.write(np.random.rand(8, 8, 3, 1).astype(np.float32))
    g.process()
    print(y.read().shape)                              # (8, 8, 4, 1)

Shapes follow the header: dimensions in OpenVX order, fastest-varying first ([width, height,
#IFM, #batches]); NumPy arrays read and written are indexed the same way (``a[x, y, c, n]``).
Data types: VX_TYPE_FLOAT32, and fixed point VX_TYPE_INT8, VX_TYPE_INT16, VX_TYPE_UINT8 with a
fixed point position q (real value = raw * 2**-q; ``write_values`` / ``read_values`` convert).

Nodes (the header's vxXxxLayer with its parameter names; the C API's ``size_of_*`` arguments
are dropped, the params dataclass is the struct): :func:`convolution_layer`,
:func:`fully_connected_layer`, :func:`pooling_layer`, :func:`softmax_layer`,
:func:`local_response_normalization_layer`, :func:`activation_layer`,
:func:`roi_pooling_layer`, :func:`deconvolution_layer`; parameter structs
:class:`ConvolutionParams`, :class:`DeconvolutionParams`, :class:`RoiPoolParams`; every VX_*
enumeration of the header (and the core policies and statuses it uses) as a constant.

``Graph.verify()`` checks every node as the header states (a failure is :class:`VxError` with
the status: VX_ERROR_INVALID_PARAMETERS, VX_ERROR_INVALID_DIMENSION, VX_ERROR_INVALID_FORMAT,
VX_ERROR_NOT_SUPPORTED, VX_ERROR_MULTIPLE_WRITERS, VX_ERROR_INVALID_GRAPH), infers the shapes
of virtual tensors (``graph.create_virtual_tensor``), derives the skips and upscales the
header computes from the output sizes, and lowers the graph to ONE HAL model (clnn.openvx.lower
and docs/openvx-extension.md: standard NNAPI operations where the semantics are identical,
the ``org.clnn.openvx`` extension's where they are not) prepared on the context's device.
``Graph.process()`` runs it; the prepared model is reused until a node is added or a [static]
tensor (weights, biases) is written again.
"""

from clnn.openvx.constants import *  # noqa: F403 (the header's VX_* names)
from clnn.openvx.constants import VxError
from clnn.openvx.graph import Graph
from clnn.openvx.nodes import (
    Node,
    activation_layer,
    convolution_layer,
    deconvolution_layer,
    fully_connected_layer,
    local_response_normalization_layer,
    pooling_layer,
    roi_pooling_layer,
    softmax_layer,
)
from clnn.openvx.params import ConvolutionParams, DeconvolutionParams, RoiPoolParams
from clnn.openvx.tensor import Context, Tensor

__all__ = ["Context", "ConvolutionParams", "DeconvolutionParams", "Graph", "Node",
           "RoiPoolParams", "Tensor", "VxError", "activation_layer", "convolution_layer",
           "deconvolution_layer", "fully_connected_layer",
           "local_response_normalization_layer", "pooling_layer", "roi_pooling_layer",
           "softmax_layer"]
