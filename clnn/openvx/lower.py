"""Lowering a verified graph to ONE HAL model (docs/openvx-extension.md is the contract):
standard NNAPI operations where their semantics are the header's, the ``org.clnn.openvx``
extension's operations where they are not (every fixed-point node, and the float modes NNAPI
lacks).

Every OpenVX tensor becomes one HAL operand with the OpenVX dimensions reversed (OpenVX stores
width fastest, so HAL (N, C, H, W) is byte for byte [W, H, C, N]); rank 1 and rank 3 tensors get
a leading batch of 1 and nested batches fold into one, so that every operation sees the rank it
takes. Graph inputs and outputs
are moved between the two orders on the host (a transpose of the NumPy view, no arithmetic).
"""

from __future__ import annotations

import numpy as np

from clnn.openvx import hal_emit
from clnn.openvx.constants import (
    VX_ERROR_NOT_SUPPORTED,
    VX_FAILURE,
    VX_NN_ACTIVATION_ABS,
    VX_NN_ACTIVATION_BRELU,
    VX_NN_ACTIVATION_HYPERBOLIC_TAN,
    VX_NN_ACTIVATION_LOGISTIC,
    VX_NN_ACTIVATION_RELU,
    VX_NN_ACTIVATION_SQRT,
    VX_NN_NORMALIZATION_ACROSS_MAPS,
    VX_NN_POOLING_MAX,
    VxError,
)
from clnn.openvx.params import STATIC_INPUTS


def small(enum_value: int) -> int:
    """The contract's small integer of a VX enum: its offset from VX_ENUM_BASE (low 12 bits)."""
    return int(enum_value) & 0xFFF


def hal_dims(t, role: str = "") -> tuple[int, ...]:
    dims = tuple(reversed(t.shape))
    if role in STATIC_INPUTS:
        return dims
    if role == "input_rois":
        return dims if len(dims) == 3 else (1,) + dims
    if len(dims) > 4:  # nested batches (convolution) fold into one: the same bytes
        return (int(np.prod(dims[:-3])),) + dims[-3:]
    return (1,) + dims if len(dims) in (1, 3) else dims


class Lowered:
    """A graph's HAL model, prepared on the context's device; ``lowered_ops`` lists, per
    node, the HAL operations it became (standard names, or "org.clnn.openvx:NAME")."""

    def __init__(self, model, prepared, inputs, outputs, lowered_ops):
        self.model = model
        self.prepared = prepared
        self.inputs = inputs    # [(Tensor, hal dims)] in model input order
        self.outputs = outputs  # [Tensor] in model output order
        self.lowered_ops = lowered_ops

    def run(self) -> None:
        from hal.builder import make_request, read_outputs
        from hal.errors import ErrorStatus

        arrays = []
        for t, dims in self.inputs:
            if not t.has_data:
                raise VxError(VX_FAILURE, f"graph input {t!r} has no data")
            arrays.append(np.ascontiguousarray(t.read().T).reshape(dims))
        request = make_request(self.model, arrays)
        result = self.prepared.execute_synchronously(request)
        if result.status != ErrorStatus.NONE:
            raise VxError(VX_FAILURE, f"the device failed to run the graph: "
                          f"{result.message or result.status.name}")
        for t, out in zip(self.outputs, read_outputs(self.model, request,
                                                     result.output_shapes)):
            t.set_result(out.reshape(tuple(reversed(t.shape))).T)


