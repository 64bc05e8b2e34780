"""Tuning (clnn/tuning.py, clnn/kernels/_gemm_variants.py): every GEMM variant the tuner or
the heuristic can choose against the reference device on shapes that admit it (tile edges in
both dimensions), the heuristic's choices (PoCL: the tile measured before tuning existed), the
cache (JSON per device identity: reused by a second process without measuring, never used for
another device or driver) and the budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clnn import tuning
from clnn.kernels import _conv_variants as _cv
from clnn.kernels import _defaults, _gemm, _gemm_variants
from clnn.kernels import _depthwise_variants as _dv
from clnn.kernels._gemm_variants import Traits, candidates, heuristic
from tests.kits.cl_compare import assert_close, compare, outputs_of, run_cl, run_ref
from tests.kits.cl_conv_cases import conv_operands, ints, kind_of
from tests.kits.one_op_models import one_op_model
from tests.kits.slices import slow_unless

CPU = Traits(cpu=True, max_wg=4096, max_items=(4096, 4096, 4096), local_mem=1 << 20)
GPU = Traits(cpu=False, max_wg=256, max_items=(1024, 1024, 64), local_mem=48 << 10)
#: a CPU of native float vectors of 8 (PoCL on AVX2)
AVX2 = Traits(cpu=True, max_wg=4096, max_items=(4096, 4096, 4096), local_mem=1 << 20, vec=8)
#: output channels of the test layers: admits every tile (nr <= 48) and leaves a partial one
N = 40
ROOT = Path(__file__).resolve().parents[2]


def _wg(wg) -> str:
    return "x".join(map(str, wg)) if isinstance(wg, list) else str(wg)


def variant_ids(vs):
    return [f"t{'x'.join(map(str, v['tile']))}-wg{_wg(v['wg'])}" for v in vs]


def union(*lists) -> list:
    out = []
    for v in (v for vs in lists for v in vs):
        if v not in out:
            out.append(v)
    return out


ALL = union(candidates(CPU, N), candidates(AVX2, N), candidates(GPU, N))


def conv_model(name, x_shape, f_shape, out_shape, params, seed=0):
    xs, fs, bs, out, x = conv_operands(name, np.random.default_rng(seed), x_shape, f_shape)
    return one_op_model("CONV_2D", [xs, fs, bs, *params], [out(out_shape)]), [x]


def force(monkeypatch, v):
    monkeypatch.setattr(_gemm_variants, "choose", lambda b, **kw: v)


@pytest.mark.parametrize("v", ALL, ids=variant_ids(ALL))
def test_variant_matches_reference_conv(cl_device, monkeypatch, v):
    force(monkeypatch, v)
    # 3x3 SAME over 9x7x5: im2col packed A with M = 63 (no tile divides it), N = 40, relu
    m, x = conv_model("f32", [1, 9, 7, 5], [N, 3, 3, 5], [1, 9, 7, N], ints(1, 1, 1, 1))
    compare(m, x, cl_device, kind_of("f32"))


TILES = sorted({tuple(v["tile"]) for v in ALL})


@pytest.mark.parametrize("tile", TILES, ids=["x".join(map(str, t)) for t in TILES])
def test_variant_matches_reference_rows(cl_device, monkeypatch, tile):
    # 1x1 stride 1: A is the input rows (amode "rows"), M = 35 rows, driver's groups
    force(monkeypatch, {"tile": list(tile), "wg": None})
    m, x = conv_model("f32", [1, 5, 7, 24], [N, 1, 1, 24], [1, 5, 7, N], ints(2, 1, 1, 0))
    compare(m, x, cl_device, kind_of("f32"))


@pytest.mark.parametrize("name", ["f16", "qa", "qs_pc"])
@pytest.mark.parametrize("n", [N, 2])
def test_gpu_heuristic_other_types(cl_device, monkeypatch, name, n):
    # the heuristic variant of a GPU runs every type (the tuner only measures float32)
    force(monkeypatch, heuristic(GPU, n))
    m, x = conv_model(name, [1, 6, 5, 7], [n, 3, 3, 7], [1, 6, 5, n], ints(1, 1, 1, 0))
    compare(m, x, cl_device, kind_of(name))


def test_heuristic_is_the_pocl_tile_on_cpus():
    """The CPU rule (clnn.kernels._gemm.pick_tile, benchmarks/gemm_tile_rule.py)."""
    for n in (1, 8, 12, 16, 17, 40, 1024):
        assert heuristic(CPU, n) == {"tile": list(_gemm.pick_tile(n)), "wg": "auto"}
    # 8 x 8 below 16 columns, 4 x 24 on 24, 8 x 16 on wider ones (a partial last vector
    # included) but multiples of 32 from 64 and wide deep ones: 8 x 32
    assert [heuristic(CPU, n, 3136, 24)["tile"] for n in (8, 16, 24, 28, 40, 144, 192)] == \
        [[8, 1, 8], [8, 1, 16], list(_gemm.NARROW24), [8, 1, 8], [8, 1, 16], [8, 1, 16],
         list(_gemm.TILE)]
    assert [heuristic(CPU, n, 169, 512)["tile"] for n in (24, 34, 112, 1000)] == \
        [[8, 1, 16], [8, 1, 16], [8, 1, 16], list(_gemm.TILE)]
    assert {"tile": list(_gemm.NARROW24), "wg": "auto"} in candidates(CPU, 24, full=False)
    assert heuristic(CPU, 1024, 1024, 1024)["tile"] == list(_gemm.TILE)
    # packed (im2col) A: 8 x 32 from 32 columns on
    assert [heuristic(CPU, n, 64, 288, packed=True)["tile"] for n in (16, 24, 32, 1404)] == \
        [[8, 1, 16], [8, 1, 16], list(_gemm.TILE), list(_gemm.TILE)]
    # one to four rows (a batch-1 FULLY_CONNECTED, face_landmark's 1 x 1404 x 288 layer): 2
    # or 4 rows of 32 columns, not 8 rows of which 7 copy the first
    assert [heuristic(CPU, 1000, m, 1024)["tile"] for m in (1, 2, 4, 8)] == \
        [[2, 2, 16], [2, 2, 16], [4, 2, 16], list(_gemm.TILE)]
    assert candidates(CPU, 1404, m=1, k=288, packed=True)[0]["tile"] == [2, 2, 16]


def test_tiny_gemms_take_the_common_tiles():
    # (#37) a GEMM of at most _gemm.TINY multiply-adds: 8 x 16 below 16 columns, 8 x 32 from
    # 32 (the tiles of its model's wider layers: fewer kernel keys to compile), but one to four
    # rows of 32 columns or more keep their 2 or 4 rows (8 would multiply copies of the first)
    tiny = [(49, 6, 288), (1, 1, 1152), (16, 32, 128), (4, 8, 128), (1, 63, 1152),
            (1, 32, 128), (4, 288, 288), (4, 32, 64)]
    assert [heuristic(CPU, n, m, k)["tile"] for m, n, k in tiny] == \
        [[8, 1, 16], [8, 1, 16], list(_gemm.TILE), [8, 1, 16], [2, 2, 16], [2, 2, 16],
         [4, 2, 16], [4, 2, 16]]
    assert all(m * n * k <= _gemm.TINY for m, n, k in tiny)
    # above it, and with m or k unknown: the rule as measured
    assert heuristic(CPU, 8, 4096, 48)["tile"] == [8, 1, 8]
    assert heuristic(CPU, 1404, 1, 288)["tile"] == [2, 2, 16]
    assert heuristic(CPU, 288, 4, 1152)["tile"] == [4, 2, 16]
    assert heuristic(CPU, 8)["tile"] == [8, 1, 8]
    # narrow vectors keep their rule
    assert heuristic(AVX2, 6, 49, 288)["tile"] == [8, 1, 8]


def test_heuristic_on_narrow_vectors_keeps_accumulators_in_registers():
    # AVX2 (16 vector registers): 4 x 16 (8 accumulator vectors), 4 x 24 on multiples of 24
    # that are not of 16, 8 x 8 up to 8 columns
    assert [heuristic(AVX2, n, 784, 144)["tile"] for n in (4, 8, 16, 24, 32, 48, 72, 144)] \
        == [[8, 1, 8]] * 2 + [[4, 1, 16], [4, 3, 8], [4, 1, 16], [4, 1, 16], [4, 3, 8],
                              [4, 1, 16]]
    for n in (8, 24, 32, 40, 1152):
        mr, nv, vw = heuristic(AVX2, n)["tile"]
        assert mr * nv * vw <= 12 * 8  # floats of accumulators: 12 of the 16 registers
        assert heuristic(AVX2, n) in candidates(AVX2, n, full=False)
    # vectors of 4 (SSE, NEON): the same rule in vectors of 4
    sse = Traits(cpu=True, max_wg=4096, max_items=(4096,) * 3, local_mem=1 << 15, vec=4)
    assert [heuristic(sse, n)["tile"] for n in (4, 12, 144)] == [[8, 1, 4], [4, 3, 4],
                                                                 [4, 1, 8]]


def test_gpu_variants_fit_registers_and_groups():
    for v in candidates(GPU, N):
        mr, nv, vw = v["tile"]
        assert mr * nv * vw <= 32  # floats of accumulators per work-item
        assert v["wg"] not in ("auto",)
        if v["wg"] is not None:
            assert 64 <= v["wg"][0] * v["wg"][1] <= GPU.max_wg
    small = Traits(cpu=False, max_wg=64, max_items=(64, 64, 64), local_mem=0)
    assert all(v["wg"] is None or v["wg"][0] * v["wg"][1] <= 64 for v in candidates(small, N))
    assert heuristic(small, N)["wg"][0] * heuristic(small, N)["wg"][1] <= 64


def test_fit_group_divides_global_size():
    assert _gemm.fit_group((63, 5, 1), [16, 8]) == (9, 5, 1)
    assert _gemm.fit_group((7, 1, 1), [4, 8]) is None  # 1 x 1: the driver's choice
    for g0 in range(1, 40):
        lg = _gemm.fit_group((g0, 12, 1), [16, 4])
        assert lg is None or (g0 % lg[0] == 0 and 12 % lg[1] == 0)


IDENT = {"platform": "Portable Computing Language", "platform_version": "OpenCL 3.0 PoCL 6.0",
         "device": "cpu-x", "driver_version": "6.0"}
SIG = {"dt": "f32", "amode": "rows", "M": 4096, "N": 16, "K": 32, "batches": 1}


def test_cache_persists_per_identity(tmp_path):
    c = tuning.TuningCache(IDENT, tmp_path)
    c.put("gemm", SIG, {"choice": {"tile": [8, 1, 16], "wg": None}, "complete": True})
    c.save()
    again = tuning.TuningCache(dict(IDENT), tmp_path)
    assert again.get("gemm", SIG)["choice"] == {"tile": [8, 1, 16], "wg": None}
    assert again.get("gemm", {**SIG, "M": 4095}) is None
    # another driver version or device: another file, nothing found
    for k, v in (("driver_version", "6.1"), ("device", "gpu-y"), ("platform_version", "x")):
        other = tuning.TuningCache({**IDENT, k: v}, tmp_path)
        assert other.path != c.path and other.get("gemm", SIG) is None
        # even a file of the other identity's name holding this one's entries is not used
        other.path.write_text(c.path.read_text())
        assert tuning.TuningCache({**IDENT, k: v}, tmp_path).get("gemm", SIG) is None
    # a corrupt file is ignored, then written again
    c.path.write_text("{not json")
    assert tuning.TuningCache(IDENT, tmp_path).entries == {}


def test_modes():
    from clnn.options import DeviceOptions, from_environ

    full = DeviceOptions(tune="full", tune_budget_s=0.25)
    assert tuning.mode(full) == "full" and tuning.budget_s(full) is None
    assert tuning.budget_s(DeviceOptions(tune_budget_s=0.25)) == 0.25
    assert tuning.mode() == "cached" and tuning.budget_s() == tuning.FAST_BUDGET_S
    with pytest.raises(ValueError, match="CLNN_TUNE='fastest'"):
        from_environ({"CLNN_TUNE": "fastest"})


def fake_measurements(monkeypatch, calls, ms):
    """tuning.measure_candidates without a device: ``ms(candidate)``, calls recorded."""
    def fake(dev, run, cands, reps, may_continue, how=None):
        times, tried = {}, 0
        for n, c in enumerate(cands):
            if n and not may_continue():
                break
            tried += 1
            calls.append(c)
            times[tuning._key(c)] = ms(c)
        return times, tried

    monkeypatch.setattr(tuning, "measure_candidates", fake)


def test_cached_mode_reads_the_cache_and_never_measures(monkeypatch, tmp_path):
    """The default: a choice ``clnn tune`` (or a "fast" prepare) measured is taken, including
    one cut short by a budget; any other layer gets the default, and nothing is measured or
    written (a later "fast" prepare still measures it)."""
    calls = []
    fake_measurements(monkeypatch, calls, lambda c: 1.0 if c == "a" else 0.5)
    cache = tuning.TuningCache(IDENT, tmp_path)
    t = tuning.Tuner(None, "cached", cache)
    assert t.choose(0, "gemm", SIG, ["a", "b"], "a", None, flop=1e9) == "a"
    assert not calls and t.measured == 0 and cache.entries == {}
    cache.put("gemm", SIG, {"choice": "b", "complete": False,
                            "times_ms": {'"a"': 1.0, '"b"': 0.5}})
    assert t.choose(0, "gemm", SIG, ["a", "b"], "a", None, flop=1e9) == "b" and not calls
    fast = tuning.Tuner(None, "fast", tuning.TuningCache(IDENT, tmp_path / "other"))
    assert fast.choose(0, "gemm", SIG, ["a", "b"], "a", None, flop=1e9) == "b"
    assert calls == ["a", "b"]


def test_an_entry_cut_short_before_todays_default_yields_to_it(monkeypatch, tmp_path):
    """An entry cut short by a budget that measured only an earlier heuristic's default (the
    default has changed since) holds no evidence against today's default: the reusing modes
    take today's; a complete entry, or one that measured today's default, stands."""
    calls = []
    fake_measurements(monkeypatch, calls, lambda c: 1.0)
    cache = tuning.TuningCache(IDENT, tmp_path)
    cache.put("gemm", SIG, {"choice": "b", "complete": False, "times_ms": {'"b"': 1.0}})
    for mode in ("cached", "fast"):
        t = tuning.Tuner(None, mode, cache)
        assert t.choose(0, "gemm", SIG, ["a", "b"], "a", None, flop=1e9, measure=False) == "a"
        assert t.choose(0, "gemm", SIG, ["a", "b"], "b", None, flop=1e9, measure=False) == "b"
    cache.put("gemm", SIG, {"choice": "b", "complete": True, "times_ms": {'"b"': 1.0}})
    t = tuning.Tuner(None, "cached", cache)
    assert t.choose(0, "gemm", SIG, ["a", "b"], "a", None, flop=1e9) == "b" and not calls


def test_budget_and_threshold(monkeypatch, tmp_path):
    calls = []
    fake_measurements(monkeypatch, calls, lambda c: 1.0 if c == "a" else 0.5)
    t = tuning.Tuner(None, "fast", tuning.TuningCache(IDENT, tmp_path), budget=10.0)
    # too small a layer: the default, nothing measured
    assert t.choose(0, "gemm", SIG, ["a", "b"], "a", None, flop=1.0) == "a" and not calls
    assert t.choose(0, "gemm", SIG, ["a", "b"], "a", None, flop=1e9) == "b"
    assert calls == ["a", "b"] and t.records[-1].gain == 2.0
    # cached now: no measurement
    assert t.choose(1, "gemm", SIG, ["a", "b"], "a", None, flop=1e9) == "b"
    assert calls == ["a", "b"] and t.records[-1].cached
    # scratch buffers too big to hold one per candidate: the default, unmeasured
    assert t.choose(3, "gemm", {**SIG, "M": 2}, ["a", "b"], "a", None, flop=1e9,
                    scratch_bytes=tuning.MAX_SCRATCH_BYTES + 1) == "a"
    assert len(calls) == 2
    # budget spent: the default, unmeasured, and kept as the heuristic's entry
    t.spent = t.budget
    assert t.choose(2, "gemm", {**SIG, "M": 1}, ["a", "b"], "a", None, flop=1e9) == "a"
    assert len(calls) == 2
    t.flush()
    entry = tuning.TuningCache(IDENT, tmp_path).get("gemm", {**SIG, "M": 1})
    assert entry == {"complete": False, "measured": False}
    # a later prepare (a fresh budget) measures nothing: the heuristic of the day chooses
    again = tuning.Tuner(None, "fast", tuning.TuningCache(IDENT, tmp_path), budget=10.0)
    assert again.choose(2, "gemm", {**SIG, "M": 1}, ["a", "b"], "a", None, flop=1e9) == "a"
    assert again.choose(2, "gemm", {**SIG, "M": 1}, ["b", "a"], "b", None, flop=1e9) == "b"
    assert len(calls) == 2 and again.records[-1].cached
    # clnn tune --fast (no budget) measures it
    ahead = tuning.Tuner(None, "fast", tuning.TuningCache(IDENT, tmp_path), unbounded=True)
    assert ahead.choose(2, "gemm", {**SIG, "M": 1}, ["a", "b"], "a", None, flop=1e9) == "b"
    assert len(calls) == 4
    # off: neither read nor measured
    off = tuning.Tuner(None, "off", None)
    assert off.choose(0, "gemm", SIG, ["a", "b"], "a", None, flop=1e9) == "a"


def tuned_model():
    """One 1x1 convolution worth tuning (M 4096, N 16, K 32: 4.2 MFLOP)."""
    return conv_model("f32", [1, 64, 64, 32], [16, 1, 1, 32], [1, 64, 64, 16],
                      ints(2, 1, 1, 0), seed=3)


_CHILD = """
import json, sys
from clnn import tuning
from clnn.device import ClDevice
from clnn.options import DeviceOptions
from tests.cl.test_cl_tuning import tuned_model
m, x = tuned_model()
opts = DeviceOptions(tune="fast", tune_budget_s=1000, cache_dir=sys.argv[1],
                    companion=False)
