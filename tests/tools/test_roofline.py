"""The roofline view: FLOP / byte counts per operation family, the rate and fraction of the
peak per operation and per type, the profile's printed format, and the peak cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from clnn.bench import roofline
from hal.builder import ModelBuilder


def small_model():
    """CONV_2D 3x3 (8x8x3 -> 8x8x16) -> DEPTHWISE 3x3 -> FULLY_CONNECTED via RESHAPE, + ADD."""
    b = ModelBuilder()
    f32 = "TENSOR_FLOAT32"
    x = b.input(f32, [1, 8, 8, 3])
    w = b.constant(np.ones((16, 3, 3, 3), np.float32))
    bias = b.constant(np.zeros(16, np.float32))
    y = b.op("CONV_2D", [x, w, bias, *[b.int32(v) for v in (1, 1, 1, 0)]],
             b.tensor(f32, [1, 8, 8, 16]))
    dw = b.constant(np.ones((1, 3, 3, 16), np.float32))
    z = b.op("DEPTHWISE_CONV_2D", [y, dw, bias, *[b.int32(v) for v in (1, 1, 1, 1, 0)]],
             b.tensor(f32, [1, 8, 8, 16]))
    s = b.op("ADD", [y, z, b.int32(0)], b.tensor(f32, [1, 8, 8, 16]))
    r = b.op("RESHAPE", [s, b.constant(np.array([1, 1024], np.int32))], b.tensor(f32, [1, 1024]))
    fw = b.constant(np.ones((10, 1024), np.float32))
    fb = b.constant(np.zeros(10, np.float32))
    out = b.op("FULLY_CONNECTED", [r, fw, fb, b.int32(0)], b.tensor(f32, [1, 10]))
    b.mark_output(out)
    return b.finish().main


def by_type(sg):
    return {op.type.name: k for k, op in enumerate(sg.operations)}


def test_counts_per_family():
    sg = small_model()
    k = by_type(sg)
    # 2 FLOP per multiply-add: outputs x window x input channels (per group)
    assert roofline.counts(sg, k["CONV_2D"])[0] == 2 * 8 * 8 * 16 * 3 * 3 * 3
    assert roofline.counts(sg, k["DEPTHWISE_CONV_2D"])[0] == 2 * 8 * 8 * 16 * 3 * 3
    assert roofline.counts(sg, k["FULLY_CONNECTED"])[0] == 2 * 10 * 1024
    # memory-bound: no FLOP; bytes of two inputs and the output, scalars not counted
    flop, nbytes = roofline.counts(sg, k["ADD"])
    assert (flop, nbytes) == (0, 3 * 1024 * 4)
    # the shape operand of RESHAPE is a small tensor: counted (2 int32)
    assert roofline.counts(sg, k["RESHAPE"]) == (0, 2 * 1024 * 4 + 8)


def test_counts_at_planned_shapes():
    """A dimension the model leaves open (an ONNX import's batch: 0) counts nothing; the
    plans' shapes (ClPreparedModel.planned_shapes) count it as run."""
    sg = small_model()
    k = by_type(sg)
    conv = sg.operations[k["CONV_2D"]]
    want = roofline.counts(sg, k["CONV_2D"])
    shapes = {i: tuple(sg.operands[i].dimensions) for i in (*conv.inputs, *conv.outputs)
              if i >= 0}
    for i in (conv.inputs[0], conv.outputs[0]):
        sg.operands[i].dimensions = [0, *sg.operands[i].dimensions[1:]]
    assert roofline.counts(sg, k["CONV_2D"])[0] == 0
    assert roofline.counts(sg, k["CONV_2D"], shapes) == want


def test_op_flop_other_families():
    # BATCH_MATMUL [2, 5, 7] x [2, 7, 3] -> [2, 5, 3]; with adj_x [2, 7, 5]
    assert roofline.op_flop("BATCH_MATMUL", [(2, 5, 7), (2, 7, 3)], [(2, 5, 3)]) == 2 * 30 * 7
    assert roofline.op_flop("BATCH_MATMUL", [(2, 7, 5), (2, 7, 3)], [(2, 5, 3)]) == 2 * 30 * 7
    # TRANSPOSE_CONV_2D: input 1x4x4x2, filter [O=3, 2, 2, 2]
    assert roofline.op_flop("TRANSPOSE_CONV_2D", [(1, 4, 4, 2), (3, 2, 2, 2)],
                            [(1, 8, 8, 3)]) == 2 * 32 * 3 * 2 * 2
    # GROUPED_CONV_2D: filter [O, fh, fw, C / groups]
    assert roofline.op_flop("GROUPED_CONV_2D", [(1, 4, 4, 4), (6, 1, 1, 2)],
                            [(1, 4, 4, 6)]) == 2 * 96 * 2
    assert roofline.op_flop("ADD", [(4,), (4,)], [(4,)]) == 0
    assert roofline.op_flop("CONV_2D", [(), ()], [()]) == 0  # unknown shapes


def test_annotate_rates_fractions_and_totals():
    sg = small_model()
    k = by_type(sg)
    rows = [{"operation": k["CONV_2D"], "type": "CONV_2D", "kernels": ["gemm.gemm"],
             "ms": 0.01, "share": 0.5},
            {"operation": k["ADD"], "type": "ADD", "kernels": ["broadcast.binary"],
             "ms": 0.001, "share": 0.05},
            {"operation": k["RESHAPE"], "type": "RESHAPE", "kernels": ["fused into operation 0"],
             "ms": 0.0, "share": 0.0}]
    totals = roofline.annotate(rows, sg, (100.0, 10.0))
    conv_flop = 2 * 8 * 8 * 16 * 27
    assert rows[0]["bound"] == "compute"
    assert rows[0]["rate"] == pytest.approx(conv_flop / 1e-5 / 1e9)
    assert rows[0]["peak_fraction"] == pytest.approx(rows[0]["rate"] / 100.0)
    assert rows[1]["bound"] == "memory"
    assert rows[1]["rate"] == pytest.approx(3 * 4096 / 1e-6 / 1e9)
    assert rows[1]["peak_fraction"] == pytest.approx(rows[1]["rate"] / 10.0)
    assert "rate" not in rows[2]  # no kernel time: no rate
    assert [t["type"] for t in totals] == ["CONV_2D", "ADD"]
    assert totals[0]["count"] == 1 and totals[0]["flop"] == conv_flop
    # without a peak: rates, no fractions
    rows2 = [dict(rows[0])]
    roofline.annotate(rows2, sg, None)
    assert rows2[0]["peak_fraction"] is None and rows2[0]["rate"] > 0


def test_print_profile_format(capsys):
    sg = small_model()
    k = by_type(sg)
    rows = [{"operation": k["CONV_2D"], "type": "CONV_2D", "kernels": ["gemm.gemm"],
             "ms": 0.02, "share": 0.8},
            {"operation": k["ADD"], "type": "ADD", "kernels": ["broadcast.binary"],
             "ms": 0.005, "share": 0.2}]
    totals = roofline.annotate(rows, sg, (50.0, 20.0))
    report = {"profile": rows, "profile_totals": totals,
              "peak": {"gflops": 50.0, "gbs": 20.0, "source": "cached by clnn bench peak"}}
    roofline.print_profile(report, top=10)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "device peak (cached by clnn bench peak): 50.0 GFLOP/s FMA, 20.0 GB/s copy"
    conv = next(line for line in out if " CONV_2D " in line and "gemm.gemm" in line)
    rate = 2 * 8 * 8 * 16 * 27 / 2e-5 / 1e9
    assert f"{rate:8.1f} GFLOP/s" in conv and f"{100 * rate / 50:5.1f}%" in conv
    add = next(line for line in out if " ADD " in line and "broadcast" in line)
    assert "GB/s" in add
    i = out.index("per operation type:")
    assert out[i + 2].split()[:2] == ["CONV_2D", "1"]
    assert out[i + 3].split()[:2] == ["ADD", "1"]


def test_peak_cache_is_per_identity(tmp_path, monkeypatch):
    from clnn.bench import bench_peak
    from clnn.options import DeviceOptions

    class Named:
        def __init__(self, name, version=""):
            self.name, self.version, self.driver_version = name, version, "1.0"

    class Dev:
        platform = Named("P", "OpenCL 3.0")
        cl_device = Named("D")
        options = DeviceOptions(cache_dir=str(tmp_path))

    rec = {"schema": bench_peak.SCHEMA, "identity": bench_peak.cache_file(Dev)[1],
           "fma": {"gflops": 12.0}, "bandwidth": {"gbs": 3.0}}
    bench_peak.save_peak(Dev, rec)
    assert bench_peak.peak_figures(bench_peak.load_peak(Dev)) == (12.0, 3.0)
    # the same file read for a device whose driver differs: not used
    path, _ = bench_peak.cache_file(Dev)
    Dev.cl_device.driver_version = "2.0"
    other, _ = bench_peak.cache_file(Dev)
    other.write_text(json.dumps(rec))
    assert bench_peak.load_peak(Dev) is None


def test_bench_peak_measures_and_caches(cl_device, tmp_path, monkeypatch):
    from clnn.bench import bench_peak

    cl_device = cl_device.with_options(cache_dir=str(tmp_path))
    monkeypatch.setattr(bench_peak, "COPY_BYTES", 1 << 20)
    monkeypatch.setattr(bench_peak, "FMA_ITERS", 16)
    rec = bench_peak.load_or_measure_peak(cl_device)
    assert not rec["cached"]
    g, b = bench_peak.peak_figures(rec)
    assert g > 0 and b > 0
    assert set(rec["fma"]["per_width"]) == {str(w) for w in bench_peak.FMA_WIDTHS}
    again = bench_peak.load_or_measure_peak(cl_device)
    assert again["cached"] and bench_peak.peak_figures(again) == (g, b)
    assert "GFLOP/s" in bench_peak.format_peak(again, "dev")