def lower(graph, ordered) -> Lowered:
    em = hal_emit.Emitter()
    inputs, outputs, ops = [], [], []
    operand: dict[int, int] = {}

    def tensor_in(node, role, t):
        if id(t) in operand:  # written by an earlier node
            return operand[id(t)]
        dims = hal_dims(t, role)
        if node.kind == "fully_connected" and role == "inputs":
            dims = _fc_input_dims(node)  # a graph input: flattened on the host, for free
        if (id(t), dims) in operand:
            return operand[(id(t), dims)]
        if role in STATIC_INPUTS:
            i = em.constant(t, dims, np.ascontiguousarray(t.read().T).reshape(dims))
        else:
            i = em.input(t, dims)
            inputs.append((t, dims))
        operand[(id(t), dims)] = i
        return i

    written: dict[int, tuple[int, ...]] = {}  # HAL dims of the operands nodes write
    for node in ordered:
        ins = _Inputs(node, lambda role, t, node=node: tensor_in(node, role, t))
        out_t = node.output
        dims = _out_dims(node, written)
        out = em.tensor(out_t, dims)
        operand[id(out_t)] = out
        written[id(out_t)] = dims
        if not out_t.virtual:
            em.mark_output(out)
            outputs.append(out_t)
        ops.append((node.kind, LOWERINGS[node.kind](em, node, ins, out)))
    try:
        model = em.finish()
    except Exception as e:  # a lowering the HAL rejects is a bug here, said as a VX failure
        raise VxError(VX_FAILURE, f"the lowered HAL model is invalid: {e}") from e
    device = graph.context.device
    try:
        prepared = device.prepare_model(model)
    except Exception as e:
        raise VxError(VX_ERROR_NOT_SUPPORTED, f"the device cannot prepare the graph: "
                      f"{getattr(e, 'reason', None) or e}") from e
    return Lowered(model, prepared, inputs, outputs, ops)


class _Inputs:
    """A node's input operands, each made on first use: a float convolution passes its
    weights as a transposed constant of its own, and the OpenVX layout's would be unused."""

    def __init__(self, node, make):
        self._node, self._make = node, make

    def __contains__(self, role):
        return self._node.inputs.get(role) is not None

    def __getitem__(self, role):
        return self._make(role, self._node.inputs[role])


# -------------------------------------------------------------------------- per node
def _float(node) -> bool:
    return not node.output.is_fixed_point


def _bias_or_omitted(em, node, ins, standard: bool, ofm: int):
    if "biases" in ins:
        return ins["biases"]
    if standard:  # NNAPI's float ops need a bias: a zero one adds nothing
        return em.float_constant(np.zeros(ofm, np.float32))
    return em.omitted(node.output)


def lower_convolution(em, node, ins, out):
    p = node.params["convolution_params"]
    d = node.derived
    w = node.inputs["weights"]
    kx, ky, _, ofm = w.shape
    if _float(node) and d["bias_layout"] != "unshared":
        x_in, y_in = node.inputs["inputs"].shape[:2]
        ext_x, ext_y = kx + (kx - 1) * p.dilation_x, ky + (ky - 1) * p.dilation_y
        # ceiling rounding: zeros past the end make the last window fit, as OpenVX's padding
        extra_x = max(0, (d["out_w"] - 1) * d["skip_x"] + ext_x - (x_in + 2 * p.padding_x))
        extra_y = max(0, (d["out_h"] - 1) * d["skip_y"] + ext_y - (y_in + 2 * p.padding_y))
        filt = em.float_constant(np.ascontiguousarray(w.read().T.transpose(0, 2, 3, 1)))
        bias = _bias_or_omitted(em, node, ins, True, ofm)
        em.op("CONV_2D", [ins["inputs"], filt, bias,
                          *em.ints(p.padding_x, p.padding_x + extra_x, p.padding_y,
                                   p.padding_y + extra_y, d["skip_x"], d["skip_y"], 0),
                          em.boolean(True), *em.ints(p.dilation_x + 1, p.dilation_y + 1)], out)
        return ["CONV_2D"]
    bias = _bias_or_omitted(em, node, ins, False, ofm)
    return em.ext_op("CONVOLUTION", [
        ins["inputs"], ins["weights"], bias,
        *em.ints(p.padding_x, p.padding_y, d["skip_x"], d["skip_y"], p.dilation_x,
                 p.dilation_y, small(p.overflow_policy), small(p.rounding_policy),
                 small(p.down_scale_size_rounding))], out)


