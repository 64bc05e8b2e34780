"""Seeded random weights for models whose weights are ConstantOfShape fills (the light_* models
of the onnx wheel): with uniform weights every output is uniform and a comparison shows
little, so real-model checks replace the fills first."""

from __future__ import annotations

import numpy as np


def randomize_fills(model, seed: int = 0):
    """A copy of ``model`` with each ConstantOfShape of a constant shape replaced by an
    initializer: He-scaled normal weights, BatchNormalization variances in [0.5, 1.5), other
    vectors near 0 (near 1 for BatchNormalization scales)."""
    import onnx
    from onnx import numpy_helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    rng = np.random.default_rng(seed)
    consts = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    bn = [n for n in m.graph.node if n.op_type == "BatchNormalization"]
    variances = {n.input[4] for n in bn}
    scales = {n.input[1] for n in bn}
    keep = []
    for n in m.graph.node:
        if n.op_type != "ConstantOfShape" or n.input[0] not in consts:
            keep.append(n)
            continue
        shape = [int(d) for d in consts[n.input[0]]]
        name = n.output[0]
        if name in variances:
            v = rng.random(shape) + 0.5
        elif len(shape) == 1:
            v = rng.standard_normal(shape) * 0.1 + (1.0 if name in scales else 0.0)
        else:
            v = rng.standard_normal(shape) * np.sqrt(2.0 / max(int(np.prod(shape[1:])), 1))
        m.graph.initializer.append(numpy_helper.from_array(v.astype(np.float32), name))
    del m.graph.node[:]
    m.graph.node.extend(keep)
    if m.ir_version < 4:  # initializers that are not graph inputs need IR 4
        m.ir_version = 4
    return m
