"""Graph.verify's per-node checks: parameters, data types and dimensions as vx_khr_nn.h states
them, and the output dimensions of every node (which fill in virtual tensors).

Each check returns the output's dimensions and stores what lowering needs in ``node.derived``
(skips, upscales, effective paddings). A failure is a VxError with the header's status:
VX_ERROR_INVALID_PARAMETERS for a bad scalar parameter, VX_ERROR_INVALID_FORMAT for a data
type, VX_ERROR_INVALID_DIMENSION for a shape, VX_ERROR_NOT_SUPPORTED for what the header
allows implementations to refuse (ROI pooling other than max).
"""

from __future__ import annotations

import math

import numpy as np

from clnn.openvx.constants import (
    ACTIVATIONS,
    CONVERT_POLICIES,
    DATA_TYPES,
    NORMALIZATION_TYPES,
    POOLING_TYPES,
    ROUND_POLICIES,
    SIZE_ROUNDINGS,
    VX_ERROR_INVALID_DIMENSION,
    VX_ERROR_INVALID_FORMAT,
    VX_ERROR_INVALID_PARAMETERS,
    VX_ERROR_NOT_SUPPORTED,
    VX_NN_ACTIVATION_BRELU,
    VX_NN_ACTIVATION_HYPERBOLIC_TAN,
    VX_NN_ACTIVATION_LINEAR,
    VX_NN_DS_SIZE_ROUNDING_CEILING,
    VX_NN_POOLING_MAX,
    VxError,
)


def _fail(status, node, msg):
    raise VxError(status, f"{node.kind} node: {msg}")


def _dims(node, name) -> tuple[int, ...]:
    t = node.inputs[name]
    if t.shape is None:
        _fail(VX_ERROR_INVALID_DIMENSION, node, f"{name} has unknown dimensions (a virtual "
              "tensor that no earlier node writes)")
    return t.shape


def _enum(node, name, table, what):
    v = node.params[name] if name in node.params else None
    if v not in table:
        _fail(VX_ERROR_INVALID_PARAMETERS, node, f"{name} {v!r} is not a {what}")
    return v


