"""Capabilities a user can trust: figures from several interleaved samples with their spread,
when / how they were measured, the unstable flag, the JSON keys, the litert baseline, and the
cache invalidated by a new record format. Quick (small) workloads, a temporary cache."""

from __future__ import annotations

import json
import statistics

import pytest

from clnn import capabilities as caps


@pytest.fixture(scope="module")
def quick_cache(tmp_path_factory):
    """A quick record measured once into a temporary cache (the other tests read it)."""
    from clnn.devices import open_device
    from clnn.options import DeviceOptions

    root = str(tmp_path_factory.mktemp("caps"))
    try:
        dev = open_device("opencl", options=DeviceOptions(cache_dir=root))
    except Exception as e:  # no OpenCL platform on this machine
        pytest.skip(f"no OpenCL device: {e}")
    record = caps.load_or_measure(dev, quick=True, progress=False)
    with pytest.MonkeyPatch.context() as mp:  # (the CLI, an entry point, reads it there)
        mp.setenv("CLNN_CACHE_DIR", root)
        yield dev, record


def test_samples_and_spread_recorded(quick_cache):
    _, record = quick_cache
    cond = record["conditions"]
    assert record["schema"] == caps.SCHEMA
    assert cond["rounds"] == caps.QUICK_ROUNDS and cond["interleaved"] is True
    assert cond["executions_per_sample"] == 1
    assert cond["unstable_threshold"] == caps.UNSTABLE_SPREAD
    assert cond["machine"]["cpu_count"] >= 1 and cond["machine"]["machine"]
    assert len(cond["loadavg_before"]) == 3 and len(cond["loadavg_after"]) == 3
    assert record["identity"]["clnn_version"] and record["measured_at"][:2] == "20"
    measured = {n: w for n, w in record["workloads"].items() if "ratio" in w}
    assert "TENSOR_FLOAT32" in measured and "TENSOR_QUANT8_ASYMM" in measured
    for name, w in measured.items():
        assert len(w["opencl_s"]) == len(w["reference_s"]) == cond["rounds"], name
        assert w["ratio_s"] == pytest.approx(
            [c / r for c, r in zip(w["opencl_s"], w["reference_s"])])
        for side, values in (("opencl", w["opencl_s"]), ("reference", w["reference_s"]),
                             ("ratio_spread", w["ratio_s"])):
            s = w[side]
            assert s["median"] == pytest.approx(statistics.median(values))
            assert (s["min"], s["max"]) == (min(values), max(values))
            assert s["relative_spread"] == pytest.approx((s["max"] - s["min"]) / s["median"])
            assert s["samples"] == cond["rounds"]
        assert w["ratio"] == pytest.approx(w["opencl"]["median"] / w["reference"]["median"])
        assert w["unstable"] == (w["ratio_spread"]["relative_spread"] > caps.UNSTABLE_SPREAD)


def test_opencl_and_reference_samples_take_turns(quick_cache, monkeypatch):
    dev, _ = quick_cache
    from hal.reference import ReferenceDevice

    monkeypatch.setattr(caps, "workloads", lambda quick: {
        k: v for k, v in caps.workloads_all(True).items() if k in ("TENSOR_INT32", "IF")})
    order, real = [], caps._sample
    ref_prepare = ReferenceDevice.prepare_model

    def spy_prepare(self, model, *a, **k):
        p = ref_prepare(self, model, *a, **k)
        p._caps_side = "reference"
        return p

    def spy(prepared, model, inputs, n):
        order.append(getattr(prepared, "_caps_side", "opencl"))
        return real(prepared, model, inputs, n)

    monkeypatch.setattr(ReferenceDevice, "prepare_model", spy_prepare)
    monkeypatch.setattr(caps, "_sample", spy)
    record = caps.measure(dev, quick=True, progress=False, rounds=4)
    assert record["conditions"]["rounds"] == 4
    # after the warm-ups (one run per side per workload), each round alternates the sides
    timed = order[4:]
    assert timed == ["opencl", "reference"] * 2 * 4


def test_rounds_past_the_minimum_stop_at_the_time_bound(quick_cache, monkeypatch):
    dev, _ = quick_cache
    monkeypatch.setattr(caps, "workloads", lambda quick: {
        k: v for k, v in caps.workloads_all(True).items() if k == "TENSOR_INT32"})
    monkeypatch.setattr(caps, "MAX_MEASURE_SECONDS", 0.0)
    record = caps.measure(dev, quick=True, progress=False, rounds=6)
    assert record["conditions"]["rounds"] == caps.MIN_ROUNDS
    assert len(record["workloads"]["TENSOR_INT32"]["opencl_s"]) == caps.MIN_ROUNDS


def _synthetic(ratios):
    w = {"ratio_s": ratios, "ratio_spread": caps.spread(ratios)}
    return w


