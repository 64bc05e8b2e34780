"""``clnn capabilities``: the OpenCL device's measured PerformanceInfo per operand type."""

from __future__ import annotations

import json
import sys

from clnn.capabilities import cache_path, load_or_measure, to_capabilities
from clnn.device import ClDevice
from hal.types import FLT_MAX


def run_capabilities_cli(remeasure: bool = False, as_json: bool = False,
                         plot: str | None = None) -> int:
    dev = ClDevice()
    record = load_or_measure(dev, remeasure=remeasure)
    caps = to_capabilities(record)
    if plot is not None:
        from clnn.tools.plots import capabilities_figure

        capabilities_figure(plot, record["workloads"], dev.name)
        print(f"clnn capabilities: wrote {plot}", file=sys.stderr)
    if as_json:
        out = dict(record)
        out["capabilities"] = {
            "relaxed_float32_to_float16_performance_scalar":
                vars(caps.relaxed_float32_to_float16_performance_scalar),
            "relaxed_float32_to_float16_performance_tensor":
                vars(caps.relaxed_float32_to_float16_performance_tensor),
            "operand_performance": {p.type.name: vars(p.info)
                                    for p in caps.operand_performance},
            "if_performance": vars(caps.if_performance),
            "while_performance": vars(caps.while_performance)}
        print(json.dumps(out, indent=1))
        return 0
    src = f"cached in {record['cached']}" if record.get("cached") else \
        f"measured now in {record['measure_seconds']:.1f} s, saved to {cache_path(dev)}"
    print(f"clnn capabilities of {dev.get_version_string()}")
    print(f"  ({src}; exec_time = OpenCL time / reference time, lower is better; "
          f"power_usage estimated = exec_time)")
    print(f"  {'workload':32} {'exec_time':>10} {'opencl ms':>10} {'reference ms':>13} "
          f"{'ops in CL':>9}")
    for name, w in record["workloads"].items():
        if "ratio" not in w:
            print(f"  {name:32} {'FLT_MAX':>10}  ({w.get('error')})")
            continue
        print(f"  {name:32} {w['ratio']:10.3f} {w['opencl']['median'] * 1e3:10.2f} "
              f"{w['reference']['median'] * 1e3:13.2f} "
              f"{w['operations_in_opencl_kernels']:>4}/{w['operations']}")
    never = [p.type.name for p in caps.operand_performance if p.info.exec_time == FLT_MAX]
    print(f"  FLT_MAX (no workload / no OpenCL kernel takes the type): {', '.join(never)}")
    return 0