dev = ClDevice(options=opts)
pm = dev.prepare_model(m)
t = tuning.tuner_for(dev)
print(json.dumps({"measured": t.measured, "cached": [r.cached for r in t.records],
                  "choice": [r.choice for r in t.records]}))
"""


def test_second_process_reuses_without_measuring(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def child():
        out = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path)], env=env,
                             capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    first = child()
    assert first["measured"] == 1 and first["cached"] == [False]
    entries = json.loads(next((tmp_path / "tuning").glob("*.json")).read_text())["entries"]
    assert len(entries) == 1 and next(iter(entries.values()))["complete"]
    second = child()
    assert second["measured"] == 0 and second["cached"] == [True]
    assert second["choice"] == first["choice"]


_CHILD_BLOCK = """
import json, logging, sys
logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
from clnn import program_cache, tuning
from clnn.device import ClDevice
from clnn.options import DeviceOptions
from tests.kits.pass_models import tuned_block_model
m, x = tuned_block_model()
dev = ClDevice(options=DeviceOptions(tune="fast", tune_budget_s=0.01, cache_dir=sys.argv[1],
                                     companion=False))
pm = dev.prepare_model(m)
print(json.dumps({"measured": tuning.tuner_for(dev).measured,
                  "keys": sorted(repr(k) for k in pm.planner.programs._programs),
                  "compiled": program_cache.STATS["compiled"],
                  "from_binary": program_cache.STATS["from_binary"],
                  "pocl": program_cache.is_pocl(dev.platform)}))
