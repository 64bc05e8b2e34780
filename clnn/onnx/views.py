"""Tensors of rank 5 and more (YOLO heads, channel shuffles): NNAPI operations stop at rank 4, so
such a value is a *view* (``Importer.views``): an operand of rank <= 4 holding the same
elements in the same order, plus the ONNX shape. Reshape and Transpose read views directly
(:mod:`clnn.onnx.ops_shape`); here the other operators that can run on the operand itself:

- element-wise operators: on the operand, constants broadcast to the ONNX shape and laid out
  like the operand (the order of elements is the same);
- Slice and Concat: when each sliced / concatenated ONNX axis is an axis of the operand of
  its own (the operand's axes are runs of the ONNX axes, :func:`groups`).

The node is converted by its ordinary converter on a copy whose inputs are the operands (and
the re-laid constants) and whose axes are the operand's; its output becomes a view again.
"""

from __future__ import annotations

import numpy as np

#: operators that run element by element (the output has the view's shape)
ELEMENTWISE = {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Abs", "Neg", "Sqrt", "Floor", "Ceil",
               "HardSwish", "HardSigmoid", "LeakyRelu", "Clip", "Add", "Sub", "Mul", "Div",
               "Pow", "Min", "Max", "Sum", "Reciprocal", "Softplus", "Identity", "Dropout",
               "Cast", "QuantizeLinear", "DequantizeLinear"}
#: every operator a view may flow into (Reshape / Transpose / ... read it in ops_shape)
READERS = ELEMENTWISE | {"Slice", "Concat", "Reshape", "Transpose", "Flatten", "Squeeze",
                         "Unsqueeze", "Gather"}


def groups(op_shape, shape):
    """For each operand axis, the run of ONNX axes it holds (the operand's dims are products
    of consecutive ONNX dims; 0, unknown, matches 0), or None when they do not factor so."""
    out, k = [], 0
    for d in op_shape:
        if k >= len(shape):
            return None
        run, prod = [k], shape[k]
        k += 1
        while prod != d and k < len(shape):
            prod *= shape[k]
            run.append(k)
            k += 1
        if prod != d:
            return None
        out.append(run)
    while k < len(shape) and shape[k] == 1 and out:  # trailing ONNX dims of size 1
        out[-1].append(k)
        k += 1
    return out if k == len(shape) else None


def _own_axis(imp, g, axis, shape):
    """The operand axis holding ONNX ``axis`` alone (other axes in its run have size 1)."""
    for j, run in enumerate(g):
        if axis in run and all(shape[a] == 1 for a in run if a != axis):
            return j
    imp.fail(f"axis {axis} of a rank-{len(shape)} tensor is merged with others in its rank-4 "
             "form; NNAPI operations take rank 4 at most")