def _size(node, name, value, minimum=0):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        _fail(VX_ERROR_INVALID_PARAMETERS, node,
              f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _positive(node, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
            or not math.isfinite(value) or value <= 0:
        _fail(VX_ERROR_INVALID_PARAMETERS, node, f"{name} must be positive, got {value!r}")
    return float(value)


def _same_type(node, names):
    tensors = [(n, t) for n, t in list(node.inputs.items()) + list(node.outputs.items())
               if t is not None and n in names]
    first_name, first = tensors[0]
    for n, t in tensors[1:]:
        if t.data_type != first.data_type:
            _fail(VX_ERROR_INVALID_FORMAT, node, f"{n} is VX_TYPE_{DATA_TYPES[t.data_type]} "
                  f"but {first_name} is VX_TYPE_{DATA_TYPES[first.data_type]}")


def _rank(node, name, dims, ranks):
    if len(dims) not in ranks:
        _fail(VX_ERROR_INVALID_DIMENSION, node, f"{name} has {len(dims)} dimensions "
              f"{list(dims)}, expected {' or '.join(map(str, ranks))}")


def _known_out(node):
    """The output's dimensions as far as known: None (unknown rank) or a tuple with 0 for an
    unknown entry."""
    return node.output.dims


def _downscale(node, axis, size_in, pad, kernel_extent, out_known, rounding):
    """The skip and output size of one spatial axis: out = round((in + 2p - k_eff) / skip + 1);
    with a known output the smallest skip that gives it, else skip 1."""
    span = size_in + 2 * pad - kernel_extent
    if span < 0:
        _fail(VX_ERROR_INVALID_DIMENSION, node, f"the {axis} kernel extent {kernel_extent} "
              f"exceeds the padded input {size_in + 2 * pad}")
    ceil = rounding == VX_NN_DS_SIZE_ROUNDING_CEILING

    def out_for(skip):
        return (-(-span // skip) if ceil else span // skip) + 1

    if not out_known:
        return 1, out_for(1)
    for skip in range(1, span + 2):
        if out_for(skip) == out_known:
            return skip, out_known
    _fail(VX_ERROR_INVALID_DIMENSION, node, f"no skip turns input {axis} {size_in} (padding "
          f"{pad}, kernel extent {kernel_extent}) into output {axis} {out_known}")


def _spatial_out(node, ins, pads, extents, rounding):
    known = _known_out(node)
    kx = known[0] if known is not None and len(known) == len(ins) else 0
    ky = known[1] if known is not None and len(known) == len(ins) else 0
    sx, ox = _downscale(node, "width", ins[0], pads[0], extents[0], kx, rounding)
    sy, oy = _downscale(node, "height", ins[1], pads[1], extents[1], ky, rounding)
    node.derived.update(skip_x=sx, skip_y=sy, out_w=ox, out_h=oy)
    return ox, oy


def check_convolution(node):
    p = node.params["convolution_params"]
    ins = _dims(node, "inputs")
    w = _dims(node, "weights")
    # [width, height, #IFM] then batches, "possibly nested": up to the context's maximum rank
    _rank(node, "inputs", ins, (3, 4, 5, 6))
    _rank(node, "weights", w, (4,))
    _same_type(node, ("inputs", "weights", "biases", "outputs"))
    for name in ("padding_x", "padding_y", "dilation_x", "dilation_y"):
        _size(node, name, getattr(p, name))
    for name, table, what in (("overflow_policy", CONVERT_POLICIES, "vx_convert_policy_e"),
                              ("rounding_policy", ROUND_POLICIES, "vx_round_policy_e"),
                              ("down_scale_size_rounding", SIZE_ROUNDINGS,
                               "vx_nn_rounding_type_e")):
        if getattr(p, name) not in table:
            _fail(VX_ERROR_INVALID_PARAMETERS, node, f"{name} {getattr(p, name)!r} is not a "
                  f"{what}")
    if w[2] != ins[2]:
        _fail(VX_ERROR_INVALID_DIMENSION, node, f"weights have {w[2]} input maps, inputs "
              f"have {ins[2]}")
    ext_x = w[0] + (w[0] - 1) * p.dilation_x
    ext_y = w[1] + (w[1] - 1) * p.dilation_y
    ox, oy = _spatial_out(node, ins, (p.padding_x, p.padding_y), (ext_x, ext_y),
                          p.down_scale_size_rounding)
    _check_biases(node, w[3], unshared=(ox, oy, w[3]))
    return (ox, oy, w[3]) + ins[3:]


def _check_biases(node, ofm, unshared=None):
    b = node.inputs.get("biases")
    if b is None:
        node.derived["bias_layout"] = None
        return
    dims = _dims(node, "biases")
    if dims == (ofm,):
        node.derived["bias_layout"] = "shared"
    elif unshared is not None and dims == tuple(unshared):
        node.derived["bias_layout"] = "unshared"
    else:
        allowed = f"[{ofm}]" + (f" or {list(unshared)}" if unshared is not None else "")
        _fail(VX_ERROR_INVALID_DIMENSION, node, f"biases {list(dims)} must be {allowed}")


def check_fully_connected(node):
    ins = _dims(node, "inputs")
    w = _dims(node, "weights")
    _rank(node, "inputs", ins, (1, 2, 3, 4, 5, 6))
    _rank(node, "weights", w, (2,))
    _same_type(node, ("inputs", "weights", "biases", "outputs"))
    _enum(node, "overflow_policy", CONVERT_POLICIES, "vx_convert_policy_e")
    _enum(node, "rounding_policy", ROUND_POLICIES, "vx_round_policy_e")
    features, batch = _fc_reading(node, ins, w)
    node.derived.update(features=tuple(features),
                        batch=int(np.prod(batch)) if batch else None)
    _check_biases(node, w[1])
    return (w[1],) + tuple(batch)


def _fc_reading(node, ins, w):
    """(features, batches) of a fully connected input: layout 2 [width, height, #IFM,
    #batches...] or layout 1 [#IFM, #batches...], the batches optional and possibly
    multidimensional (the header), the features those the weights take (w[0]). Where both
    readings fit (the same elements per batch, other batch dimensions), the output's known
    dimensions choose, else layout 2."""
    readings = []
    if len(ins) >= 3 and int(np.prod(ins[:3])) == w[0]:
        readings.append((ins[:3], ins[3:]))
    if ins[0] == w[0]:
        readings.append((ins[:1], ins[1:]))
    if not readings:
        _fail(VX_ERROR_INVALID_DIMENSION, node, f"weights have {w[0]} input features; inputs "
              f"{list(ins)} have neither [#IFM, #batches...] nor [width, height, #IFM, "
              f"#batches...] with that many")
    out = _known_out(node)
    for features, batch in readings:
        if out is not None and len(out) == 1 + len(batch) and all(
                o in (0, d) for o, d in zip(out, (w[1],) + tuple(batch))):
            return features, batch
    return readings[0]


def check_pooling(node):
    ins = _dims(node, "inputs")
    _rank(node, "inputs", ins, (3, 4))
    _same_type(node, ("inputs", "outputs"))
    _enum(node, "pooling_type", POOLING_TYPES, "vx_nn_pooling_type_e")
    _enum(node, "rounding", SIZE_ROUNDINGS, "vx_nn_rounding_type_e")
    kx = _size(node, "pooling_size_x", node.params["pooling_size_x"], 1)
    ky = _size(node, "pooling_size_y", node.params["pooling_size_y"], 1)
    px = _size(node, "pooling_padding_x", node.params["pooling_padding_x"])
    py = _size(node, "pooling_padding_y", node.params["pooling_padding_y"])
    ox, oy = _spatial_out(node, ins, (px, py), (kx, ky), node.params["rounding"])
    return (ox, oy) + ins[2:]


def check_softmax(node):
    ins = _dims(node, "inputs")
    _rank(node, "inputs", ins, (1, 2, 3, 4))
    _same_type(node, ("inputs", "outputs"))
    node.derived["axis"] = 0 if len(ins) <= 2 else 2
    return ins


def check_lrn(node):
    ins = _dims(node, "inputs")
    _rank(node, "inputs", ins, (3, 4))
    _same_type(node, ("inputs", "outputs"))
    _enum(node, "type", NORMALIZATION_TYPES, "vx_nn_norm_type_e")
    size = node.params["normalization_size"]
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) \
            or size not in (3, 5, 7):
        _fail(VX_ERROR_INVALID_PARAMETERS, node, f"normalization_size must be an odd number "
              f"from 3 to 7, got {size!r}")
    for name in ("alpha", "beta", "bias"):
        _positive(node, name, node.params[name])
    return ins


#: which of a and b each function uses (the header requires those to be positive)
ACTIVATION_PARAMS = {VX_NN_ACTIVATION_HYPERBOLIC_TAN: ("a", "b"), VX_NN_ACTIVATION_BRELU: ("a",),
                     VX_NN_ACTIVATION_LINEAR: ("a", "b")}


def check_activation(node):
    ins = _dims(node, "inputs")
    _same_type(node, ("inputs", "outputs"))
    f = _enum(node, "function", ACTIVATIONS, "vx_nn_activation_function_e")
    for name in ACTIVATION_PARAMS.get(f, ()):
        _positive(node, name, node.params[name])
    return ins


def check_roi_pooling(node):
    ins = _dims(node, "input_data")
    rois = _dims(node, "input_rois")
    _rank(node, "input_data", ins, (3, 4))
    _rank(node, "input_rois", rois, (2, 3))
    _same_type(node, ("input_data", "input_rois", "output_arr"))
    pool = node.params["roi_pool_params"].pool_type
    if pool not in POOLING_TYPES:
        _fail(VX_ERROR_INVALID_PARAMETERS, node, f"pool_type {pool!r} is not a "
              "vx_nn_pooling_type_e")
    if pool != VX_NN_POOLING_MAX:
        _fail(VX_ERROR_NOT_SUPPORTED, node, "only VX_NN_POOLING_MAX ROI pooling is supported, "
              f"got VX_NN_POOLING_{POOLING_TYPES[pool]}")
    if rois[0] != 4:
        _fail(VX_ERROR_INVALID_DIMENSION, node, f"input_rois {list(rois)} must have 4 "
              "coordinates in its first dimension")
    batch_in = ins[3] if len(ins) == 4 else 1
    batch_rois = rois[2] if len(rois) == 3 else 1
    if batch_rois != batch_in:
        _fail(VX_ERROR_INVALID_DIMENSION, node, f"input_rois have {batch_rois} batches, "
              f"input_data {batch_in}")
    known = _known_out(node)
    if known is None or len(known) != 4 or 0 in known[:2]:
        _fail(VX_ERROR_INVALID_DIMENSION, node, "output_arr must be [pooled_width, "
              "pooled_height, #IFM, roi_count * #batches] with the pooled size given")
    # one output map per rectangle: column n * roi_count + r (the contract's ROI_POOLING)
    return tuple(known[:2]) + (ins[2], rois[1] * batch_rois)


def check_deconvolution(node):
    p = node.params["deconvolution_params"]
    ins = _dims(node, "inputs")
    w = _dims(node, "weights")
    _rank(node, "inputs", ins, (3, 4))
    _rank(node, "weights", w, (4,))
    _same_type(node, ("inputs", "weights", "biases", "outputs"))
    for name in ("padding_x", "padding_y", "a_x", "a_y"):
        _size(node, name, getattr(p, name))
    for name, table, what in (("overflow_policy", CONVERT_POLICIES, "vx_convert_policy_e"),
                              ("rounding_policy", ROUND_POLICIES, "vx_round_policy_e")):
        if getattr(p, name) not in table:
            _fail(VX_ERROR_INVALID_PARAMETERS, node, f"{name} {getattr(p, name)!r} is not a "
                  f"{what}")
    if w[2] != ins[2]:
        _fail(VX_ERROR_INVALID_DIMENSION, node, f"weights have {w[2]} input maps, inputs "
              f"have {ins[2]}")
    known = _known_out(node)
    out = []
    for axis, i, k, pad, a in (("x", 0, w[0], p.padding_x, p.a_x),
                               ("y", 1, w[1], p.padding_y, p.a_y)):
        if pad > k - 1:
            # the effective input padding kernel - padding - 1 must not be negative
            _fail(VX_ERROR_INVALID_PARAMETERS, node, f"padding_{axis} {pad} exceeds kernel_"
                  f"{axis} - 1 = {k - 1}")
        o = known[i] if known is not None and len(known) == len(ins) else 0
        up = _upscale(node, axis, ins[i], k, pad, a, o)
        if a >= up:
            _fail(VX_ERROR_INVALID_PARAMETERS, node, f"a_{axis} {a} must be smaller than "
                  f"upscale_{axis} {up}")
        out.append((ins[i] - 1) * up - 2 * pad + k + a)
        node.derived[f"upscale_{axis}"] = up
    if out[0] < 1 or out[1] < 1:
        _fail(VX_ERROR_INVALID_DIMENSION, node, f"the output would be {out[0]} x {out[1]}")
    _check_biases(node, w[3])
    return (out[0], out[1], w[3]) + ins[3:]


def _upscale(node, axis, size_in, k, pad, a, out_known):
    """upscale from width_out = (width_in - 1) * upscale - 2 * padding + kernel + a; with an
    unknown output (or a single input column) the smallest upscale a allows, a + 1."""
    if not out_known or size_in == 1:
        if out_known and out_known != k + a - 2 * pad:
            _fail(VX_ERROR_INVALID_DIMENSION, node, f"output {axis} {out_known} is not "
                  f"kernel + a - 2 * padding = {k + a - 2 * pad}")
        return a + 1
    num = out_known + 2 * pad - k - a
    if num <= 0 or num % (size_in - 1):
        _fail(VX_ERROR_INVALID_DIMENSION, node, f"no upscale turns input {axis} {size_in} "
              f"into output {axis} {out_known} (padding {pad}, kernel {k}, a {a})")
    return num // (size_in - 1)


CHECKS = {"convolution": check_convolution, "fully_connected": check_fully_connected,
          "pooling": check_pooling, "softmax": check_softmax,
          "local_response_normalization": check_lrn, "activation": check_activation,
          "roi_pooling": check_roi_pooling, "deconvolution": check_deconvolution}


def check_node(node) -> tuple[int, ...]:
    """Run the node's checks and return its output's dimensions, checked against (or filling
    in) the output tensor's."""
    dims = tuple(int(d) for d in CHECKS[node.kind](node))
    t = node.output
    name = next(iter(node.outputs))
    if t.dims is not None:
        if len(t.dims) != len(dims) or any(k and k != d for k, d in zip(t.dims, dims)):
            _fail(VX_ERROR_INVALID_DIMENSION, node, f"{name} has dimensions {list(t.dims)}, "
                  f"the node produces {list(dims)}")
    t.inferred_dims = dims
    return dims
