"""The onnx wheel's ``light_*`` models with random weights: their weights are ConstantOfShape
fills of 0.02, so every class scores alike; :func:`randomized` swaps each fill for seeded random
values scaled by fan-in (the model tests, tests/onnx/test_onnx_models.py, and ``clnn bench
quant --onnx`` use them so)."""

from __future__ import annotations

import numpy as np

#: (consumer, input position) -> the range of uniform random values for a vector (1-D) fill:
#: batch normalization scale and variance around 1, shifts and means around 0
VECTOR_RANGES = {("BatchNormalization", 1): (0.5, 1.5), ("BatchNormalization", 4): (0.5, 1.5),
                 ("BatchNormalization", 2): (-0.2, 0.2), ("BatchNormalization", 3): (-0.2, 0.2),
                 ("Mul", 1): (0.5, 1.5), ("Mul", 0): (0.5, 1.5)}


def randomized(path: str, seed: int = 0, logits: bool = True) -> bytes:
    """The model with every ConstantOfShape weight fill replaced by seeded random values:
    weights (2 or more dimensions) uniform with variance 2 / fan-in (He: the activations keep
    their size through ReLU layers), vectors by their use (``VECTOR_RANGES``, else uniform in
    [-0.2, 0.2]: biases, shifts). ``logits``: the input of a final Softmax is an output too."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(path)
    g = model.graph
    init = {t.name: t for t in g.initializer}
    readers = {}
    for node in g.node:
        for k, name in enumerate(node.input):
            readers.setdefault(name, []).append((node, k))

    def use(name):
        """(op_type, input position, node) of the first reader past Unsqueeze / Reshape."""
        node, k = readers[name][0]
        while node.op_type in ("Unsqueeze", "Reshape") and k == 0:
            node, k = readers[node.output[0]][0]
        return node.op_type, k, node

    rng = np.random.default_rng(seed)
    kept = []
    for node in g.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in init:
            kept.append(node)
            continue
        shape = [int(d) for d in numpy_helper.to_array(init[node.input[0]])]
        op, k, reader = use(node.output[0])
        if len(shape) >= 2:
            trans_b = any(a.name == "transB" and a.i for a in reader.attribute)
            fan_in = shape[0] if op == "Gemm" and not trans_b else int(np.prod(shape[1:]))
            bound = np.sqrt(6.0 / max(1, fan_in))
            value = rng.uniform(-bound, bound, shape)
        else:
            value = rng.uniform(*VECTOR_RANGES.get((op, k), (-0.2, 0.2)), shape)
        g.initializer.append(numpy_helper.from_array(value.astype(np.float32), node.output[0]))
        if model.ir_version < 4:  # before IR 4 an initializer is also a graph input
            g.input.append(onnx.helper.make_tensor_value_info(node.output[0],
                                                              onnx.TensorProto.FLOAT, shape))
    del g.node[:]
    g.node.extend(kept)
    used = {name for node in kept for name in node.input}
    for items in (g.initializer, g.input):  # the fills' shapes, read by nothing now
        for t in [t for t in items if t.name.endswith("__SHAPE") and t.name not in used]:
            items.remove(t)
    # the logits too: a softmax of random weights may be saturated or almost uniform, where
    # an error in the numbers before it would hardly show
    outputs = {o.name for o in g.output}
    for node in kept if logits else ():
        if node.op_type == "Softmax" and node.output[0] in outputs:
            g.output.append(onnx.helper.make_tensor_value_info(node.input[0],
                                                               onnx.TensorProto.FLOAT, None))
    return model.SerializeToString()
