"""``clnn capabilities``: the OpenCL device's measured PerformanceInfo per operand type, with
when and how it was measured and how stable each figure is; ``--baseline litert`` adds the
same workloads against TFLite's runtime (clnn/bench/caps_baseline.py)."""

from __future__ import annotations

import json
import sys

from clnn.capabilities import (
    cache_path,
    load_or_measure,
    load_or_measure_all,
    spread,
    to_capabilities,
)
from clnn.devices import open_cl_device
from hal.types import FLT_MAX

BASELINES = ("reference", "litert")


def _caps_json(caps) -> dict:
    return {
        "relaxed_float32_to_float16_performance_scalar":
            vars(caps.relaxed_float32_to_float16_performance_scalar),
        "relaxed_float32_to_float16_performance_tensor":
            vars(caps.relaxed_float32_to_float16_performance_tensor),
        "operand_performance": {p.type.name: vars(p.info) for p in caps.operand_performance},
        "if_performance": vars(caps.if_performance),
        "while_performance": vars(caps.while_performance)}


def unstable_workloads(record: dict) -> list[str]:
    return [n for n, w in record["workloads"].items() if w.get("unstable")]


def _pct(spread: dict) -> str:
    return f"{spread['relative_spread'] * 100:.0f}%"


def _print_conditions(record: dict, dev, src: str) -> None:
    ident, cond = record["identity"], record.get("conditions", {})
    m = cond.get("machine", {})
    load = cond.get("loadavg_before")
    print(f"clnn capabilities of {dev.get_version_string()}")
    print(f"  {src}")
    print(f"  measured {record['measured_at']} by clnn {ident['clnn_version']} on "
          f"{m.get('node')} ({m.get('system')}, {m.get('machine')}, {m.get('cpu_count')} CPUs), "
          f"load average {load[0] if load else 'unknown'} at the start")
    print(f"  {cond.get('rounds')} samples per workload and device (OpenCL and reference take "
          f"turns each round); executions per sample: {cond.get('executions_per_sample')}"
          f"{'; quick (small) workloads' if record.get('quick') else ''}")
    print("  exec_time = median OpenCL time / median reference (NNAPI 'CPU') time, lower is "
          "better; power_usage estimated = exec_time; spread = (max - min) / median of the "
          "per-round ratio")


def _print_reference(record: dict) -> None:
    print(f"  {'workload':32} {'exec_time':>9} {'min':>7} {'max':>7} {'spread':>7} "
          f"{'opencl ms':>10} {'ref ms':>9} {'runs':>5} {'ops in CL':>9}")
    for name, w in record["workloads"].items():
        if "ratio" not in w:
            print(f"  {name:32} {'FLT_MAX':>9}  ({w.get('error')})")
            continue
        r = w["ratio_spread"]
        flag = "  UNSTABLE" if w.get("unstable") else ""
        print(f"  {name:32} {w['ratio']:9.3f} {r['min']:7.3f} {r['max']:7.3f} {_pct(r):>7} "
              f"{w['opencl']['median'] * 1e3:10.2f} {w['reference']['median'] * 1e3:9.2f} "
              f"{w['executions_per_sample']:>5} "
              f"{w['operations_in_opencl_kernels']:>4}/{w['operations']}{flag}")


def _print_litert(base: dict) -> None:
    print(f"  against TFLite's runtime ({base['runtime']}, {base['threads']} threads; "
          f"{base['rounds']} samples each, OpenCL and litert taking turns, "
          f"executions per sample: {base['executions_per_sample']}; measured now, not cached)")
    print(f"  {'workload':32} {'vs litert':>9} {'min':>7} {'max':>7} {'spread':>7} "
          f"{'opencl ms':>10} {'litert ms':>10} {'runs':>5}")
    none = []
    for name, w in base["workloads"].items():
        if "ratio" not in w:
            none.append(f"{name} ({w['no_baseline']})")
            continue
        r = w["ratio_spread"]
        flag = "  UNSTABLE" if w.get("unstable") else ""
        print(f"  {name:32} {w['ratio']:9.3f} {r['min']:7.3f} {r['max']:7.3f} {_pct(r):>7} "
              f"{w['opencl']['median'] * 1e3:10.2f} {w['litert']['median'] * 1e3:10.2f} "
              f"{w['executions_per_sample']:>5}{flag}")
    if none:
        print("  no litert baseline: " + "; ".join(none))


