"""The memory pass alone (clnn.passes.memory): liveness over the fused graph, views, direct
inputs and pool offsets (pure: nothing allocated)."""

from __future__ import annotations

from clnn.passes.fusion import fuse
from clnn.passes.memory import ALIGN, plan_memory, plan_offsets
from clnn.passes.shapes import infer_shapes
from tests.kits.pass_models import block_model, no_dwpw, planner_of


def _memory(cl_device, direct_inputs):
    model, _, ops = block_model()
    planner, part = planner_of(cl_device, model)
    sg = model.main
    shapes = infer_shapes(planner, part, {i: tuple(sg.operands[i].dimensions)
                                          for i in part.inputs}, {})
    fused = fuse(sg, part, shapes, no_dwpw)
    return model, ops, part, plan_memory(sg, part, shapes.shapes, fused, direct_inputs)


def test_absorbed_outputs_take_no_bytes_and_the_reshape_is_a_view(cl_device):
    model, ops, part, mem = _memory(cl_device, direct_inputs=False)
    sg = model.main
    out = {k: sg.operations[j].outputs[0] for k, j in ops.items()}
    assert not {out["PAD"], out["CONV_2D"], out["ADD"]} & set(mem.sizes)
    assert mem.views == {out["RESHAPE"]: out["RELU"]}
    assert mem.offsets[out["RESHAPE"]] == mem.offsets[out["RELU"]]
    # the RELU's bytes are written at the convolution's step and live to the end (its view)
    assert mem.live[out["RELU"]] == [ops["CONV_2D"], len(part.ops)]
    assert not mem.direct and set(part.inputs) <= set(mem.sizes)
    assert mem.pool_bytes <= mem.intermediate_bytes
    assert [o for o, *_ in mem.written[ops["CONV_2D"]]] == [out["RELU"]]


def test_direct_inputs_leave_the_pool(cl_device):
    model, _, part, mem = _memory(cl_device, direct_inputs=True)
    sg = model.main
    assert set(mem.direct) == set(part.inputs)
    assert mem.direct[part.inputs[0]] == 1 * 6 * 6 * 4 * 4
    assert not set(part.inputs) & set(mem.sizes)
    assert len(mem.sizes) == 1 and mem.pool_bytes == 288 * 4 + (-288 * 4) % ALIGN
    assert sg is model.main


def test_offsets_never_share_live_bytes():
    sizes = {1: 100, 2: 300, 3: 200}
    live = {1: (0, 1), 2: (1, 2), 3: (2, 3)}
    off, total = plan_offsets(sizes, live)
    # 1 and 3 never live together: they may share; 2 overlaps both
    assert off[2] == 0 and off[1] == off[3] == 384 and total == 640