def test_unstable_flag_on_synthetic_records():
    assert caps.spread([1.0, 2.0, 3.0, 4.0])["relative_spread"] == pytest.approx(3 / 2.5)
    steady = _synthetic([0.50, 0.52, 0.49, 0.51, 0.50])   # 6% spread
    noisy = _synthetic([0.50, 0.52, 0.80, 0.51, 0.50])    # 59% spread: one slow round
    assert not caps.is_unstable(steady) and caps.is_unstable(noisy)
    assert caps.is_unstable(steady, threshold=0.05)
    assert not caps.is_unstable({"error": "RuntimeError: cannot run"})
    assert caps._executions(1.0) == caps.MIN_EXECUTIONS
    assert caps._executions(1e-6) == caps.MAX_EXECUTIONS
    assert caps._executions(caps.SAMPLE_SECONDS / 10) == 10


def test_cli_flags_unstable_workloads(quick_cache, monkeypatch, capsys):
    from clnn.cli import capabilities as tool

    _, record = quick_cache
    fake = json.loads(json.dumps(record))
    for name, ratios in (("TENSOR_FLOAT32", [0.5, 0.5, 0.9]), ("TENSOR_INT32", [1.0, 1.01, 1.0])):
        fake["workloads"][name].update(_synthetic(ratios))
        fake["workloads"][name]["unstable"] = caps.is_unstable(fake["workloads"][name])
    fake["cached"] = "/somewhere/caps.json"
    monkeypatch.setattr(tool, "load_or_measure", lambda *a, **k: fake)
    assert tool.run_capabilities_cli() == 0
    out = capsys.readouterr().out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  TENSOR_")}
    assert lines["TENSOR_FLOAT32"].endswith("UNSTABLE")
    assert not lines["TENSOR_INT32"].endswith("UNSTABLE")
    assert "TENSOR_FLOAT32" in out.split("unstable (spread over 20%):")[1].splitlines()[0]
    assert "--remeasure` on a quiet machine" in out
    assert f"measured {fake['measured_at']} by clnn" in out
    assert f"{fake['conditions']['rounds']} samples per workload" in out
    assert f"load average {fake['conditions']['loadavg_before'][0]}" in out


