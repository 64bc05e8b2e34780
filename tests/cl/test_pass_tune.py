"""The tune pass alone (clnn.passes.tune): selected variants replaced by the tuning cache's
or by measured ones, in the device's tune mode; the only pass that measures (realize runs what
it chose, measuring nothing)."""

from __future__ import annotations

from clnn import tuning
from clnn.kernels import _conv_variants, _gemm_variants
from clnn.passes import realize as realize_pass
from clnn.passes.memory import plan_memory
from clnn.passes.select import select
from clnn.passes.tune import tune
from tests.kits.pass_models import block_model, conv3x3_model, passes_to_fusion


def with_tuner(cl_device, mode: str, tmp_path, **fields):
    dev = cl_device.with_options(tune=mode, winograd=0)
    ident = tuning.device_identity(dev.platform, dev.cl_device)
    dev.tuner = tuning.Tuner(dev, mode, tuning.TuningCache(ident, tmp_path), **fields)
    dev.tuner.start_model()
    return dev


def test_tune_off_keeps_the_selection(cl_device):
    dev = cl_device.with_options(tune="off")
    model, _, ops = block_model()
    planner, part, shapes, fused, dwpw = passes_to_fusion(dev, model)
    sel = select(planner, part, shapes, fused, dwpw)
    (c,) = tune(planner, part, shapes, fused, sel).choices[ops["CONV_2D"]]
    assert c.variant == c.selected and c.reason.endswith("(tune off)")


def test_a_cached_variant_replaces_the_default(cl_device, tmp_path):
    dev = with_tuner(cl_device, "fast", tmp_path)
    model, _, ops = block_model()
    planner, part, shapes, fused, dwpw = passes_to_fusion(dev, model)
    (c,) = select(planner, part, shapes, fused, dwpw).choices[ops["CONV_2D"]]
    traits = _gemm_variants.traits(dev.limits)
    other = next(v for v in _conv_variants.FAMILY.space(traits, c.signature, True)
                 if v != c.selected)
    dev.tuner.cache.put("conv", c.signature, {"choice": other, "complete": True,
                                              "measured_as": "chain"})
    sel = select(planner, part, shapes, fused, dwpw)
    (t,) = tune(planner, part, shapes, fused, sel).choices[ops["CONV_2D"]]
    assert t.variant == other and t.reason == "the tuning cache" and t.selected == c.selected
    assert dev.tuner.measured == 0
    memory = plan_memory(model.main, part, shapes.shapes, fused, planner.direct_inputs)
    tuned = tune(planner, part, shapes, fused, sel)
    plan = realize_pass.realize(planner, part, shapes, fused, memory, tuned)
    (la,) = plan.launches
    assert (la.pending[2]["vw"], la.pending[2]["tx"]) == (other["vw"], other["tx"])


def test_only_the_tune_pass_measures(cl_device, tmp_path):
    dev = with_tuner(cl_device, "fast", tmp_path, unbounded=True)
    model, _ = conv3x3_model(c=32, o=32, hw=16)  # above the fast mode's threshold
    planner, part, shapes, fused, dwpw = passes_to_fusion(dev, model)
    sel = select(planner, part, shapes, fused, dwpw)
    assert dev.tuner.measured == 0  # selecting measures nothing
    tuned = tune(planner, part, shapes, fused, sel)
    (gemm,) = [c for c in tuned.choices[0] if c.family == "gemm"]
    assert dev.tuner.measured >= 1 and gemm.reason.startswith("measured now")
    assert dev.tuner.cache.get("gemm", gemm.signature)["choice"] == gemm.variant
    measured, misses = dev.tuner.measured, tuning.MISSES["count"]
    memory = plan_memory(model.main, part, shapes.shapes, fused, planner.direct_inputs)
    plan = realize_pass.realize(planner, part, shapes, fused, memory, tuned)
    realize_pass.finish(plan.launches, planner.programs, dev.limits)
    assert dev.tuner.measured == measured and plan.launches  # realize measured nothing
    assert tuning.MISSES["count"] == misses  # and read every variant from the tune pass
    gemm_launch = next(la for la in plan.launches if la.name == "gemm.gemm")
    assert dict(gemm_launch.key[2])["mr"] == gemm.variant["tile"][0]
