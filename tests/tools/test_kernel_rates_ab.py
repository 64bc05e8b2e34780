"""benchmarks/kernel_rates_ab.py: the classes, sums and rates of its rows, and its worker's
collection (benchmarks/kernel_rates_worker.py), which times every launch of the plans alone,
the chained launches too (their kernels made at their first launch of their own)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import kernel_rates_ab as ab
from benchmarks import kernel_rates_worker as worker
from hal.builder import ModelBuilder

F32 = "TENSOR_FLOAT32"


def row(type_, filt, flop=0, ms=0.0, fused=()):
    ops = [[type_, filt], *fused]
    return {"type": type_, "filter": filt, "flop": flop, "ms": ms, "ops": ops}


def test_kind_of_each_class():
    assert ab.kind(row("CONV_2D", [8, 1, 1, 4])) == "pointwise"
    assert ab.kind(row("CONV_2D", [8, 3, 3, 4])) == "conv"
    assert ab.kind(row("DEPTHWISE_CONV_2D", [1, 3, 3, 8])) == "depthwise"
    dwpw = row("CONV_2D", [8, 1, 1, 4], fused=[["DEPTHWISE_CONV_2D", [1, 3, 3, 4]]])
    assert ab.kind(dwpw) == "dw+pw"
    assert ab.kind(row("ADD", None)) is None


def test_summary_sums_each_class_and_every_operation():
    per = {"0": row("CONV_2D", [8, 1, 1, 4], flop=4_000_000, ms=0.02),
           "1": row("CONV_2D", [8, 1, 1, 8], flop=2_000_000, ms=0.01),
           "2": row("DEPTHWISE_CONV_2D", [1, 3, 3, 8], flop=1_000_000, ms=0.05),
           "3": row("ADD", None, ms=0.5)}
    s = ab.summary(per)
    assert s["pointwise"] == [6_000_000, pytest.approx(0.03)]
    assert s["depthwise"] == [1_000_000, 0.05]
    assert s["conv"] == [0, 0.0]
    assert s["all_ms"] == pytest.approx(0.58)
    rates = ab.rates(s)
    assert rates["pointwise"] == pytest.approx(200.0)  # 6e6 FLOP in 30 us
    assert rates["depthwise"] == pytest.approx(20.0)
    assert rates["conv"] is None and ab.gflops([5, 0.0]) is None


def test_merge_takes_each_operations_median_over_the_rounds():
    rounds = [{"0": row("CONV_2D", [8, 1, 1, 4], ms=ms)} for ms in (0.3, 0.1, 0.2)]
    assert ab.merge(rounds)["0"]["ms"] == 0.2


def tiny_model():
    """CONV_2D 3x3 -> DEPTHWISE_CONV_2D 3x3 -> CONV_2D 1x1 on a 1x8x8x3 input."""
    rng = np.random.default_rng(0)
    b = ModelBuilder()
    x = b.input(F32, [1, 8, 8, 3])

    def const(*shape):
        return b.constant(rng.uniform(-1, 1, shape).astype(np.float32), F32)

    def ints(*vs):
        return [b.int32(v) for v in vs]

    c = b.op("CONV_2D", [x, const(8, 3, 3, 3), const(8), *ints(1, 1, 1, 1, 1, 1, 1),
                         b.bool(False)], b.tensor(F32, [1, 8, 8, 8]))
    d = b.op("DEPTHWISE_CONV_2D", [c, const(1, 3, 3, 8), const(8),
                                   *ints(1, 1, 1, 1, 1, 1, 1, 3), b.bool(False), *ints(1, 1)],
             b.tensor(F32, [1, 8, 8, 8]))
    p = b.op("CONV_2D", [d, const(16, 1, 1, 8), const(16), *ints(1, 1, 1, 0), b.bool(False)],
             b.tensor(F32, [1, 8, 8, 16]))
    b.mark_output(p)
    return b.finish(), rng.uniform(-1, 1, (1, 8, 8, 3)).astype(np.float32)


def test_describe_gives_each_operation_its_flop_and_its_fused_convolutions():
    model, _ = tiny_model()
    sg = model.main
    kinds = [op.type.name for op in sg.operations]
    conv3, dw, pw = (kinds.index("CONV_2D"), kinds.index("DEPTHWISE_CONV_2D"),
                     len(kinds) - 1 - kinds[::-1].index("CONV_2D"))
    per = {str(i): {"ms": 0.01, "kernels": ["k"]} for i in (conv3, pw)}
    worker.describe(per, sg, {dw: pw})
    assert per[str(conv3)]["flop"] == 2 * 8 * 8 * 8 * 3 * 3 * 3
    # the 1x1 convolution's kernel does the depthwise one's work: both FLOP, class dw+pw
    assert per[str(pw)]["flop"] == 2 * 8 * 8 * 16 * 8 + 2 * 8 * 8 * 8 * 3 * 3
    assert ab.kind(per[str(conv3)]) == "conv" and ab.kind(per[str(pw)]) == "dw+pw"


def test_collect_times_every_launch_of_the_plans_the_chained_ones_too():
    from clnn.options import DeviceOptions
    from tests.kits.devices import open_or_skip

    device = open_or_skip("opencl", fallback=False,
                          options=DeviceOptions(chains=True, chain_min_launches=2))
    import pyopencl as cl

    model, x = tiny_model()
    pm = device.prepare_model(model)
    pm.run([x])
    pm.wait_chains()
    launches = [la for p in pm.partitions for pl in p.plans.values() if pl is not None
                for la in pl.launches]
    assert any(la.kernel is None for la in launches), "no chained launch left to make"
    queue = cl.CommandQueue(device.context,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    per = worker.collect(pm, queue, 2, cl.enqueue_nd_range_kernel)
    assert sum(len(r["kernels"]) for r in per.values()) == len(launches)
    assert set(per) == {str(la.op_index) for la in launches}
    assert all(r["ms"] > 0 for r in per.values())
