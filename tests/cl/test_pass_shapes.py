"""The shapes pass alone (clnn.passes.shapes): every operand's shape from the inputs', and
each operation's context for the passes after it."""

from __future__ import annotations

import pytest

from clnn.passes.shapes import infer_shapes, static_shapes
from hal.errors import GeneralFailure
from tests.kits.pass_models import block_model, planner_of


def test_shapes_of_every_operand(cl_device):
    model, _, ops = block_model()
    planner, part = planner_of(cl_device, model)
    sg = model.main
    got = infer_shapes(planner, part, {i: tuple(sg.operands[i].dimensions)
                                       for i in part.inputs}, {})
    assert len(got.contexts) == len(part.ops)
    out = lambda name: sg.operations[ops[name]].outputs[0]  # noqa: E731
    assert got.shapes[out("PAD")] == (1, 8, 8, 4)
    assert got.shapes[out("CONV_2D")] == got.shapes[out("RELU")] == (1, 6, 6, 8)
    assert got.shapes[out("RESHAPE")] == (1, 288)
    assert got.contexts[ops["CONV_2D"]].outputs[0].shape == (1, 6, 6, 8)
    assert static_shapes(planner) == {**got.shapes}


def test_an_input_shape_the_model_rejects(cl_device):
    model, _, _ = block_model()
    planner, part = planner_of(cl_device, model)
    sg = model.main
    shapes = {i: tuple(sg.operands[i].dimensions) for i in part.inputs}
    x = part.inputs[0]
    shapes[x] = (1, 7, 6, 4)  # the CONV_2D output is declared [1, 6, 6, 8]
    with pytest.raises(GeneralFailure, match="incompatible with the declared"):
        infer_shapes(planner, part, shapes, {})
