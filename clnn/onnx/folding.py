"""Constant folding at import: a node whose inputs are all constants (initializers, Constant,
the Shape of a tensor whose rank is known, and what follows from them) is evaluated with onnx's
reference evaluator, at the model's opset.

A Shape of a tensor with dynamic dimensions folds too, with 0 standing for each dynamic
dimension; its value is "symbolic" (``Importer.symbolic``): only nodes that move values
(``SYMBOLIC_SAFE``) fold it further, and only a Reshape's shape may read it, where 0 means
"copy the input's dimension" (the flatten-to-[batch, -1] pattern).
"""

from __future__ import annotations

import numpy as np

#: the nodes that fold a shape holding a dynamic dimension (a 0 there, see Importer.symbolic):
#: they move values without computing with them
SYMBOLIC_SAFE = {"Shape", "Slice", "Gather", "Concat", "Unsqueeze", "Squeeze", "Identity",
                 "Cast"}
#: nodes never folded even when their inputs are constant (randomness)
NOT_FOLDED = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
              "Multinomial", "Bernoulli"}


def foldable(imp, n, lenient: bool = True) -> bool:
    """Whether node ``n`` folds to constants at import. A Shape of a value with a dimension
    not known folds only when ``lenient`` (the dimension is known to be dynamic: 0 in the
    result, see Importer.symbolic)."""
    if n.op_type in NOT_FOLDED or n.proto.domain not in ("", "ai.onnx"):
        return False
    if n.op_type == "Shape":
        s = imp.shape(n.input(0))
        return n.input(0) in imp.consts or (s is not None and (lenient or 0 not in s))
    if n.op_type == "Size":
        s = imp.shape(n.input(0))
        return s is not None and 0 not in s
    if any(name in imp.symbolic for name in n.inputs) and n.op_type not in SYMBOLIC_SAFE:
        return False
    return all(not name or name in imp.consts for name in n.inputs)


def fold(imp, n):
    """Evaluate node ``n`` on constants with onnx's reference evaluator."""
    from onnx.reference import ReferenceEvaluator

    if n.op_type in ("Shape", "Size") and n.input(0) not in imp.consts:
        shape = np.asarray(imp.shape(n.input(0)), np.int64)
        if n.op_type == "Size":
            out = np.asarray(np.prod(shape), np.int64)
        else:
            start, end = n.attr("start", 0), n.attr("end", None)
            out = shape[start:end]
        imp.consts[n.outputs[0]] = out
        if 0 in shape:
            imp.symbolic.add(n.outputs[0])
        return
    feeds = {name: imp.consts[name] for name in n.inputs if name}
    try:
        try:  # a one-node model, so that the evaluator applies the node's opset version
            results = ReferenceEvaluator(_one_node_model(imp, n)).run(None, feeds)
        except RuntimeError as e:  # an old version the evaluator lacks: its newest one
            if "No implementation" not in str(e):
                raise
            results = ReferenceEvaluator(n.proto).run(None, feeds)
    except Exception as e:
        imp.fail(f"folding the constant node failed ({type(e).__name__}: "
                 f"{str(e).splitlines()[0] if str(e) else ''})")
    symbolic = any(name in imp.symbolic for name in n.inputs)
    for name, r in zip(n.outputs, results):
        if name:
            imp.consts[name] = np.asarray(r)
            if symbolic:
                imp.symbolic.add(name)


def _one_node_model(imp, n):
    from onnx import helper

    ins = [helper.make_tensor_value_info(x, 0, None) for x in dict.fromkeys(n.inputs) if x]
    outs = [helper.make_tensor_value_info(y, 0, None) for y in n.outputs if y]
    g = helper.make_graph([n.proto], "fold", ins, outs)
    return helper.make_model(g, opset_imports=list(imp.model.opset_import))
