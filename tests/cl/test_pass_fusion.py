"""The fusion pass alone (clnn.passes.fusion): the graph rewritten into fused nodes, each with
its epilogue list, and the operations they absorb."""

from __future__ import annotations

from clnn.passes.fusion import fuse
from clnn.passes.shapes import infer_shapes
from tests.kits.pass_models import block_model, no_dwpw, planner_of


def fused_block(cl_device):
    model, _, ops = block_model()
    planner, part = planner_of(cl_device, model)
    sg = model.main
    shapes = infer_shapes(planner, part, {i: tuple(sg.operands[i].dimensions)
                                          for i in part.inputs}, {})
    return model, ops, part, shapes, fuse(sg, part, shapes, no_dwpw)


def test_the_convolution_carries_pad_add_and_activation(cl_device):
    model, ops, _, _, g = fused_block(cl_device)
    conv = ops["CONV_2D"]
    assert list(g.nodes) == [conv]
    node = g.node(conv)
    assert [e.kind for e in node.epilogue] == ["input_pad", "residual", "activation"]
    assert [e.absorbed for e in node.epilogue] == [(ops["PAD"],), (ops["ADD"],), (ops["RELU"],)]
    assert node.input_pad.top == 1 and node.input_pad.left == 1
    assert node.activation.kind == "RELU" and node.residual.add_op == ops["ADD"]
    assert g.fused_into == {ops["PAD"]: conv, ops["ADD"]: conv, ops["RELU"]: conv}
    assert g.skipped == {ops["PAD"], ops["ADD"], ops["RELU"]}
    sg = model.main
    # the convolution reads the unpadded tensor; its output is the RELU's storage
    assert g.reads[conv] == {sg.operations[ops["PAD"]].inputs[0]}
    assert node.aliases(sg) == {
        sg.operations[ops["PAD"]].outputs[0]: sg.operations[ops["PAD"]].inputs[0],
        sg.operations[conv].outputs[0]: sg.operations[ops["RELU"]].outputs[0]}


def test_a_kept_convolution_output_leaves_the_add_and_its_clamp_apart(cl_device):
    model, ops, part, shapes, _ = fused_block(cl_device)
    sg = model.main
    part.outputs.append(sg.operations[ops["CONV_2D"]].outputs[0])  # a partition output
    g = fuse(sg, part, shapes, no_dwpw)
    assert [e.kind for e in g.node(ops["CONV_2D"]).epilogue] == ["input_pad"]
    # the RELU becomes the ADD's clamp instead
    assert [e.kind for e in g.node(ops["ADD"]).epilogue] == ["activation"]
    assert g.fused_into == {ops["PAD"]: ops["CONV_2D"], ops["RELU"]: ops["ADD"]}
