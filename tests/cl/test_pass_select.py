"""The select pass alone (clnn.passes.select): each planned node's tuned families with their
device-class defaults and why, nothing measured; realize runs what it chose."""

from __future__ import annotations

from clnn.kernels import _conv_variants, _gemm_variants, _winograd
from clnn.passes import realize as realize_pass
from clnn.passes.memory import plan_memory
from clnn.passes.select import select
from clnn.tuning import tuner_for
from tests.kits.pass_models import block_model, conv3x3_model, passes_to_fusion


def test_a_node_gets_its_family_default_and_why(cl_device):
    dev = cl_device.with_options(tune="off")
    model, _, ops = block_model()
    planner, part, shapes, fused, dwpw = passes_to_fusion(dev, model)
    sel = select(planner, part, shapes, fused, dwpw)
    # the PAD, ADD and RELU are the convolution's epilogue: only it chooses, conv_tile
    # (4 input channels) over the unpadded input
    (c,) = sel.choices[ops["CONV_2D"]]
    assert list(sel.choices) == [ops["CONV_2D"]]
    traits = _gemm_variants.traits(dev.limits)
    assert c.family == "conv" and c.signature["h"] == 6 and c.signature["c"] == 4
    assert c.variant == c.selected == _conv_variants.FAMILY.default(traits, c.signature)
    assert c.tunable is _conv_variants.FAMILY and c.op == ops["CONV_2D"]
    assert c.reason == f"the {traits.device_class or 'cpu'} class default"
    assert tuner_for(dev).measured == 0
    # realize runs the selected variant: its vector width and tile are the kernel's key
    memory = plan_memory(model.main, part, shapes.shapes, fused, planner.direct_inputs)
    plan = realize_pass.realize(planner, part, shapes, fused, memory, sel)
    (la,) = plan.launches
    assert la.pending[1] == "conv_tile"
    assert (la.pending[2]["vw"], la.pending[2]["tx"]) == (c.variant["vw"], c.variant["tx"])
    assert plan.selection[ops["CONV_2D"]] == [c]


def test_a_choice_decides_the_next(cl_device):
    model, _ = conv3x3_model()
    dev = cl_device.with_options(tune="off", winograd=2)
    planner, part, shapes, fused, dwpw = passes_to_fusion(dev, model)
    wino, gemm = select(planner, part, shapes, fused, dwpw).choices[0]
    # the option fixes F(2x2, 3x3); its batched GEMM follows: 16 transform points, 4x4 tiles
    assert wino.family == "winograd" and wino.variant == {"m": 2}
    assert wino.tunable is None and wino.reason == "the winograd option"
    assert gemm.family == "gemm" and gemm.signature == _winograd.gemm_signature(
        wino.signature, 2) and gemm.signature["batches"] == 16
    never = cl_device.with_options(tune="off", winograd=0)
    planner, part, shapes, fused, dwpw = passes_to_fusion(never, model)
    wino, gemm = select(planner, part, shapes, fused, dwpw).choices[0]
    # the GEMM path: im2col panels, or the implicit GEMM where the device class runs it
    from clnn.kernels import conv2d

    amode = "taps" if conv2d.taps_device(never) else "packed"
    assert wino.variant == {"m": 0} and gemm.signature["amode"] == amode
    assert gemm.signature["M"] == 64 and gemm.signature["K"] == 9 * 16