def _fc_input_dims(node) -> tuple[int, int]:
    """(N, #IFM) of a fully connected node's input: OpenVX flattens [width, height, #IFM]
    with width fastest, which is the row-major order of HAL (C, H, W); nested batches fold
    into N (the first batch dimension fastest: row-major order again)."""
    return (node.derived["batch"] or 1, int(np.prod(node.derived["features"])))


def _out_dims(node, written) -> tuple[int, ...]:
    """The HAL dims of a node's output: the OpenVX dims reversed, except where the operand it
    reads has other dims (element-wise nodes keep them) and for a fixed-point fully connected
    node reading an image computed in the graph, lowered as a convolution (N, OFM, 1, 1)."""
    x = node.inputs.get("inputs")
    if x is not None and id(x) in written:
        if node.kind == "softmax" and len(x.shape) > 2 and written[id(x)] != hal_dims(x):
            raise VxError(VX_ERROR_NOT_SUPPORTED, "softmax node: its rank-"
                          f"{len(x.shape)} input is a fully connected output with nested "
                          "batches, held as [#batches, #OFM]: dimension 2 has no axis there")
        if node.kind in ("activation", "softmax", "local_response_normalization"):
            return written[id(x)]
        if node.kind == "fully_connected" and not _float(node) and len(written[id(x)]) == 4:
            if len(node.derived["features"]) != 3:
                raise VxError(VX_ERROR_NOT_SUPPORTED, "fully connected node: a fixed-point "
                              "[#IFM, #batches...] input computed in the graph with three "
                              "batch dimensions has no (N, #IFM) form here (give it as a "
                              "graph input, or as [width, height, #IFM, #batches])")
            node.derived["as_convolution"] = written[id(x)]
            return (written[id(x)][0], node.inputs["weights"].shape[1], 1, 1)
    node.derived.pop("as_convolution", None)
    if node.kind == "fully_connected":  # (N, #OFM): nested batches fold, the same bytes
        return (node.derived["batch"] or 1, node.inputs["weights"].shape[1])
    return hal_dims(node.output)


def lower_fully_connected(em, node, ins, out):
    w = node.inputs["weights"]
    ofm = w.shape[1]
    if _float(node):
        bias = _bias_or_omitted(em, node, ins, True, ofm)
        em.op("FULLY_CONNECTED", [ins["inputs"], ins["weights"], bias, *em.ints(0)], out)
        return ["FULLY_CONNECTED"]
    bias = _bias_or_omitted(em, node, ins, False, ofm)
    policies = em.ints(small(node.params["overflow_policy"]),
                       small(node.params["rounding_policy"]))
    image = node.derived.get("as_convolution")
    if image is not None:
        # The extension's FULLY_CONNECTED takes (N, IFM) and RESHAPE takes no extension type,
        # so an image computed in the graph meets weights shaped as one kernel covering it:
        # the same sum of products, bias and conversion (OpenVX flattens width fastest, the
        # row-major order of (C, H, W)).
        kernel = (ofm,) + tuple(image[1:])
        weights = em.constant(w, kernel, np.ascontiguousarray(w.read().T).reshape(kernel))
        return em.ext_op("CONVOLUTION", [ins["inputs"], weights, bias,
                                         *em.ints(0, 0, 1, 1, 0, 0), *policies,
                                         *em.ints(0)], out)
    return em.ext_op("FULLY_CONNECTED", [ins["inputs"], ins["weights"], bias, *policies], out)


def lower_pooling(em, node, ins, out):
    pr, d = node.params, node.derived
    kx, ky = pr["pooling_size_x"], pr["pooling_size_y"]
    px, py = pr["pooling_padding_x"], pr["pooling_padding_y"]
    x_in, y_in = node.inputs["inputs"].shape[:2]
    overhang = (d["out_w"] - 1) * d["skip_x"] + kx > x_in \
        or (d["out_h"] - 1) * d["skip_y"] + ky > y_in
    if _float(node) and px == py == 0 and not overhang:
        # no padding and no window past the end: NNAPI's pools are the header's
        name = "MAX_POOL_2D" if pr["pooling_type"] == VX_NN_POOLING_MAX else "AVERAGE_POOL_2D"
        em.op(name, [ins["inputs"], *em.ints(0, 0, 0, 0, d["skip_x"], d["skip_y"], kx, ky, 0),
                     em.boolean(True)], out)
        return [name]
    return em.ext_op("POOLING", [ins["inputs"], *em.ints(
        small(pr["pooling_type"]), kx, ky, px, py, d["skip_x"], d["skip_y"],
        small(pr["rounding"]))], out)


