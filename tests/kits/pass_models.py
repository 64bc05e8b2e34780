"""A small model for the tests of each prepare pass (tests/cl/test_pass_*.py), and the values
each pass hands the next, made one pass at a time."""

from __future__ import annotations

import numpy as np

from hal.builder import ModelBuilder

F32 = "TENSOR_FLOAT32"


def block_model(seed: int = 0):
    """x [1,6,6,4] -> PAD (1 row / column each side) -> CONV_2D 3x3 (8 out) -> ADD(., y) ->
    RELU -> RESHAPE [1, 288] (a view) -> output; y [1,6,6,8] a model input. Returns (model,
    inputs, operation indexes by name)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(F32, [1, 6, 6, 4])
    pad = b.op("PAD", [x, b.constant(np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))],
               b.tensor(F32, [1, 8, 8, 4]))
    wt = rng.uniform(-1, 1, (8, 3, 3, 4)).astype(np.float32)
    bias = rng.uniform(-1, 1, 8).astype(np.float32)
    conv = b.op("CONV_2D", [pad, b.constant(wt, F32), b.constant(bias, F32),
                            *[b.int32(v) for v in (0, 0, 0, 0, 1, 1, 0)], b.bool(False)],
                b.tensor(F32, [1, 6, 6, 8]))
    y = b.input(F32, [1, 6, 6, 8])
    add = b.op("ADD", [y, conv, b.int32(0)], b.tensor(F32, [1, 6, 6, 8]))
    relu = b.op("RELU", [add], b.tensor(F32, [1, 6, 6, 8]))
    out = b.op("RESHAPE", [relu, b.constant(np.array([1, 288], np.int32))],
               b.tensor(F32, [1, 288]))
    b.mark_output(out)
    inputs = [rng.uniform(-1, 1, (1, 6, 6, 4)).astype(np.float32),
              rng.uniform(-1, 1, (1, 6, 6, 8)).astype(np.float32)]
    ops = {"PAD": 0, "CONV_2D": 1, "ADD": 2, "RELU": 3, "RESHAPE": 4}
    return b.finish(), inputs, ops


def planner_of(device, model):
    """(Planner, its one CL partition) of ``model`` on ``device`` (every operation
    supported)."""
    from clnn.passes.partition import partition
    from clnn.plan import Planner

    parts = partition(model, [True] * len(model.main.operations))
    return Planner(device, model, parts), parts[0]


def no_dwpw(op, sig):
    """A depthwise -> pointwise chooser that never fuses."""
    return None


def conv3x3_model(c: int = 16, o: int = 16, hw: int = 8, seed: int = 0):
    """x [1,hw,hw,c] -> CONV_2D 3x3 SAME (o out) -> output: a layer the Winograd path and the
    GEMM take (more input channels than the direct kernel). Returns (model, inputs)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(F32, [1, hw, hw, c])
    wt = rng.uniform(-1, 1, (o, 3, 3, c)).astype(np.float32)
    bias = rng.uniform(-1, 1, o).astype(np.float32)
    y = b.op("CONV_2D", [x, b.constant(wt, F32), b.constant(bias, F32),
                         *[b.int32(v) for v in (1, 1, 1, 0)], b.bool(False)],
             b.tensor(F32, [1, hw, hw, o]))
    b.mark_output(y)
    return b.finish(), [rng.uniform(-1, 1, (1, hw, hw, c)).astype(np.float32)]


def passes_to_fusion(device, model):
    """(planner, partition, shapes, fused graph, dwpw choices) of ``model``'s one partition:
    the passes before select, run one at a time."""
    from clnn.passes.fusion import fuse
    from clnn.passes.select import DwpwChoices
    from clnn.passes.shapes import infer_shapes

    planner, part = planner_of(device, model)
    sg = model.main
    shapes = infer_shapes(planner, part, {i: tuple(sg.operands[i].dimensions)
                                          for i in part.inputs}, {})
    dwpw = DwpwChoices(device)
    return planner, part, shapes, fuse(sg, part, shapes, dwpw), dwpw


def tuned_block_model(seed: int = 0):
    """x [1,64,64,32] -> CONV_2D 1x1 (16 out: 4.2 MFLOP, a layer the "fast" tuning measures)
    -> MAX_POOL_2D 2x2 stride 2 -> output [1,32,32,16]: two kernels a prepare builds as one
    program. Returns (model, inputs)."""
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    x = b.input(F32, [1, 64, 64, 32])
    wt = rng.uniform(-1, 1, (16, 1, 1, 32)).astype(np.float32)
    bias = rng.uniform(-1, 1, 16).astype(np.float32)
    conv = b.op("CONV_2D", [x, b.constant(wt, F32), b.constant(bias, F32),
                            *[b.int32(v) for v in (1, 1, 1, 0)]],
                b.tensor(F32, [1, 64, 64, 16]))
    pool = b.op("MAX_POOL_2D", [conv, *[b.int32(v) for v in (1, 2, 2, 2, 2, 0)]],
                b.tensor(F32, [1, 32, 32, 16]))
    b.mark_output(pool)
    return b.finish(), [rng.uniform(-1, 1, (1, 64, 64, 32)).astype(np.float32)]