def test_json_keys(quick_cache, capsys):
    from clnn.cli.main import main

    _, record = quick_cache
    assert main(["capabilities", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"schema", "identity", "measured_at", "method", "conditions", "workloads",
            "capabilities", "unstable"} <= set(out)
    assert {"rounds", "executions_per_sample", "loadavg_before", "loadavg_after", "machine",
            "unstable_threshold", "interleaved"} <= set(out["conditions"])
    w = out["workloads"]["TENSOR_FLOAT32"]
    assert {"opencl_s", "reference_s", "ratio_s", "opencl", "reference", "ratio_spread",
            "ratio", "unstable", "executions_per_sample"} <= set(w)
    assert {"median", "min", "max", "relative_spread", "samples"} == set(w["ratio_spread"])
    assert out["unstable"] == [n for n, v in out["workloads"].items() if v.get("unstable")]
    assert "baseline_litert" not in out


def test_capabilities_json_and_plot(quick_cache, tmp_path, capsys):
    """The quick record read by the command line twice: --json holds the HAL capabilities,
    --plot draws every workload (an HTML page, a PNG of one panel)."""
    pytest.importorskip("matplotlib", reason="the plot extra (pip install 'clnn[plot]')")
    from clnn.bench import plots
    from clnn.cli.main import main
    from tests.kits.png import png_size

    _, record = quick_cache
    assert main(["capabilities", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    hal = out["capabilities"]
    assert {"relaxed_float32_to_float16_performance_scalar", "operand_performance",
            "if_performance", "while_performance"} <= set(hal)
    assert {"exec_time", "power_usage"} <= set(hal["operand_performance"]["TENSOR_FLOAT32"])
    assert "identity" in out and "workloads" in out
    page = tmp_path / "caps.html"
    assert main(["capabilities", "--plot", str(page)]) == 0
    text = page.read_text()
    for name, w in record["workloads"].items():
        if "ratio" in w:
            assert name in text
    png = tmp_path / "caps.png"
    assert main(["capabilities", "--plot", str(png)]) == 0
    assert png_size(png) == (int(plots.WIDTH * plots.DPI), int(plots.PANEL_HEIGHT * plots.DPI))


def test_baseline_litert_on_a_quick_measurement(quick_cache, capsys):
    pytest.importorskip("ai_edge_litert")
    from clnn.cli import capabilities as tool

    assert tool.run_capabilities_cli(as_json=True, baseline="litert", quick=True) == 0
    base = json.loads(capsys.readouterr().out)["baseline_litert"]
    assert base["runtime"] == "ai-edge-litert" and base["rounds"] == caps.QUICK_ROUNDS
    ws = base["workloads"]
    for name in ("TENSOR_FLOAT32", "TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED",
                 "TENSOR_INT32"):
        w = ws[name]
        assert len(w["opencl_s"]) == len(w["litert_s"]) == caps.QUICK_ROUNDS
        assert w["ratio"] == pytest.approx(w["opencl"]["median"] / w["litert"]["median"])
        # the TFLite model computes what the hal workload computes (quantized: exactly)
        limit = 1e-4 if name == "TENSOR_FLOAT32" else 1
        assert w["max_abs_diff_vs_reference"] <= limit, name
    for name in ("TENSOR_FLOAT16", "relaxed", "TENSOR_QUANT8_SYMM_PER_CHANNEL",
                 "TENSOR_BOOL8", "IF", "WHILE"):
        assert ws[name]["no_baseline"], name
    assert tool.run_capabilities_cli(baseline="litert", quick=True) == 0
    out = capsys.readouterr().out
    assert "against TFLite's runtime (ai-edge-litert" in out
    assert "no litert baseline: TENSOR_FLOAT16" in out


def test_an_older_record_format_is_measured_again(quick_cache, monkeypatch):
    dev, record = quick_cache
    path = caps.cache_path(dev)
    saved = path.read_text()
    try:
        old = {**record, "schema": caps.SCHEMA - 1}
        path.write_text(json.dumps(old))
        fresh = {**record, "measured_at": "fresh"}
        monkeypatch.setattr(caps, "measure", lambda *a, **k: dict(fresh))
        again = caps.load_or_measure(dev, progress=False)
        assert again["measured_at"] == "fresh" and again["cached"] is None
        assert json.loads(path.read_text())["schema"] == caps.SCHEMA
        # a record of the current format is served from the cache, not measured
        monkeypatch.setattr(caps, "measure", lambda *a, **k: pytest.fail("measured again"))
        assert caps.load_or_measure(dev)["cached"] == str(path)
    finally:
        path.write_text(saved)


def test_tflite_conversion_and_its_limits():
    from clnn.bench.caps_baseline import NoBaseline, to_tflite
    from clnn.capabilities_workloads import block, if_model

    raw = to_tflite(block("TENSOR_QUANT8_ASYMM", 8, quant=False)[0])
    assert raw[4:8] == b"TFL3"
    with pytest.raises(NoBaseline, match="control flow"):
        to_tflite(if_model(4)[0])
    with pytest.raises(NoBaseline, match="relaxed"):
        to_tflite(block("TENSOR_FLOAT32", 8, relaxed=True)[0])
    with pytest.raises(NoBaseline, match="TENSOR_QUANT8_SYMM_PER_CHANNEL"):
        to_tflite(block("TENSOR_QUANT8_ASYMM_SIGNED", 8, quant=True, per_channel=True)[0])


def test_baseline_litert_without_the_runtime_is_one_error(quick_cache, monkeypatch, capsys):
    import sys

    from clnn.cli.main import main

    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)  # import fails
    assert main(["capabilities", "--baseline", "litert"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["clnn capabilities: --baseline litert needs ai-edge-litert (pip install "
                   "'clnn[bench]')"]


def test_devices_measured_together_share_the_reference(quick_cache, monkeypatch, capsys):
    """Two devices measured in one run: each round samples both and then the reference, and
    both records are ratios to the same reference samples (comparable round by round)."""
    from clnn.cli import capabilities as tool
    from clnn.devices import open_device

    dev, _ = quick_cache
    other = open_device("opencl")  # a second ClDevice of the same OpenCL device
    monkeypatch.setattr(caps, "workloads", lambda quick: {
        k: v for k, v in caps.workloads_all(True).items() if k in ("TENSOR_INT32", "IF")})
    a, b = caps.measure_devices([dev, other], quick=True, progress=False, rounds=3)
    for name in ("TENSOR_INT32", "IF"):
        wa, wb = a["workloads"][name], b["workloads"][name]
        assert wa["reference_s"] == wb["reference_s"] and len(wa["reference_s"]) == 3
        assert wa["opencl_s"] != wb["opencl_s"]  # each device its own samples
        assert wb["ratio"] == pytest.approx(wb["opencl"]["median"] / wb["reference"]["median"])
    assert a["conditions"]["measured_together"] == [caps.identity(dev)] * 2
    table = tool.comparison(["opencl:0:0", "opencl:0:0/x"], [a, b])
    q = table["IF"]["time_over_first"]["opencl:0:0/x"]
    assert q["median"] == pytest.approx(statistics.median(
        [y / x for x, y in zip(a["workloads"]["IF"]["opencl_s"],
                               b["workloads"]["IF"]["opencl_s"])]))


def test_a_spread_measurement_is_measured_again(quick_cache, monkeypatch):
    """Outside quick mode, a workload whose ratio spreads over the threshold is measured again
    (up to ATTEMPTS in all) and the steadier measurement kept."""
    dev, _ = quick_cache
    monkeypatch.setattr(caps, "workloads", lambda quick: {
        k: v for k, v in caps.workloads_all(True).items() if k == "TENSOR_INT32"})
    calls = []

    def fake(prepared, model, inputs, n):  # device samples alternate wildly at first
        calls.append(n)
        k = len(calls)
        if k % 2 == 0:
            return 1.0  # the reference
        return 1.0 if k > 2 + 2 * 3 else (0.5 if k % 4 == 1 else 2.0)  # warm-ups, 1st try

    monkeypatch.setattr(caps, "_sample", fake)
    record = caps.measure(dev, quick=False, progress=False, rounds=3, executions=1)
    w = record["workloads"]["TENSOR_INT32"]
    assert w["attempts"] == 2 and not w["unstable"]
    assert w["ratio_s"] == [1.0, 1.0, 1.0]
