"""Latency measurement shared by ``clnn run`` and the benchmarks: one implementation.

A measurement is: one first run (timed, reported apart: it builds plans, kernels and caches),
``warmup`` untimed runs, then ``iterations`` timed runs. Each run times the whole callable with
``clock`` (seconds); the statistics are in milliseconds and say so in their keys.
``interleave`` measures two callables taking turns, so that a change of machine load during the
measurement reaches both sides alike; before a side's turn the process waits (:func:`settle`):
the side before may leave threads spinning (onnxruntime's intra-op workers spin on for tens of
milliseconds of a core after a run returns), and the next side would otherwise run on the
cores that are left (clnn's chained runs on one core of two: per-round medians twice the
others' in the rounds that followed onnxruntime's).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable

import numpy as np

DEFAULT_WARMUP = 3
SPREAD_LIMIT = 0.10  # (p90 - p50) / p50 above this: the runs disagree too much to trust
LOAD_PER_CORE_LIMIT = 0.5  # 1-minute load average above half the cores: others share the CPU
#: per-round medians of one side further apart than this ((max - min) / median): unreliable
ROUND_SPREAD_LIMIT = 0.20
#: :func:`settle`: the longest wait, the sleep between two looks at the process's CPU time, and
#: the share of a core below which the process counts as idle
SETTLE_MAX_S = 0.5
SETTLE_STEP_S = 0.005
SETTLE_BUSY = 0.05


def settle(max_s: float = SETTLE_MAX_S, step_s: float = SETTLE_STEP_S,
           busy: float = SETTLE_BUSY, clock: Callable[[], float] = time.perf_counter,
           cpu: Callable[[], float] = time.process_time,
           sleep: Callable[[float], None] = time.sleep) -> float:
    """Sleep until this process's threads use less than ``busy`` of a core over a sleep of
    ``step_s`` (``cpu``: the CPU time of all its threads), at most ``max_s``: a peer's thread
    pool that spins after its run has gone to sleep. Returns the seconds waited."""
    start = clock()
    while True:
        t0, c0 = clock(), cpu()
        sleep(step_s)
        dt, dc = clock() - t0, cpu() - c0
        if dc <= busy * dt or clock() - start >= max_s:
            return clock() - start


def stats(times_s, first_s: float | None = None, warmup: int = 0) -> dict:
    """Mean, std, min, p50 (also as median), p90, p99, max of ``times_s`` in ms, the raw times
    in ms and the first run's time apart; percentiles interpolate linearly (numpy's default)."""
    ms = np.asarray(times_s, dtype=np.float64) * 1e3
    if ms.size == 0:
        raise ValueError("no timed run to summarise")
    p50, p90, p99 = (float(v) for v in np.percentile(ms, [50, 90, 99]))
    return {"first_ms": None if first_s is None else first_s * 1e3, "warmup": warmup,
            "iterations": int(ms.size), "mean_ms": float(ms.mean()), "std_ms": float(ms.std()),
            "min_ms": float(ms.min()), "p50_ms": p50, "median_ms": p50, "p90_ms": p90,
            "p99_ms": p99, "max_ms": float(ms.max()), "times_ms": [float(v) for v in ms]}


def _check(iterations: int, warmup: int):
    if iterations < 1:
        raise ValueError(f"iterations {iterations}: at least one timed run is needed")
    if warmup < 0:
        raise ValueError(f"warmup {warmup}: the number of warm-up runs cannot be negative")


def _timed(fn: Callable, clock: Callable[[], float]):
    t0 = clock()
    result = fn()
    return result, clock() - t0


def time_callable(fn: Callable, iterations: int, warmup: int = DEFAULT_WARMUP,
                  clock: Callable[[], float] = time.perf_counter):
    """``(last result of fn(), stats)`` over a first run, ``warmup`` untimed and
    ``iterations`` timed calls of ``fn``."""
    _check(iterations, warmup)
    result, first = _timed(fn, clock)
    for _ in range(warmup):
        result = fn()
    times = []
    for _ in range(iterations):
        result, dt = _timed(fn, clock)
        times.append(dt)
    return result, stats(times, first, warmup)


def interleave(fn_a: Callable, fn_b: Callable, iterations: int,
               warmup: int = DEFAULT_WARMUP, clock: Callable[[], float] = time.perf_counter,
               settle_fn: Callable[[], object] | None = settle):
    """Like ``time_callable`` on both, taking turns (a, b, a, b, ...) through the first run,
    the warm-up and the timed runs, each timed run after ``settle_fn()`` (None: at once):
    ``((result_a, stats_a), (result_b, stats_b))``."""
    _check(iterations, warmup)
    res_a, first_a = _timed(fn_a, clock)
    res_b, first_b = _timed(fn_b, clock)
    for _ in range(warmup):
        res_a, res_b = fn_a(), fn_b()
    fns, res, times = (fn_a, fn_b), [res_a, res_b], ([], [])
    for _ in range(iterations):
        for k in (0, 1):
            if settle_fn is not None:
                settle_fn()
            res[k], dt = _timed(fns[k], clock)
            times[k].append(dt)
    (res_a, res_b), (ta, tb) = res, times
    return (res_a, stats(ta, first_a, warmup)), (res_b, stats(tb, first_b, warmup))


def spread(s: dict) -> float:
    """(p90 - p50) / p50: how far the slow tail sits above the typical run."""
    return (s["p90_ms"] - s["p50_ms"]) / s["p50_ms"] if s["p50_ms"] > 0 else math.inf


def load_average() -> float | None:
    """The 1-minute load average, or None where the system has none (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


#: where Linux counts each CPU state's time since boot (the first line: all CPUs)
PROC_STAT = "/proc/stat"


def cpu_ticks(path: str = PROC_STAT) -> tuple[int, int] | None:
    """(all CPU time, time stolen by the hypervisor) in clock ticks since boot, from the
    ``cpu`` line of /proc/stat (user nice system idle iowait irq softirq steal ...), or None
    where there is none (not Linux)."""
    try:
        with open(path) as f:
            fields = f.readline().split()
    except OSError:
        return None
    if len(fields) < 9 or fields[0] != "cpu":
        return None
    ticks = [int(v) for v in fields[1:9]]
    return sum(ticks), ticks[7]


def steal_share(before, after) -> float | None:
    """The share of CPU time a virtual machine's hypervisor took from it between two
    :func:`cpu_ticks` readings (its vCPUs run by the host for other guests: a slow phase
    the load average does not show), or None."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    return (after[1] - before[1]) / (after[0] - before[0])


def reliability_warnings(named_stats: dict, load: float | None = None,
                         cores: int | None = None) -> list[str]:
    """One sentence per reason the figures are unreliable: a side whose spread exceeds
    SPREAD_LIMIT, or a load average above LOAD_PER_CORE_LIMIT x cores (always printed with
    the load average). ``named_stats``: {"clnn": stats, ...}; ``load`` defaults to the
    current one."""
    load = load_average() if load is None else load
    cores = cores or os.cpu_count() or 1
    where = "" if load is None else f" (load average {load:.2f} on {cores} cores)"
    out = []
    for name, s in named_stats.items():
        sp = spread(s)
        if sp > SPREAD_LIMIT:
            out.append(f"{name} timings spread widely: (p90 - p50) / p50 = {100 * sp:.0f}% "
                       f"> {100 * SPREAD_LIMIT:.0f}%{where}; the figures are unreliable")
    if load is not None and load > LOAD_PER_CORE_LIMIT * cores:
        out.append(f"load average {load:.2f} is above {LOAD_PER_CORE_LIMIT:g} x {cores} cores: "
                   "other work shares the CPU and the figures are unreliable")
    return out


def stats_row(name: str, s: dict) -> str:
    """One aligned line of ``stats_header``'s table."""
    first = "-" if s["first_ms"] is None else f"{s['first_ms']:.3f}"
    vals = " ".join(f"{s[k]:9.3f}" for k in ("mean_ms", "std_ms", "min_ms", "p50_ms",
                                              "p90_ms", "p99_ms", "max_ms"))
    return f"  {name:8} {first:>10} {vals}"


def stats_header() -> str:
    cols = " ".join(f"{c:>9}" for c in ("mean", "std", "min", "p50", "p90", "p99", "max"))
    return f"  {'ms':8} {'first run':>10} {cols}"


def turn(names: list, r: int) -> list:
    """The order of round ``r``: ``names`` rotated to start with the (r mod len)-th."""
    k = r % len(names)
    return names[k:] + names[:k]


def rounds(sides: dict, n_rounds: int, per_round: int,
           settle_fn: Callable[[], object] | None = settle) -> tuple[dict, dict]:
    """Sides taking turns: ``n_rounds`` rounds in each of which every side of ``sides``
    ({name: callable returning the seconds of one run}) runs ``per_round`` times, round r
    starting with the (r mod sides)-th side: no side always runs right after the same other
    (the one before may leave caches in a state that the next one pays for; the same code on
    both sides of models_ab.py measured up to 6% apart in a fixed order), and each side's turn
    after ``settle_fn()`` (:func:`settle`: the side before may leave its worker threads
    spinning; None: at once). Returns ({name: seconds of every run}, {name: the median ms of
    each round})."""
    times = {name: [] for name in sides}
    medians = {name: [] for name in sides}
    for r in range(n_rounds):
        for name in turn(list(sides), r):
            call = sides[name]
            if settle_fn is not None:
                settle_fn()
            ts = [call() for _ in range(per_round)]
            times[name] += ts
            medians[name].append(float(np.median(ts)) * 1e3)
    return times, medians


def round_spread(medians: list[float]) -> float:
    """(max - min) / median of per-round medians."""
    mid = float(np.median(medians))
    return (max(medians) - min(medians)) / mid if mid > 0 else math.inf


def rounds_warnings(rows: list[dict], load_before, load_after, cores: int | None = None):
    """The sentences that say a rounds benchmark is unreliable: rows (with their "spread":
    {side: round_spread}) above ROUND_SPREAD_LIMIT, a load average above LOAD_PER_CORE_LIMIT
    x cores before or after."""
    out = [f"{r['model']}: per-round medians spread by up to "
           f"{100 * max(r['spread'].values()):.0f}% > {100 * ROUND_SPREAD_LIMIT:.0f}%; its "
           "figures are unreliable" for r in rows
           if r.get("spread") and max(r["spread"].values()) > ROUND_SPREAD_LIMIT]
    cores = cores or os.cpu_count() or 1
    if max(load_before or 0, load_after or 0) > LOAD_PER_CORE_LIMIT * cores:
        out.append(f"load average {fmt_load(load_before)} -> {fmt_load(load_after)} on "
                   f"{cores} cores: other work shares the CPU and the figures are unreliable")
    return out


def fmt_load(value) -> str:
    return "n/a" if value is None else f"{value:.2f}"