def convert(imp, n, conv):
    """Run converter ``conv`` for node ``n``, some of whose inputs are views."""
    from onnx import helper

    if n.op_type == "Gather" and n.input(0) in imp.views:
        return gather(imp, n)
    if n.op_type not in ELEMENTWISE | {"Slice", "Concat"}:
        name = next(x for x in n.inputs if x in imp.views)
        imp.fail(f"{name!r} has rank {len(imp.views[name][1])}; NNAPI operations take rank 4 "
                 "at most")
    names = [x for x in n.inputs if x in imp.views]
    first = names[0]
    shape = imp.views[first][1]
    op_shape = tuple(imp.b._operands[imp.views[first][0]].dimensions)
    rank = len(shape)
    g = groups(op_shape, shape)
    inputs, attrs, saved = list(n.inputs), dict(n.attrs), {}
    for k, x in enumerate(inputs):
        if x in saved:  # the same view twice (x * x)
            continue
        if x in imp.views:
            v_op, v_shape = imp.views[x]
            v_op_shape = tuple(imp.b._operands[v_op].dimensions)
            if n.op_type == "Concat":
                if groups(v_op_shape, v_shape) != g:
                    imp.fail(f"the rank-{rank} inputs are laid out differently in rank 4")
            elif v_shape != shape or v_op_shape != op_shape:
                imp.fail(f"inputs {first!r} and {x!r} have different shapes")
            saved[x] = imp.views.pop(x)
            imp.operands[x] = v_op
            imp.shape_override[x] = v_op_shape
        elif x and imp.const(x) is not None and n.op_type in ELEMENTWISE:
            c = imp.const(x)
            if c.size > 1:  # broadcast to the ONNX shape, then laid out as the operand
                if np.broadcast_shapes(c.shape, shape) != tuple(shape) or 0 in shape:
                    imp.fail(f"constant {x!r} of shape {list(c.shape)} does not broadcast to "
                             f"{list(shape)}")
                relaid = f"{x}\0{len(imp.consts)}"
                imp.consts[relaid] = np.ascontiguousarray(np.broadcast_to(c, shape)).reshape(
                    op_shape)
                inputs[k] = relaid
        elif x and x not in imp.consts:
            imp.fail(f"input {x!r} has rank {len(imp.shape(x) or ())} and {first!r} rank "
                     f"{rank}; mixing them has no rank-4 form")
    out = n.outputs[0]
    out_shape = imp.info.get(out, (0, None))[1]
    if out_shape is None and n.op_type in ELEMENTWISE:
        out_shape = shape
    if n.op_type == "Concat":
        if g is None:
            imp.fail(f"the rank-{rank} input has no rank-4 layout Concat can use")
        axis = n.attrs["axis"] + rank if n.attrs["axis"] < 0 else n.attrs["axis"]
        attrs["axis"] = _own_axis(imp, g, axis, shape)
    if n.op_type == "Slice":
        inputs = _slice_inputs(imp, n, g, shape, inputs)
    if out_shape is None or len(out_shape) != rank:
        imp.fail(f"the output shape of a rank-{rank} {n.op_type} is unknown")
    out_op_shape = [int(np.prod([out_shape[a] for a in run])) for run in g] if g else op_shape
    imp.shape_override[out] = tuple(out_op_shape)
    proto = helper.make_node(n.op_type, inputs, n.outputs, name=n.proto.name, domain=n.proto.domain)
    proto.attribute.extend(a for a in n.proto.attribute if a.name != "axis")
    if "axis" in attrs:
        proto.attribute.append(helper.make_attribute("axis", attrs["axis"]))
    sub = type(n)(proto, n.index, attrs, n.read)
    try:
        conv(imp, sub)
    finally:
        for x, view in saved.items():
            imp.views[x] = view
            imp.operands.pop(x, None)
            imp.shape_override.pop(x, None)
        imp.shape_override.pop(out, None)
    imp.views[out] = (imp.operands.pop(out), tuple(out_shape))


def _slice_inputs(imp, n, g, shape, inputs: list) -> list:
    """The inputs of a Slice of a view, its axes (input 3) those of the view's rank-4
    operand (a constant of their own)."""
    rank = len(shape)
    if g is None or imp.opset < 10:
        imp.fail(f"a Slice of a rank-{rank} tensor has no rank-4 form here")
    axes = imp.const(n.input(3)) if n.input(3) else np.arange(imp.const(n.input(1)).size)
    mapped = [_own_axis(imp, g, int(a) + rank if a < 0 else int(a), shape)
              for a in axes.reshape(-1)]
    name = f"{n.input(3) or 'axes'}\0{len(imp.consts)}"
    imp.consts[name] = np.asarray(mapped, np.int64)
    inputs = inputs + [""] * (4 - len(inputs)) if len(inputs) < 4 else inputs
    inputs[3] = name
    return inputs


