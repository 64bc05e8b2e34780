"""Benchmark-grade ``clnn run``: clnn/bench/timing.py on a synthetic clock (statistics,
percentiles, warm-up, taking turns, reliability warnings) and the command's --warmup, --json
and --compare litert on a small .tflite model written at test time."""

import json

import numpy as np
import pytest

from clnn.bench import timing
from clnn.cli.errors import CliError
from clnn.cli.main import main
from clnn.cli.run import run_model
from tests.kits.tflite_writer import Graph


class FakeClock:
    """A clock that only moves when a fake workload says how long it took."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now

    def workload(self, durations_s, log=None, tag=None):
        """A callable taking the next of ``durations_s`` per call; returns its call number."""
        it = iter(durations_s)
        calls = [0]

        def fn():
            self.now += next(it)
            calls[0] += 1
            if log is not None:
                log.append(tag)
            return calls[0]
        return fn


def test_stats_on_a_synthetic_timer():
    clock = FakeClock()
    timed = [0.001 * k for k in (7, 1, 10, 3, 5, 2, 9, 4, 8, 6)]
    first, warm = 0.5, [0.9, 0.9]  # the warm-up runs are slow: they must not be counted
    fn = clock.workload([first, *warm, *timed])
    last, s = timing.time_callable(fn, iterations=10, warmup=2, clock=clock)
    assert last == 13  # every call made: first + 2 warm-up + 10 timed
    assert s["first_ms"] == pytest.approx(500.0)
    assert s["warmup"] == 2 and s["iterations"] == 10
    assert s["times_ms"] == pytest.approx([t * 1e3 for t in timed])
    ms = sorted(t * 1e3 for t in timed)  # 1..10 ms
    assert s["min_ms"] == pytest.approx(ms[0]) and s["max_ms"] == pytest.approx(ms[-1])
    assert s["mean_ms"] == pytest.approx(sum(ms) / 10)
    assert s["std_ms"] == pytest.approx((sum((x - 5.5) ** 2 for x in ms) / 10) ** 0.5)
    # linear interpolation between closest ranks: rank q * (n - 1)
    for q, key in ((0.5, "p50_ms"), (0.9, "p90_ms"), (0.99, "p99_ms")):
        r = q * 9
        lo = int(r)
        assert s[key] == pytest.approx(ms[lo] + (r - lo) * (ms[lo + 1] - ms[lo])), key
    assert s["median_ms"] == s["p50_ms"]


def test_interleave_takes_turns_and_keeps_each_sides_times():
    clock, log = FakeClock(), []
    a = clock.workload([0.1] + [0.01] * 5, log, "a")
    b = clock.workload([0.2] + [0.03] * 5, log, "b")
    (ra, sa), (rb, sb) = timing.interleave(a, b, iterations=3, warmup=2, clock=clock)
    assert log == ["a", "b"] * 6
    assert ra == rb == 6
    assert sa["first_ms"] == pytest.approx(100.0) and sb["first_ms"] == pytest.approx(200.0)
    assert sa["times_ms"] == pytest.approx([10.0] * 3)
    assert sb["times_ms"] == pytest.approx([30.0] * 3)


def test_interleave_and_rounds_settle_before_each_timed_turn():
    clock, log = FakeClock(), []
    a = clock.workload([0.01] * 6, log, "a")
    b = clock.workload([0.01] * 6, log, "b")
    timing.interleave(a, b, iterations=2, warmup=1, clock=clock,
                      settle_fn=lambda: log.append("settle"))
    assert log == ["a", "b"] * 2 + ["settle", "a", "settle", "b"] * 2
    log.clear()
    timing.rounds({"a": lambda: log.append("a") or 0.0, "b": lambda: log.append("b") or 0.0},
                  2, 2, settle_fn=lambda: log.append("settle"))
    assert log == ["settle", "a", "a", "settle", "b", "b", "settle", "b", "b", "settle", "a",
                   "a"]


def _settle_with(busy_steps: int, max_s: float = 0.5):
    """settle() on a fake clock where the process burns a whole core (a peer's spinning
    thread) for ``busy_steps`` sleeps, then nothing: (seconds waited, sleeps made)."""
    now, used, sleeps = [0.0], [0.0], []

    def sleep(s):
        sleeps.append(s)
        now[0] += s
        if len(sleeps) <= busy_steps:
            used[0] += s

    waited = timing.settle(max_s=max_s, step_s=0.005, clock=lambda: now[0],
                           cpu=lambda: used[0], sleep=sleep)
    return waited, len(sleeps)


def test_settle_waits_until_the_spinning_threads_sleep():
    assert _settle_with(0) == (pytest.approx(0.005), 1)
    assert _settle_with(6) == (pytest.approx(0.035), 7)
    waited, n = _settle_with(10_000, max_s=0.1)  # never idle: gives up after max_s
    assert waited == pytest.approx(0.1) and n == 20


@pytest.mark.parametrize("iterations, warmup", [(0, 3), (5, -1)])
def test_timing_refuses_no_runs_or_negative_warmup(iterations, warmup):
    with pytest.raises(ValueError):
        timing.time_callable(lambda: None, iterations, warmup)


def test_warnings_for_spread_and_load():
    steady = timing.stats([0.010] * 9 + [0.0105])
    noisy = timing.stats([0.010] * 5 + [0.020] * 5)  # p50 15 ms, p90 20 ms: 33% spread
    assert timing.reliability_warnings({"clnn": steady}, load=0.2, cores=2) == []
    (w,) = timing.reliability_warnings({"clnn": steady, "litert": noisy}, load=0.2, cores=2)
    assert w.startswith("litert timings spread widely") and "33%" in w
    assert "load average 0.20 on 2 cores" in w
    (w,) = timing.reliability_warnings({"clnn": steady}, load=1.5, cores=2)
    assert "load average 1.50" in w and "0.5 x 2 cores" in w


def test_rounds_take_turns_and_keep_each_rounds_median():
    log = []
    seconds = {"a": iter([0.010, 0.012, 0.011, 0.030, 0.032, 0.031]),
               "b": iter([0.020] * 6)}

    def side(name):
        def run():
            log.append(name)
            return next(seconds[name])
        return run

    times, medians = timing.rounds({"a": side("a"), "b": side("b")}, 2, 3)
    # each side first in turn: round 2 starts with b
    assert log == ["a"] * 3 + ["b"] * 3 + ["b"] * 3 + ["a"] * 3
    assert times["a"] == [0.010, 0.012, 0.011, 0.030, 0.032, 0.031]
    assert medians["a"] == pytest.approx([11.0, 31.0]) and medians["b"] == pytest.approx([20, 20])
    assert timing.round_spread(medians["a"]) == pytest.approx(20 / 21)
    assert timing.round_spread(medians["b"]) == 0.0
    rows = [{"model": "m1", "spread": {"clnn": 0.95, "litert": 0.0}},
            {"model": "m2", "spread": {"clnn": 0.05, "litert": 0.01}}, {"model": "m3"}]
    (w,) = timing.rounds_warnings(rows, 0.2, 0.3, cores=2)
    assert w.startswith("m1: per-round medians spread by up to 95% > 20%")
    (w1, w2) = timing.rounds_warnings(rows, 0.2, 1.4, cores=2)
    assert "load average 0.20 -> 1.40 on 2 cores" in w2


@pytest.fixture(scope="module")
def add_model(tmp_path_factory):
    """out = a + c (c a constant): small enough to time many runs in a test."""
    g = Graph()
    x = g.tensor([1, 8], name="a")
    c = g.tensor([1, 8], data=np.arange(8, dtype=np.float32).reshape(1, 8))
    y = g.tensor([1, 8], name="out")
    g.op("ADD", [x, c], [y], "AddOptions")
    path = tmp_path_factory.mktemp("runbench") / "add.tflite"
    path.write_bytes(g.write(inputs=[x], outputs=[y]))
    return str(path)


def test_json_has_numbers_and_raw_times(add_model, capsys):
    assert main(["run", add_model, "--iterations", "7", "--warmup", "2", "--json"]) == 0
    lat = json.loads(capsys.readouterr().out)["latency"]
    assert lat["iterations"] == 7 and lat["warmup"] == 2
    assert len(lat["times_ms"]) == 7
    assert all(isinstance(t, float) and t > 0 for t in lat["times_ms"])
    for key in ("first_ms", "mean_ms", "std_ms", "min_ms", "p50_ms", "p90_ms", "p99_ms",
                "max_ms"):
        assert isinstance(lat[key], float), key
    assert lat["min_ms"] <= lat["p50_ms"] <= lat["p90_ms"] <= lat["p99_ms"] <= lat["max_ms"]
    assert lat["mean_ms"] == pytest.approx(float(np.mean(lat["times_ms"])))


def test_warmup_is_validated(add_model, capsys):
    assert main(["run", add_model, "--warmup", "-1"]) == 2
    assert "--warmup: -1 is negative" in capsys.readouterr().err
    assert main(["run", add_model, "--warmup", "many"]) == 2
    with pytest.raises(CliError, match="--warmup -2"):
        run_model(add_model, warmup=-2)


def test_load_warning_printed_with_the_load_average(add_model, capsys, monkeypatch):
    monkeypatch.setattr(timing.os, "getloadavg", lambda: (7.25, 0.0, 0.0))
    monkeypatch.setattr(timing.os, "cpu_count", lambda: 2)
    assert main(["run", add_model, "--iterations", "3", "--json"]) == 0
    cap = capsys.readouterr()
    report = json.loads(cap.out)
    assert report["load_average"] == 7.25
    assert any("load average 7.25" in w for w in report["warnings"])
    assert "clnn run: warning: load average 7.25 is above 0.5 x 2 cores" in cap.err


def test_compare_litert_shows_both_latencies(add_model, capsys):
    pytest.importorskip("ai_edge_litert")  # the optional ``bench`` extra
    assert main(["run", add_model, "--iterations", "4", "--warmup", "1",
                 "--compare", "litert"]) == 0
    out = capsys.readouterr().out
    # the table rows: a name, the first run, then 7 statistics, all numbers
    rows = {w[0]: [float(v) for v in w[1:]] for w in map(str.split, out.splitlines())
            if len(w) == 9 and w[0] in ("clnn", "litert")}
    assert set(rows) == {"clnn", "litert"}
    # a tiny model's std (or a sub-5-microsecond litert run) may print as 0.00
    assert all(v >= 0 for v in rows["clnn"] + rows["litert"])
    assert max(rows["clnn"]) > 0 and max(rows["litert"]) > 0
    assert "clnn / litert (p50):" in out and "taking turns" in out
    assert main(["run", add_model, "--iterations", "4", "--compare", "litert", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    lit = report["litert_latency"]
    assert len(lit["times_ms"]) == 4 and report["litert_threads"] == 2
    assert report["ratio_p50"] == pytest.approx(report["latency"]["p50_ms"] / lit["p50_ms"])
    assert report["outputs"][0]["compare"]["within_tolerance"]


@pytest.mark.parametrize("spec", ["reference", "opencl"])
def test_bench_models_row_has_the_first_seconds(add_model, spec, request, capsys):
    """bench models' first-seconds column on a tiny model: the executions of a short window
    after prepare returned, their median latency and its ratio to the steady state (the
    column is there and positive; no timing is asserted)."""
    pytest.importorskip("ai_edge_litert")
    from clnn.bench.bench_models import _print_row, bench_model
    from clnn.devices import open_device

    device = request.getfixturevalue("cl_device") if spec == "opencl" else open_device(spec)
    row = bench_model(add_model, device, iterations=2, use_cache=False, rounds=3,
                      first_window=0.05)
    first = row["first_seconds"]
    assert first["window_s"] == 0.05 and first["runs"] >= 1
    assert first["median_ms"] > 0 and first["vs_steady"] > 0
    _print_row(row)
    assert "x steady" in capsys.readouterr().out


def test_steal_share_from_proc_stat(tmp_path):
    """The hypervisor's share of CPU time between two /proc/stat readings (the 8th number of
    the ``cpu`` line), None without such a file or without time passing."""
    from clnn.bench import timing

    stat = tmp_path / "stat"
    stat.write_text("cpu  100 20 30 800 10 0 5 35 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    before = timing.cpu_ticks(str(stat))
    assert before == (1000, 35)
    stat.write_text("cpu  150 20 40 900 10 0 5 75 0 0\n")
    after = timing.cpu_ticks(str(stat))
    assert timing.steal_share(before, after) == 40 / 200
    assert timing.steal_share(after, after) is None and timing.steal_share(None, after) is None
    assert timing.cpu_ticks(str(tmp_path / "none")) is None
    stat.write_text("intr 1 2 3\n")
    assert timing.cpu_ticks(str(stat)) is None
