"""Shapes where onnx's shape inference stops: exported models (paddle2onnx's above all) compute
Reshape targets with Shape -> Gather / Slice -> Concat (-> Cast / Unsqueeze) chains, and
``onnx.shape_inference`` leaves the Reshape's output, and every operator after it, without a
shape even when each input dimension is fixed.

:func:`propagate` is the importer's first pass: in topological order it folds every node whose
inputs are constants (:mod:`clnn.onnx.folding`), and gives every other node whose outputs lack
a shape (or some dimension) the shapes its operator's rule computes from the shapes and
constants known so far: onnx's inference function of that operator, run on a one-node model
whose constant inputs are initializers (so a folded Reshape target is a value there, not an
unknown), then the dimensions of the result that were unknown merged in. Two kinds of node
have the importer's own rule: a Reshape to a constant target (:func:`ops_shape.reshaped`,
which knows the 0 that stands for a dynamic dimension) and onnxruntime's ``com.microsoft``
operators, which onnx does not know (the rule of their float operator: QLinearAdd's is
Add's). It repeats until a
round changes nothing. A Shape of a value with a dimension still unknown then is a truly
dynamic one (an input dimension left open): only then does it fold with 0 standing for that
dimension (``Importer.symbolic``), and the rounds go on.
"""

from __future__ import annotations

import numpy as np

from clnn.onnx.folding import fold, foldable

MS = "com.microsoft"
F32 = 1  # TensorProto.FLOAT
#: constant inputs at most this many elements go to the one-node model as values (shape
#: arguments: targets, axes, pads, scales); larger ones (weights) as their shape alone
VALUE_LIMIT = 4096


def propagate(imp):
    """Fold constants and fill in shapes until nothing changes (see the module's docstring)."""
    lenient = False
    tried: dict[int, tuple] = {}  # node -> what its inputs were when last inferred
    while True:
        changed = False
        for n in imp.nodes:
            if n.index in imp.skipped:
                continue
            imp.node = n
            if foldable(imp, n, lenient):
                fold(imp, n)
                imp.skipped.add(n.index)
                changed = True
            elif _unknown(imp, n):
                key = _signature(imp, n)
                if tried.get(n.index) != key:
                    tried[n.index] = key
                    changed |= _infer_node(imp, n)
        imp.node = None
        if changed:
            lenient = False
        elif lenient:
            return
        else:
            lenient = True  # nothing more to learn: the open dimensions are truly dynamic


def complete(shape) -> bool:
    return shape is not None and 0 not in shape


def _unknown(imp, n) -> bool:
    """Whether an output of ``n`` lacks its rank or a dimension while its inputs are known."""
    if not any(not complete(imp.info.get(y, (0, None))[1]) or not imp.info[y][0]
               for y in n.outputs if y):
        return False
    if any(a.type in (5, 10) for a in n.proto.attribute):  # GRAPH(S): If / Loop / Scan
        return False
    return all(not x or x in imp.consts or imp.info.get(x, (0, None))[1] is not None
               for x in n.inputs)


def _signature(imp, n) -> tuple:
    return tuple((x in imp.consts, imp.shape(x)) for x in n.inputs if x)


def _own_rule(imp, n):
    """The output shape of a node the importer computes itself, else None: a Reshape to a
    constant target, which may hold 0 for a dynamic dimension (Importer.symbolic), a meaning
    onnx's rule cannot know."""
    from clnn.onnx.ops_shape import reshaped

    if n.op_type == "Reshape" and imp.opset >= 5 and n.input(1) in imp.consts:
        src = imp.shape(n.input(0))
        if src is not None:
            return reshaped(src, imp.consts[n.input(1)].reshape(-1), n.attrs.get("allowzero", 0))
    return None


def _infer_node(imp, n) -> bool:
    """Run the operator's shape inference on node ``n`` alone; True when it found more."""
    own = _own_rule(imp, n)
    if own is not None:
        return _merge(imp, n.outputs[0], imp.elem(n.input(0)), tuple(own))
    import onnx
    from onnx import helper, numpy_helper

    proto, elem_out = n.proto, None
    if n.proto.domain == MS:  # onnxruntime's operators: the float operator's rule
        from clnn.onnx.ops_qlinear import output_elem, standard_equivalent

        same = standard_equivalent(n)
        if same is None:
            return False
        op, ins, attrs = same
        proto = helper.make_node(op, ins, n.outputs[:1], **attrs)
        elem_out = output_elem(imp, n)
    inputs, inits = [], []
    for x in dict.fromkeys(proto.input):
        if not x:
            continue
        v = imp.consts.get(x)
        if v is not None and v.size <= VALUE_LIMIT and x not in imp.symbolic and not elem_out:
            inits.append(numpy_helper.from_array(np.asarray(v), x))
            continue
        elem = F32 if elem_out else imp.elem(x)
        shape = tuple(v.shape) if v is not None else imp.info[x][1]
        dims = [d if d > 0 else None for d in shape]
        inputs.append(helper.make_tensor_value_info(x, elem, dims))
    outs = [helper.make_empty_tensor_value_info(y) for y in proto.output if y]
    g = helper.make_graph([proto], "node", inputs, outs, inits)
    model = helper.make_model(g, opset_imports=list(imp.model.opset_import),
                              ir_version=max(imp.model.ir_version, 4))
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:
        return False
    found = False
    for vi in [*inferred.graph.output, *inferred.graph.value_info]:
        if vi.name not in n.outputs or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            continue
        new = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 0
                    for d in tt.shape.dim)
        found |= _merge(imp, vi.name, elem_out or tt.elem_type, new)
    return found


def _merge(imp, name: str, elem: int, new: tuple) -> bool:
    """Record the dimensions of ``new`` that ``imp.info`` lacks; True when any were."""
    old_elem, old = imp.info.get(name, (0, None))
    if old is None:
        merged = new
    elif len(old) != len(new):
        return False
    else:
        merged = tuple(o or w for o, w in zip(old, new))
    if merged == old and old_elem:
        return False
    imp.info[name] = (old_elem or elem, merged)
    return merged != old