def _hal_axis(node, vx_dim: int, t) -> int:
    return len(hal_dims(t)) - 1 - vx_dim


def lower_softmax(em, node, ins, out):
    axis = _hal_axis(node, node.derived["axis"], node.inputs["inputs"])
    if _float(node):
        em.op("SOFTMAX", [ins["inputs"], em.float32(1.0), *em.ints(axis)], out)
        return ["SOFTMAX"]
    return em.ext_op("SOFTMAX", [ins["inputs"], *em.ints(axis)], out)


def lower_lrn(em, node, ins, out):
    pr = node.params
    n = pr["normalization_size"]
    if _float(node) and pr["type"] == VX_NN_NORMALIZATION_ACROSS_MAPS:
        # NNAPI: x / (bias + alpha * sum)^beta over [c - radius, c + radius]; OpenVX divides
        # alpha by n
        em.op("LOCAL_RESPONSE_NORMALIZATION", [
            ins["inputs"], *em.ints((n - 1) // 2), em.float32(pr["bias"]),
            em.float32(pr["alpha"] / n), em.float32(pr["beta"]), *em.ints(1)], out)
        return ["LOCAL_RESPONSE_NORMALIZATION"]
    return em.ext_op("LRN", [ins["inputs"], *em.ints(small(pr["type"]), n),
                             em.float32(pr["alpha"]), em.float32(pr["beta"]),
                             em.float32(pr["bias"])], out)


_STANDARD_ACTIVATIONS = {VX_NN_ACTIVATION_LOGISTIC: "LOGISTIC", VX_NN_ACTIVATION_RELU: "RELU",
                         VX_NN_ACTIVATION_ABS: "ABS", VX_NN_ACTIVATION_SQRT: "SQRT"}


def lower_activation(em, node, ins, out):
    f, a, b = node.params["function"], node.params["a"], node.params["b"]
    name = _STANDARD_ACTIVATIONS.get(f)
    if f == VX_NN_ACTIVATION_HYPERBOLIC_TAN and a == 1 and b == 1:
        name = "TANH"
    if f == VX_NN_ACTIVATION_BRELU and a == 6:  # (RELU1 clamps to [-1, 1]: not BRELU a = 1)
        name = "RELU6"
    if _float(node) and name is not None:
        em.op(name, [ins["inputs"]], out)
        return [name]
    return em.ext_op("ACTIVATION", [ins["inputs"], *em.ints(small(f)), em.float32(a),
                                    em.float32(b)], out)


def lower_roi_pooling(em, node, ins, out):
    pw, ph = node.output.shape[:2]
    return em.ext_op("ROI_POOLING", [
        ins["input_data"], ins["input_rois"],
        *em.ints(small(node.params["roi_pool_params"].pool_type), pw, ph)], out)


def lower_deconvolution(em, node, ins, out):
    p = node.params["deconvolution_params"]
    d = node.derived
    bias = _bias_or_omitted(em, node, ins, False, node.inputs["weights"].shape[3])
    return em.ext_op("DECONVOLUTION", [
        ins["inputs"], ins["weights"], bias,
        *em.ints(p.padding_x, p.padding_y, d["upscale_x"], d["upscale_y"], p.a_x, p.a_y,
                 small(p.overflow_policy), small(p.rounding_policy))], out)


LOWERINGS = {"convolution": lower_convolution, "fully_connected": lower_fully_connected,
             "pooling": lower_pooling, "softmax": lower_softmax,
             "local_response_normalization": lower_lrn, "activation": lower_activation,
             "roi_pooling": lower_roi_pooling, "deconvolution": lower_deconvolution}