"""


def test_the_second_process_compiles_nothing_the_first_did_not(tmp_path):
    """The first process measures a layer (the "fast" tuning) and the second reads its choice
    from the tuning cache: the same kernels, built as the same programs, so the second finds
    every one in PoCL's kernel cache and compiles nothing (the candidates the tuner measured
    are built apart from the model's programs: clnn.tuning.scratch_programs). The first says
    what it measures and compiles (clnn's log, INFO), the second measures nothing."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "POCL_CACHE_DIR": str(tmp_path / "pocl")}

    def child():
        out = subprocess.run([sys.executable, "-c", _CHILD_BLOCK, str(tmp_path / "clnn")],
                             env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr

    def compiled():  # PoCL's programs and kernels (not its temporary files)
        return sorted(str(p) for p in (tmp_path / "pocl").rglob("*")
                      if p.suffix in (".bc", ".so"))

    first, log = child()
    assert first["measured"] >= 1 and "clnn: tuning (tune=fast): measuring" in log
    if not first["pocl"]:
        pytest.skip("not PoCL: no kernel cache directory to compare")
    assert "clnn: compiling 2 OpenCL kernels" in log  # (a cold PoCL cache)
    programs = compiled()
    second, log = child()
    assert second["measured"] == 0 and second["keys"] == first["keys"]
    assert "tuning" not in log
    # (the model's kernels: one program each, from the binaries the first process kept)
    assert first["compiled"] >= 2 and second["compiled"] == 0
    assert second["from_binary"] >= 2
    assert compiled() == programs, "the second process compiled kernels the first did not"


def test_tuned_choice_runs_correctly(cl_device, tmp_path, monkeypatch):
    # whatever the tuner picks for this layer matches the reference
    cl_device = cl_device.with_options(cache_dir=str(tmp_path))
    monkeypatch.setattr(cl_device, "tuner", None, raising=False)
    cl_device = cl_device.with_options(tune_budget_s=1000)
    tuner = tuning.tuner_for(cl_device, "fast")
    try:
        m, x = tuned_model()
        compare(m, x, cl_device, kind_of("f32"))
        assert tuner.records and tuner.records[0].choice in candidates(
            _gemm_variants.traits(cl_device.limits), 16, full=False)
    finally:
        cl_device.tuner = None


def test_clnn_tune_command(tmp_path, monkeypatch, capsys):
    """clnn tune: the layer's choice, its gain, then a second run from the cache."""
    from clnn.cli.main import main
    from tests.kits.tflite_writer import Graph

    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path))
    g = Graph()
    x = g.tensor([1, 32, 32, 16], name="x")
    w = g.tensor([16, 1, 1, 16], data=np.random.default_rng(0).uniform(
        -1, 1, (16, 1, 1, 16)).astype(np.float32))
    y = g.tensor([1, 32, 32, 16])  # M 1024, N 16, K 16: 0.5 MFLOP
    g.op("CONV_2D", [x, w, -1], [y], "Conv2DOptions", Padding=0, StrideW=1, StrideH=1)
    path = tmp_path / "conv.tflite"
    path.write_bytes(g.write(inputs=[x], outputs=[y]))
    assert main(["tune", str(path), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    (layer,) = first["models"][0]["layers"]
    assert layer["signature"] == {"dt": "f32", "amode": "rows", "M": 1024, "N": 16, "K": 16,
                                  "batches": 1}
    assert not layer["cached"] and layer["default_ms"] > 0 and layer["best_ms"] > 0
    assert layer["best_ms"] <= layer["default_ms"] and layer["gain"] >= 1.0
    assert main(["tune", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 layer tuned" in out and "(cached)" in out and "tile " in out
    # a file that is no model: reported, the other model still tuned, exit status 1
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a model")
    assert main(["tune", str(bad), str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("clnn tune: cannot import") and "bad.tflite" in captured.err
    assert "bad.tflite: not tuned" in captured.out and "1 layer tuned" in captured.out


# ------------------------------------------------------------------ depthwise_tile variants
DW = dict(o=24, ow=7, fw=3, sw=2, dw=1, fh=3)  # 24 channels: vectors of 8, 4, 2; 7 columns
DW_ALL = _dv.candidates(True, **DW) + [v for v in _dv.candidates(False, **DW)
                                       if v not in _dv.candidates(True, **DW)]


def _dw_id(v):
    kind = "slide-" if v.get("slide") else "sweep-" if v.get("sweep") else ""
    return f"{kind}vw{v['vw']}-tx{v['tx']}-r{v['rows']}"


@pytest.mark.parametrize("v", DW_ALL, ids=[_dw_id(v) for v in DW_ALL])
def test_depthwise_variant_matches_reference(cl_device, monkeypatch, v):
    monkeypatch.setattr(_dv, "choose", lambda b, **kw: v)
    rng = np.random.default_rng(5)
    xs, fs, bs, out, x = conv_operands("f32", rng, [2, 13, 14, 24], [1, 3, 3, 24],
                                       channel_dim=3)
    # SAME padding, stride 2, multiplier 1, relu6: output 7 x 7
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *ints(1, 2, 2, 1, 3)],
                     [out([2, 7, 7, 24])])
    compare(m, [x], cl_device, kind_of("f32"))


def test_depthwise_heuristic_on_cpus():
    # the sliding window for 3x3 and strided filters (x dilation 1), widest vector, one row
    # per work-group
    assert _dv.heuristic(True, 32, 112, 3, 1, 1, vec=8, fh=3) == {
        "vw": 16, "tx": 1, "rows": 1, "slide": 1}
    assert _dv.heuristic(True, 24, 3, 5, 2, 1, vec=8, fh=5) == {
        "vw": 8, "tx": 1, "rows": 1, "slide": 1}
    assert _dv.heuristic(True, 64, 1, 3, 1, 1, vec=8, fh=3)["slide"] == 1  # one pixel a row
    # channel counts 16 does not divide (above 16): vectors of 16 where native vectors hold
    # 16 floats, the last one overlapping (one kernel for them all), 2 vectors for 24
    # channels; 8 channels, a GPU and 8-float native vectors: the widest divisor
    for o in (24, 36, 42, 88):
        assert _dv.heuristic(True, o, 32, 3, 1, 1, vec=16, fh=3)["vw"] == 16
        assert _dv.heuristic(True, o, 32, 5, 1, 1, vec=16, fh=5, sh=1, oh=32)["vw"] == 16
    assert _dv.kernel(_dv.heuristic(True, 24, 32, 3, 1, 1, vec=16, fh=3),
                      {"dt": "f32", "fdt": "f32", "vw": 16, "tx": 1, "fw": 3, "sw": 1,
                       "dw": 1}, 3, 32, 32, 24)[2] == (2, 1, 32)
    assert _dv.heuristic(True, 8, 32, 3, 1, 1, vec=16, fh=3)["vw"] == 8
    assert _dv.heuristic(True, 24, 32, 3, 1, 1, vec=8, fh=3)["vw"] == 8
    assert _dv.heuristic(False, 24, 32, 3, 1, 1, vec=16, fh=3)["vw"] <= 4
    # 5x5 stride 1: the sliding window where its 25 filter vectors fit (native vectors of 16:
    # AVX-512), else (AVX2: 50 ymm) the row sweep; 7x7 (49 vectors) and 1x1: the row sweep
    assert _dv.heuristic(True, 32, 112, 5, 1, 1, vec=16, fh=5) == {
        "vw": 16, "tx": 1, "rows": 1, "slide": 1}
    assert _dv.heuristic(True, 32, 112, 5, 1, 1, vec=8, fh=5) == {
        "vw": 16, "tx": 4, "rows": 1, "sweep": 1}
    assert "sweep" in _dv.heuristic(True, 32, 112, 7, 1, 1, vec=16, fh=7)
    assert "sweep" in _dv.heuristic(True, 32, 112, 1, 1, 1, vec=8, fh=1)
    # the compiled row is a candidate only (a kernel per row geometry), but for the narrow
    # rows of filters of more than 9 taps at stride 1 (the device class's dw_row_narrow: one
    # tile of 8) where native vectors hold 16 floats
    from clnn.kernels import _defaults

    narrow = min(_defaults.TABLE["cpu"].dw_row_narrow, 8)
    assert all(("row" in _dv.heuristic(True, 32, ow, f, s, 1, vec=v, fh=f)) ==
               (ow <= narrow and f == 5 and s == 1 and v == 16)
               for ow in (1, 7, 8, 12, 112) for f in (1, 3, 5) for s in (1, 2) for v in (8, 16))
    if narrow:
        assert _dv.heuristic(True, 1152, narrow, 5, 1, 1, vec=16, fh=5, sh=1, oh=narrow) == {
            "vw": 16, "tx": 8, "rows": 1, "row": 1}
    assert "row" not in _dv.heuristic(True, 32, 7, 5, 1, 1, vec=16, fh=5, quant=True)
    # dilated along x: the row sweep (4 pixels a step, fitted to 8 native vectors)
    assert _dv.heuristic(True, 32, 112, 3, 1, 2, vec=8, fh=3) == {
        "vw": 16, "tx": 4, "rows": 1, "sweep": 1}
    assert "sweep" not in _dv.heuristic(True, 64, 4, 3, 1, 2, vec=8, fh=3)  # one step a row
    for fh, fw, sw in ((9, 9, 1), (1, 1, 2)):  # 81 taps; a stride wider than the filter
        h = _dv.heuristic(True, 32, 112, fw, sw, 1, vec=8, fh=fh)
        assert not {"slide", "row"} & set(h) and ("sweep" in h) == (fh == 1)
        assert not any(v.get("slide") or v.get("row")
                       for v in _dv.candidates(True, 32, 112, fw, sw, 1, 8, fh))
    assert not {"slide", "sweep", "row"} & set(_dv.heuristic(False, 32, 112, 3, 1, 1, fh=3))
    cands = _dv.candidates(True, 32, 112, 3, 1, 1, 8, 3)
    assert cands[0] == _dv.heuristic(True, 32, 112, 3, 1, 1, vec=8, fh=3)
    assert len({json.dumps(v, sort_keys=True) for v in cands}) == len(cands)
    tiles = [v for v in cands if not {"sweep", "slide", "row"} & set(v)]
    assert sum(1 for v in cands if v.get("sweep")) == len(tiles)
    assert [(v["vw"], v["rows"]) for v in cands if v.get("slide")] == [
        (16, 1), (16, -1), (16, 0), (8, -1), (8, 0), (8, 1), (4, -1), (4, 0), (4, 1)]
    assert sorted((v["vw"], v["tx"]) for v in cands if v.get("row")) == [
        (4, 4), (4, 6), (4, 8), (8, 4), (8, 6), (8, 8), (16, 4), (16, 6), (16, 8)]
    key = {"dt": "f32", "fdt": "f32", "vw": 16, "tx": 4, "fw": 3, "sw": 1, "dw": 1}
    assert _dv.kernel({"vw": 16, "tx": 4, "rows": 1, "row": 1}, key, 3, 112, 112, 32, 112,
                      1) == (
        "depthwise_row", {"dt": "f32", "fdt": "f32", "vw": 16, "tx": 4, "fw": 3, "sw": 1,
                          "fh": 3, "w": 112, "ow": 112, "pl": 1}, (2, 1, 112))
    assert _dv.kernel({"vw": 16, "tx": 1, "rows": 1, "slide": 1}, key, 3, 112, 112, 32) == (
        "depthwise_slide", {"dt": "f32", "fdt": "f32", "vw": 16, "fw": 3, "sw": 1, "fh": 3},
        (2, 1, 112))
    # an entry of the space before the flat rows is not this signature's
    assert _dv.signature(dt="f32", n=1, h=8, w=8, o=8, oh=8, ow=8, fh=3, fw=3, sh=1, sw=1, dh=1,
                         dw=1)["space"] == _dv.SPACE == 7


def test_depthwise_bands_on_cpus(monkeypatch):
    """The sliding window's bands of rows (depthwise_slide_rows): the device class's dw_bands
    rows (CPU 4, a GPU 1: a tuner candidate only) at row stride 1, half at 2, none beyond,
    with an unknown stride (0: dilated rows), where the filter and the accumulators outgrow
    the registers, where the channel vector is narrower than the native one, or on a
    quantized layer."""
    import dataclasses

    assert _defaults.TABLE["gpu"].dw_bands == 1
    most = _defaults.TABLE["cpu"].dw_bands
    assert _dv.heuristic(True, 144, 56, 3, 1, 1, 16, 3, 1).get("r", 1) == most
    assert "r" not in _dv.heuristic(True, 144, 56, 3, 1, 1, 16, 3, 1, quant=True)
    assert "r" not in _dv.heuristic(True, 8, 32, 3, 1, 1, 16, 3, 1, quant=True)  # 8 of 16 lanes
    assert _dv.bands(4, 3, 3, 1, 1, 8, 16) == 1
    most = 4
    monkeypatch.setitem(_defaults.TABLE, "cpu",
                        dataclasses.replace(_defaults.TABLE["cpu"], dw_bands=most))
    assert _dv.heuristic(True, 144, 56, 3, 1, 1, 16, 3, 1) == {
        "vw": 16, "tx": 1, "rows": 1, "slide": 1, "r": most}
    assert _dv.heuristic(True, 144, 28, 3, 2, 1, 16, 3, 2)["r"] == most // 2
    assert "r" not in _dv.heuristic(True, 144, 28, 3, 3, 1, 16, 3, 3)
    assert "r" not in _dv.heuristic(True, 144, 56, 3, 1, 1, 16, 3, 0)  # dilated rows
    assert "r" not in _dv.heuristic(True, 672, 14, 5, 1, 1, 16, 5, 1)  # 25 + 5r vectors
    assert "r" not in _dv.heuristic(True, 144, 56, 3, 1, 1, 8, 3, 1)  # 16 registers
    # fewer output rows than a band: the same kernel (its rows past the output not stored)
    assert _dv.heuristic(True, 288, 2, 3, 1, 1, 16, 3, 1)["r"] == most
    assert _dv.bands(4, 3, 3, 1, 1, 8, 8) == 1 and _dv.bands(4, 3, 3, 1, 1, 16, 16) == 4
    cands = _dv.candidates(True, 144, 56, 3, 1, 1, 16, 3, 1)
    assert sorted((v["vw"], v["r"]) for v in cands if "r" in v) == [
        (8, 2), (8, 4), (16, 2), (16, 4)]
    assert not any("r" in v for v in _dv.candidates(True, 144, 56, 3, 1, 1, 16, 3, 0))
    key = {"dt": "f32", "fdt": "f32", "vw": 16, "tx": 1, "fw": 3, "sw": 1, "dw": 1}
    assert _dv.kernel({"vw": 16, "tx": 1, "rows": 1, "slide": 1, "r": 4}, key, 3, 56, 2 * 55,
                      144, 56, 1, 2, 1) == (
        "depthwise_slide_rows", {"dt": "f32", "fdt": "f32", "vw": 16, "fw": 3, "sw": 1,
                                 "fh": 3, "sh": 1, "r": 4}, (9, 1, 2 * 14))


def test_depthwise_heuristic_is_the_previous_rule_on_cpus():
    from clnn.kernels._tiles import tile_width

    for o, ow, fw, sw in ((24, 9, 3, 2), (32, 112, 3, 1), (3, 8, 5, 1), (144, 28, 5, 2)):
        h = _dv.heuristic(True, o, ow, fw, sw, 1)
        assert h == {"vw": next(v for v in (16, 8, 4, 2, 1) if o % v == 0),
                     "tx": tile_width(ow, fw, sw, 1), "rows": -1}
    # rows narrower than 8 pixels share the widest tile whose span fits (fewer kernels to
    # compile): 8 wide where (8 - 1) * stride + filter <= MAX_SPAN, else 4
    for ow in (1, 2, 3, 4, 7):
        assert _dv.heuristic(True, 16, ow, 3, 1, 1)["tx"] == 8
        assert _dv.heuristic(True, 16, ow, 5, 2, 1)["tx"] == 8
        assert _dv.heuristic(True, 16, ow, 5, 3, 1)["tx"] == 4
    # native vectors of 8 (AVX2): 8 vectors of accumulators at most, 4 pixels x 16 channels
    assert _dv.heuristic(True, 32, 112, 3, 1, 1, vec=8) == {"vw": 16, "tx": 4, "rows": -1}
    assert _dv.heuristic(True, 24, 112, 3, 1, 1, vec=8) == {"vw": 8, "tx": 8, "rows": -1}
    assert _dv.heuristic(True, 32, 112, 3, 1, 1, vec=8) in _dv.candidates(True, 32, 112, 3, 1, 1,
                                                                            vec=8)
    g = _dv.heuristic(False, 32, 112, 3, 1, 1)
    assert g["vw"] <= 4 and g["tx"] <= 2 and g["rows"] == 0


def test_a_full_choice_outside_the_fast_candidates_is_reused(monkeypatch, tmp_path):
    calls = []
    fake_measurements(monkeypatch, calls, lambda c: 1.0)
    cache = tuning.TuningCache(IDENT, tmp_path)
    cache.put("gemm", SIG, {"choice": "z", "complete": True})
    t = tuning.Tuner(None, "fast", cache, budget=10.0)
    # "z" was chosen by clnn tune from the whole space; fast mode measures only a and b
    assert t.choose(0, "gemm", SIG, ["a", "b"], "a", None, flop=1e9,
                    space=["a", "b", "z"]) == "z"
    assert not calls
    # a choice no longer in the space (a changed variant list) is measured again
    assert t.choose(0, "gemm", SIG, ["a", "b"], "a", None, flop=1e9, space=["a", "b"]) == "a"
    assert calls == ["a", "b"]


def test_tune_report_formats_both_families():
    from clnn.cli.tune import _sig, _variant

    assert _variant({"tile": [8, 1, 16], "wg": None}) == "tile 8x1x16 wg driver"
    assert _variant({"tile": [4, 4, 8], "wg": [16, 2]}) == "tile 4x4x8 wg 16x2"
    assert _variant({"vw": 8, "tx": 4, "rows": -1}) == "vw 8 tx 4 rows auto"
    assert _sig({"dt": "f32", "n": 1, "h": 28, "w": 28, "c": 144, "oh": 14, "ow": 14, "fh": 5,
                 "fw": 5, "sh": 2, "sw": 2, "dh": 1, "dw": 1}) == "dw 5x5/2 14x14x144"
    assert _sig(SIG) == "rows   M4096 N16 K32"
    assert _sig({"dt": "f32", "n": 1, "h": 128, "w": 128, "c": 3, "o": 24, "oh": 64, "ow": 64,
                 "fh": 5, "fw": 5, "sh": 2, "sw": 2, "dh": 1, "dw": 1}) == \
        "conv 5x5/2 128x128x3 -> 24"


@pytest.mark.parametrize("traits", [CPU, AVX2, GPU], ids=["cpu", "avx2", "gpu"])
def test_untuned_gemms_take_the_device_heuristic(cl_device, monkeypatch, traits):
    # TRANSPOSE_CONV_2D and BATCH_MATMUL run the heuristic variant of the device (a GPU's here)
    monkeypatch.setattr(_gemm_variants, "traits", lambda d: traits)
    from tests.kits.one_op_models import scalar, tensor

    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (2, 9, 13)).astype(np.float32)
    bm = rng.uniform(-1, 1, (2, 13, 40)).astype(np.float32)
    m = one_op_model("BATCH_MATMUL", [tensor("TENSOR_FLOAT32", [2, 9, 13]),
                                      tensor("TENSOR_FLOAT32", [2, 13, 40], bm),
                                      scalar("BOOL", False), scalar("BOOL", False)],
                     [tensor("TENSOR_FLOAT32", [2, 9, 40])])
    compare(m, [a], cl_device, kind_of("f32"))
    assert _gemm_variants.device_default(type("B", (), {"device": cl_device})(), 40) == \
        heuristic(traits, 40)


@pytest.mark.parametrize("ow_in,stride", [(2, 1), (3, 2), (1, 1), (7, 1), (9, 2)])
def test_narrow_rows_run_the_eight_wide_depthwise_tile(cl_device, ow_in, stride):
    # outputs 1-7 pixels wide (SAME padding): the 8-wide tile's extra pixels are never stored
    assert _dv.heuristic(True, 16, -(-ow_in // stride), 3, stride, 1)["tx"] == 8
    rng = np.random.default_rng(ow_in)
    xs, fs, bs, out, x = conv_operands("f32", rng, [1, 5, ow_in, 16], [1, 3, 3, 16],
                                       channel_dim=3)
    oh, ow = -(-5 // stride), -(-ow_in // stride)
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *ints(1, stride, stride, 1, 0)],
                     [out([1, oh, ow, 16])])
    compare(m, [x], cl_device, kind_of("f32"))


def test_the_full_gemm_space_holds_every_fast_candidate():
    for t in (_gemm_variants.Traits(True, 4096, (4096, 4096, 4096), 1 << 15),
              _gemm_variants.Traits(False, 256, (256, 256, 64), 1 << 15), AVX2):
        for n in (4, 8, 16, 24, 144, 1152):
            full = candidates(t, n, full=True)
            assert all(c in full for c in candidates(t, n, full=False))


@pytest.mark.parametrize("traits,nv,tx", [(CPU, 2, 4), (AVX2, 1, 4)], ids=["avx512", "avx2"])
def test_direct_conv_tile_fits_the_vector_registers(cl_device, monkeypatch, traits, nv, tx):
    # conv_tile over 3 input channels, 32 outputs (vectors of 16): both vectors x 4 pixels per
    # work-item on native vectors of 16, one vector x 4 pixels on vectors of 8 (8 accumulator
    # registers either way)
    from clnn.kernels._tiles import fit_registers

    assert [fit_registers(8, vw, 8) for vw in (16, 8, 4)] == [4, 8, 8]
    assert [fit_registers(8, vw, 16) for vw in (16, 8)] == [8, 8]
    monkeypatch.setattr(_gemm_variants, "traits", lambda d: traits)
    m, x = conv_model("f32", [1, 16, 16, 3], [32, 3, 3, 3], [1, 16, 16, 32], ints(1, 1, 1, 1))
    pm = cl_device.prepare_model(m)
    (got,), (want,) = outputs_of(m, pm, x), run_ref(m, x)
    assert_close(got, want, kind_of("f32"))
    tiles = [la.global_size for p in pm.partitions for pl in p.plans.values()
             for la in pl.launches if la.name == "conv2d.conv_tile"]
    assert tiles == [(2 // nv, 16 // tx, 16)]


#: a direct convolution (conv_tile): 3 input channels, 48 outputs (vectors of 16, 8, 4),
#: 5x5 stride 2 SAME over 13 columns (7 outputs: tiles of 4 and 2 cover them with a remainder)
CONV = dict(o=48, ow=7, fw=5, sw=2, dw=1)
CONV_ALL = union(_cv.candidates(True, **CONV), _cv.candidates(True, **CONV, vec=8),
                 _cv.candidates(False, **CONV))


@pytest.mark.parametrize("v", CONV_ALL, ids=[f"vw{v['vw']}-tx{v['tx']}-r{v['rows']}"
                                             f"-nv{v.get('nv', 1)}" for v in CONV_ALL])
def test_conv_tile_variant_matches_reference(cl_device, monkeypatch, v):
    monkeypatch.setattr(_cv, "choose", lambda b, **kw: v)
    m, x = conv_model("f32", [1, 9, 13, 3], [48, 5, 5, 3], [1, 5, 7, 48], ints(1, 2, 2, 1))
    pm = cl_device.prepare_model(m)
    (got,), (want,) = outputs_of(m, pm, x), run_ref(m, x)
    assert_close(got, want, kind_of("f32"))
    assert [la.global_size for p in pm.partitions for pl in p.plans.values()
            for la in pl.launches if la.name == "conv2d.conv_tile"] == \
        [(48 // (v["vw"] * v.get("nv", 1)), -(-7 // v["tx"]), 5)]


def test_conv_tile_heuristic_and_tuner(cl_device, tmp_path, monkeypatch):
    assert _cv.heuristic(True, 48, 64, 5, 2, 1) == {"vw": 16, "tx": 8, "rows": -1}
    assert _cv.heuristic(True, 48, 64, 5, 2, 1, vec=8) == {"vw": 16, "tx": 4, "rows": -1}
    assert _cv.heuristic(True, 24, 64, 5, 2, 1, vec=8) == {"vw": 8, "tx": 8, "rows": -1}
    assert _cv.heuristic(False, 48, 64, 5, 2, 1) == {"vw": 4, "tx": 2, "rows": 0}
    # measured once in full mode, then reused from the cache by the next prepare
    cl_device = cl_device.with_options(cache_dir=str(tmp_path))
    monkeypatch.setattr(cl_device, "tuner", None, raising=False)
    tuner = tuning.tuner_for(cl_device, "full", unbounded=True, families=frozenset({"conv"}))
    try:
        m, x = conv_model("f32", [1, 32, 32, 3], [24, 3, 3, 3], [1, 32, 32, 24],
                          ints(1, 1, 1, 0))
        pm = cl_device.prepare_model(m)
        recs = [r for r in tuner.records if r.family == "conv"]
        assert len(recs) == 1 and not recs[0].cached, tuner.records
        entry = tuner.cache.get("conv", recs[0].signature)
        assert len(entry["times_ms"]) == len(_cv.candidates(
            True, 24, 32, 3, 1, 1, _gemm_variants.traits(cl_device.limits).vec))
        (got,), (want,) = outputs_of(m, pm, x), run_ref(m, x)
        assert_close(got, want, kind_of("f32"))
        measured = tuner.measured
        cl_device.prepare_model(m)
        assert tuner.measured == measured
        assert [r.cached for r in tuner.records if r.family == "conv"][-1]
    finally:
        cl_device.tuner = None


@pytest.mark.parametrize("traits", [CPU, AVX2, GPU], ids=["cpu", "avx2", "gpu"])
def test_recurrent_gemms_take_the_device_heuristic(cl_device, monkeypatch, traits):
    # RNN / LSTM / SVDF GEMMs (clnn/kernels/lstm.row_tile): the device's heuristic tile, its
    # row block cut to the batch; a sequence RNN under each device's tile matches the reference
    monkeypatch.setattr(_gemm_variants, "traits", lambda d: traits)
    from clnn.kernels import lstm
    from tests.kits.one_op_models import scalar, tensor

    b = type("B", (), {"device": cl_device})()
    mr, nv, vw = heuristic(traits, 40)["tile"]
    assert lstm.row_tile(b, 64, 40) == (mr, nv, vw)
    assert lstm.row_tile(b, 1, 40) == (1, nv, vw)
    rng = np.random.default_rng(3)
    steps, batch, n_in, units = 5, 3, 7, 40
    w = [rng.uniform(-0.5, 0.5, s).astype(np.float32) for s in
         ([units, n_in], [units, units], [units])]
    x, h = (rng.uniform(-1, 1, s).astype(np.float32) for s in
            ([steps, batch, n_in], [batch, units]))
    m = one_op_model("UNIDIRECTIONAL_SEQUENCE_RNN",
                     [tensor("TENSOR_FLOAT32", [steps, batch, n_in]),
                      *[tensor("TENSOR_FLOAT32", a.shape, a) for a in w],
                      tensor("TENSOR_FLOAT32", [batch, units]), scalar("INT32", 1),
                      scalar("INT32", 1)],
                     [tensor("TENSOR_FLOAT32", [steps, batch, units])])
    compare(m, [x, h], cl_device, kind_of("f32"))


def test_a_tuner_limited_to_families_measures_only_those(cl_device, tmp_path, monkeypatch):
    # clnn tune --family: the layers of other families take their default, never measured
    cl_device = cl_device.with_options(cache_dir=str(tmp_path))
    monkeypatch.setattr(cl_device, "tuner", None, raising=False)
    tuner = tuning.tuner_for(cl_device, "full", unbounded=True,
                             families=frozenset({"winograd"}))
    try:
        m, x = tuned_model()  # a 1x1 layer: no 3x3 path
        compare(m, x, cl_device, kind_of("f32"))
        assert tuner.measured == 0 and not tuner.records
        assert tuner.measures("winograd") and not tuner.measures("gemm")
    finally:
        cl_device.tuner = None


def test_clnn_tune_rejects_an_unknown_family(tmp_path, capsys):
    from clnn.cli.main import main

    model = tmp_path / "m.tflite"
    model.write_bytes(b"")
    assert main(["tune", str(model), "--family", "gemm", "--family", "nope"]) != 0
    err = capsys.readouterr().err
    assert "--family nope: not a tunable family" in err and "gemm" in err


def test_a_chaining_device_reuses_only_entries_measured_as_it_runs(monkeypatch, tmp_path):
    """On a device whose plans run chains an entry measured launch by launch before the tuner
    chained (no ``measured_as``) yields to the default; one measured in a chain, or as
    launches of kernels that cannot be chained, is reused; a device that does not chain
    reuses all three."""
    cache = tuning.TuningCache(IDENT, tmp_path)
    times = {'"a"': 1.0, '"b"': 0.5}
    for chained, mark, want in [(True, None, "a"), (True, "chain", "b"),
                                (True, "launches", "b"), (False, None, "b")]:
        monkeypatch.setattr(tuning, "chaining", lambda device, c=chained: c)
        entry = {"choice": "b", "complete": True, "times_ms": times}
        if mark:
            entry["measured_as"] = mark
        cache.put("gemm", SIG, entry)
        t = tuning.Tuner(None, "cached", cache)
        assert t.choose(0, "gemm", SIG, ["a", "b"], "a", None, flop=1e9) == want, (chained, mark)


def test_chained_measurement_runs_work_group_variants_once(cl_device, tmp_path, monkeypatch):
    """On a chaining device the tuner measures a GEMM layer's candidates inside a chain, as the
    plans run it (its entry says so), and the variants that differ only in their work-groups
    (which a chain does not have) take the time of the first one measured."""
    from clnn import chain

    if not chain.enabled(cl_device.cl_device, None):
        pytest.skip("the device does not run chains")
    dev = cl_device.with_options(cache_dir=str(tmp_path))
    monkeypatch.setattr(dev, "tuner", None, raising=False)
    sig = _gemm_variants.signature(dt="f32", amode="rows", M=256, N=32, K=64)
    fam = _gemm_variants.FAMILY
    cands = [{"tile": [8, 2, 16], "wg": "auto"}, {"tile": [8, 2, 16], "wg": [4, 8]},
             {"tile": [4, 2, 16], "wg": "auto"}]
    how: dict = {}
    times, tried = tuning.measure_candidates(
        dev, lambda c: fam.scratch(dev, None, c, sig), cands, 2, lambda: True, how=how)
    keys = [tuning._key(c) for c in cands]
    assert tried == 3 and how["as"] == "chain"
    assert times[keys[1]] == times[keys[0]] and times[keys[2]] != times[keys[0]]


# ------------------------------------------------------------------ quantized layers
def quant_layer(kind: str):
    """(model, inputs, family) of one quantized layer worth tuning at a prepare (above
    MIN_TUNE_FLOP["fast"]): a per-channel int8 3x3 CONV_2D that accumulates in float (the
    implicit GEMM), a uint8 FULLY_CONNECTED, a per-channel int8 3x3 DEPTHWISE_CONV_2D."""
    from tests.cl.test_cl_fully_connected import fc_model

    rng = np.random.default_rng(36)
    if kind == "conv":  # M 1024, N 16, K 144: 4.7 MFLOP
        m, x = conv_model("qs_pc", [1, 32, 32, 16], [16, 3, 3, 16], [1, 32, 32, 16],
                          ints(1, 1, 1, 0), seed=36)
        return m, x, "gemm"
    if kind == "fc":  # M 64, N 64, K 512: 4.2 MFLOP
        m, x = fc_model("qa", rng, [64, 512], 64, 512, 1)
        return m, x, "gemm"
    xs, fs, bs, out, x = conv_operands("qs_pc", rng, [1, 32, 32, 256], [1, 3, 3, 256],
                                       channel_dim=3)  # 4.7 MFLOP
    m = one_op_model("DEPTHWISE_CONV_2D", [xs, fs, bs, *ints(1, 1, 1, 1, 0)],
                     [out([1, 32, 32, 256])])
    return m, [x], "depthwise"


def _run_tuned(device, mode: str, m, x):
    """The layer's output on ``device`` with a fresh tuner in ``mode`` (and that tuner)."""
    device.tuner = None
    tuner = tuning.tuner_for(device, mode)
    (got,) = run_cl(m, x, device)
    return got, tuner


@pytest.mark.parametrize("kind", ["conv", "fc", "depthwise"])
def test_a_quantized_layer_is_tuned_and_its_entry_reused(cl_device, tmp_path, kind):
    """A quantized layer is measured like a float32 one (tune=fast), its source-changing
    quantization in the signature (the requantization form; the GEMM's float accumulation
    and an implicit GEMM's geometry; the depthwise filter's type); a later tuner (another
    prepare, tune=cached) takes the entry without measuring; both outputs are the
    reference's, bit for bit. (A budget of 2 s: the default is measured first, and an entry
    cut short by the budget that measured it is reused like a complete one.)"""
    dev = cl_device.with_options(cache_dir=str(tmp_path), tune_budget_s=2)
    m, x, family = quant_layer(kind)
    (want,) = run_ref(m, x)
    try:
        got, tuner = _run_tuned(dev, "fast", m, x)
        (rec,) = [r for r in tuner.records if r.family == family]
        assert tuner.measured == 1 and not rec.cached and rec.best_ms > 0
        sig = rec.signature
        assert sig["dt"] in ("u8", "i8") and "rq" in sig
        if kind == "conv":
            assert sig["facc"] and sig["amode"] == "taps" and sig["taps"][2] == 16
        if kind == "depthwise":
            assert sig["fdt"] == "i8"
        np.testing.assert_array_equal(got, want)
        again, second = _run_tuned(dev, "cached", m, x)
        assert second.measured == 0 and [r.cached for r in second.records] == [True]
        assert second.records[0].choice == rec.choice
        np.testing.assert_array_equal(again, want)
    finally:
        dev.tuner = None


# make test: each form's first candidate; make test-full: its second too
@pytest.mark.parametrize("amode,which", [slow_unless(which == 0, amode, which)
                                         for amode in ["packed", "rows", "cols", "taps"]
                                         for which in (0, 1)])
def test_quantized_gemm_scratch_layers_run(cl_device, amode, which):
    """The tuner's quantized scratch GEMM builds and runs in every A mode (im2col panels,
    rows, NCHW columns, the implicit GEMM), with and without float accumulation, in the
    requantization forms (``which``: the first or the second candidate of each)."""
    taps = _gemm.taps_args(8, 8, 16, 8, 8, 3, 9, (1, 1), (1, 1), (1, 1)) \
        if amode == "taps" else None
    t = _gemm_variants.traits(cl_device.limits)
    # (the implicit GEMM is float accumulation's only: _gemm.float_exact)
    forms = [(True, "up"), (True, "away")] + ([] if amode == "taps" else [(False, None)])
    for facc, rq in forms:
        sig = _gemm_variants.signature(
            dt="u8", amode=amode, M=64, N=N, K=144, batches=1,
            quant=_gemm_variants.quant_keys(facc=facc, rq=rq, taps=taps))
        assert _gemm_variants.tunable(sig)
        for v in _gemm_variants.FAMILY.space(t, sig, False)[which:which + 1]:
            kernels, release = _gemm_variants.FAMILY.scratch(cl_device, None, v, sig)
            try:
                times, tried = tuning.measure_candidates(
                    cl_device, lambda c, k=kernels: (k, lambda: None), [v], 1, lambda: True)
                assert tried == 1 and list(times.values())[0] > 0
            finally:
                release()


def test_clnn_tune_plans_a_model_of_dynamic_batch_and_tunes_its_quantized_layer(
        tmp_path, monkeypatch, capsys):
    """A model whose batch is known only at an execution (as the int8 tinyml models') is run
    once by clnn tune, so its int8 per-channel CONV_2D is planned and tuned, its quantization
    in the signature; a second run takes the entry from the cache."""
    from clnn.cli.main import main
    from tests.kits.tflite_writer import Graph

    monkeypatch.setenv("CLNN_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(36)
    g = Graph()
    x = g.tensor([1, 32, 32, 16], "int8", name="x", scale=0.05, zero_point=-3,
                 signature=[-1, 32, 32, 16])
    scales = rng.uniform(2e-3, 2e-2, 16).astype(np.float32)
    w = g.tensor([16, 3, 3, 16], "int8", data=rng.integers(-127, 128, (16, 3, 3, 16)).astype(
        np.int8), scale=scales, zero_point=np.zeros(16, np.int64), quantized_dimension=0)
    b = g.tensor([16], "int32", data=rng.integers(-3000, 3000, 16).astype(np.int32),
                 scale=(np.float32(0.05) * scales).astype(np.float32),
                 zero_point=np.zeros(16, np.int64))
    y = g.tensor([1, 32, 32, 16], "int8", scale=0.1, zero_point=5, signature=[-1, 32, 32, 16])
    g.op("CONV_2D", [x, w, b], [y], "Conv2DOptions", Padding=0, StrideW=1, StrideH=1,
         DilationWFactor=1, DilationHFactor=1)
    path = tmp_path / "qconv.tflite"
    path.write_bytes(g.write(inputs=[x], outputs=[y]))
    assert main(["tune", str(path), "--json"]) == 0
    (layer,) = json.loads(capsys.readouterr().out)["models"][0]["layers"]
    sig = layer["signature"]
    assert (sig["dt"], sig["amode"], sig["M"], sig["N"], sig["K"]) == ("i8", "taps", 1024, 16,
                                                                      144)
    assert sig["facc"] and "rq" in sig and sig["taps"][:3] == [32, 32, 16]
    assert not layer["cached"] and layer["best_ms"] <= layer["default_ms"]
    assert main(["tune", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 layer tuned" in out and "(cached)" in out and " i8 " in out