def comparison(specs: list[str], records: list[dict]) -> dict:
    """Per workload, each device's figure and, for devices measured together, its time over
    the first device's round by round (median and spread of the per-round quotient: both
    samples of a round were taken under the same load)."""
    out = {}
    first = records[0]
    for name, w0 in first["workloads"].items():
        row = {"exec_time": {}, "time_over_first": {}}
        for spec, record in zip(specs, records):
            w = record["workloads"].get(name, {})
            row["exec_time"][spec] = w.get("ratio")
            together = record.get("measured_at") == first.get("measured_at") and \
                record.get("conditions", {}).get("measured_together") == \
                first.get("conditions", {}).get("measured_together")
            if spec != specs[0] and together and "opencl_s" in w and "opencl_s" in w0:
                row["time_over_first"][spec] = spread(
                    [a / b for a, b in zip(w["opencl_s"], w0["opencl_s"])])
        out[name] = row
    return out


def _print_comparison(specs, records, table) -> None:
    for spec, record in zip(specs, records):
        src = f"cached in {record['cached']}" if record.get("cached") else \
            f"measured now in {record['measure_seconds']:.1f} s"
        load = record.get("conditions", {}).get("loadavg_before")
        print(f"{spec}: {src}; load average {load[0] if load else 'unknown'} at the start")
    print("exec_time per device (lower is better); 'x first' = the device's time over "
          f"{specs[0]}'s, per round (median, spread), where measured together")
    print(f"  {'workload':32} " + " ".join(f"{s:>16}" for s in specs))
    for name, row in table.items():
        cells = []
        for spec in specs:
            v = row["exec_time"][spec]
            cell = "FLT_MAX" if v is None else f"{v:.3f}"
            q = row["time_over_first"].get(spec)
            if q is not None:
                cell += f" ({q['median']:.2f}x {q['relative_spread'] * 100:.0f}%)"
            cells.append(f"{cell:>16}")
        print(f"  {name:32} " + " ".join(cells))


def run_compare_cli(specs: list[str], remeasure: bool = False, as_json: bool = False) -> int:
    """``clnn capabilities --devices A,B,...``: the devices not cached measured
    together, each one's figures, and their comparison."""
    from clnn.devices import open_device

    devices = [open_device(s) for s in specs]
    records = load_or_measure_all(devices, remeasure=remeasure)
    table = comparison(specs, records)
    if as_json:
        print(json.dumps({"devices": specs, "records": records, "comparison": table},
                         indent=1))
        return 0
    _print_comparison(specs, records, table)
    unstable = {s: unstable_workloads(r) for s, r in zip(specs, records)}
    for s, names in unstable.items():
        if names:
            print(f"  {s}: unstable (spread over 20% after remeasuring): {', '.join(names)}")
    return 0


def run_capabilities_cli(remeasure: bool = False, as_json: bool = False,
                         baseline: str = "reference", quick: bool = False,
                         plot: str | None = None, devices: list[str] | None = None) -> int:
    if devices and len(devices) > 1:
        return run_compare_cli(devices, remeasure, as_json)
    dev = open_cl_device()
    record = load_or_measure(dev, remeasure=remeasure, quick=quick)
    caps = to_capabilities(record)
    if plot is not None:
        from clnn.bench.plots import capabilities_figure

        capabilities_figure(plot, record["workloads"], dev.name)
        print(f"clnn capabilities: wrote {plot}", file=sys.stderr)
    base = None
    if baseline == "litert":
        from clnn.bench.caps_baseline import measure_litert

        base = measure_litert(dev, quick=quick)
    unstable = unstable_workloads(record)
    if as_json:
        out = dict(record)
        out["capabilities"] = _caps_json(caps)
        out["unstable"] = unstable
        if base is not None:
            out["baseline_litert"] = base
        print(json.dumps(out, indent=1))
        return 0
    src = f"cached in {record['cached']}" if record.get("cached") else \
        f"measured now in {record['measure_seconds']:.1f} s, saved to {cache_path(dev)}"
    _print_conditions(record, dev, src)
    _print_reference(record)
    never = [p.type.name for p in caps.operand_performance if p.info.exec_time == FLT_MAX]
    print(f"  FLT_MAX (no workload / no OpenCL kernel takes the type): {', '.join(never)}")
    if unstable:
        thr = record["conditions"]["unstable_threshold"]
        print(f"  unstable (spread over {thr * 100:.0f}%): {', '.join(unstable)}; run "
              f"`clnn capabilities --remeasure` on a quiet machine")
    if base is not None:
        _print_litert(base)
    return 0