def gather(imp, n):
    """A Gather of constant indices along an axis the view's operand holds on its own (the
    q / k / v of a [3, B, h, T, d] attention tensor): GATHER there, then a RESHAPE to the
    ONNX output when it has rank 4 at most (else the output stays a view)."""
    x, out = n.input(0), n.outputs[0]
    src, shape = imp.views[x]
    op_shape = list(imp.b._operands[src].dimensions)
    iv = imp.const(n.input(1))
    if iv is None:
        imp.fail(f"a Gather of the rank-{len(shape)} {x!r} needs constant indices")
    axis = int(n.attr("axis", 0))
    axis = axis + len(shape) if axis < 0 else axis
    g = groups(op_shape, shape)
    if g is None or 0 in shape:
        imp.fail(f"a Gather of the rank-{len(shape)} {x!r} has no rank-4 form here")
    j = _own_axis(imp, g, axis, shape)
    iv = np.where(iv < 0, iv + shape[axis], iv).astype(np.int32)
    op_shape[j] = iv.size
    t = imp.temp(x, op_shape)
    imp.emit("GATHER", [src, imp.int32(j), imp.ints(iv.reshape(-1))], [t])
    y_shape = [*shape[:axis], *iv.shape, *shape[axis + 1:]]
    if len(y_shape) > 4:
        if iv.ndim == 0 and len(g[j]) == 1:  # the axis goes: its operand axis too
            op_shape.pop(j)
            t2 = imp.temp(x, op_shape)
            imp.emit("RESHAPE", [t, imp.ints(op_shape)], [t2])
            t = t2
        elif iv.ndim != 1:
            imp.fail(f"a Gather of the rank-{len(shape)} {x!r} with indices of rank "
                     f"{iv.ndim} has no rank-4 form here")
        imp.views[out] = (t, tuple(y_shape))
        if x in imp.quant:
            imp.quant[out] = imp.quant[x]
        return
    y = imp.output(out, shape=y_shape, like=x)
    imp.emit("RESHAPE", [t, imp.ints(y_shape)], [y])


#: rank-6 transposes that are a pixel shuffle: perm -> the DepthToSpace mode they perform
PIXEL_SHUFFLES = {(0, 1, 4, 2, 5, 3): "CRD", (0, 3, 4, 1, 5, 2): "DCR"}


def pixel_shuffle(imp, n, x, perm) -> bool:
    """Reshape [N, C, r, r, H, W] (CRD; DCR: [N, r, r, C, H, W]) -> Transpose -> a rank-6
    [N, C, H, r, W, r]: DEPTH_TO_SPACE (after a GATHER of the channels for CRD), whose
    [N, C, H*r, W*r] output holds the same elements; the output stays a view of it."""
    mode = PIXEL_SHUFFLES.get(tuple(perm))
    s = imp.shape(x)
    if mode is None or s is None or 0 in s:
        return False
    if mode == "CRD":
        nb, c, r, r2, h, w = s
    else:
        nb, r, r2, c, h, w = s
    if r != r2:
        return False
    src = imp.source(x)
    flat = (nb, c * r * r, h, w)
    if tuple(imp.b._operands[src].dimensions) != flat:
        t = imp.temp(x, flat)
        imp.emit("RESHAPE", [src, imp.ints(flat)], [t])
        src = t
    if mode == "CRD":  # DCR channel (i r + j) C + k is CRD channel k r^2 + i r + j
        idx = [k * r * r + i * r + j for i in range(r) for j in range(r) for k in range(c)]
        t = imp.temp(x, flat)
        imp.emit("GATHER", [src, imp.int32(1), imp.ints(idx)], [t])
        src = t
    out = imp.temp(x, (nb, c, h * r, w * r))
    imp.emit("DEPTH_TO_SPACE", [src, imp.int32(r), imp.bool(True)], [out])
    imp.views[n.outputs[0]] = (out, (nb, c, h, r, w, r))
    if x in imp.quant:
        imp.quant[n.outputs[0]] = imp.quant[x]
    return True
