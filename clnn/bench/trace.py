"""``clnn run MODEL --device opencl --trace FILE.json``: one execution as a Chrome / Perfetto
trace (the Trace Event Format's JSON object form; open it in ui.perfetto.dev or
chrome://tracing).

Every kernel launch is an "X" (complete) event on the "OpenCL queue" thread, timed by its
OpenCL profiling event (device clock, start of the first kernel = 0). Partitions that ran on
the reference device (operations without an OpenCL kernel) are "X" events on the "host
(reference)" thread, timed by the host clock from the start of the execution. The two clocks
are different clocks: each thread's times are exact, their alignment is approximate.
"""

from __future__ import annotations

import json
import time

import numpy as np

from clnn.cli.errors import CliError

PID = 1
TID_CL, TID_HOST = 1, 2


def trace_events(prepared, model, inputs) -> dict:
    """Run ``prepared`` (a ClPreparedModel on a device opened with profiling) once on
    ``inputs``; the trace of that execution."""
    if not hasattr(prepared, "run"):
        raise CliError("--trace reads OpenCL profiling events: it needs --device opencl")
    sg = model.main
    events: list = []
    values = [np.asarray(x) for x in inputs]
    with np.errstate(all="ignore"):
        t_start = time.perf_counter_ns()
        prepared.run(values, events=events)
    spans = prepared.host_spans
    out = [{"ph": "M", "pid": PID, "name": "process_name", "args": {"name": "clnn"}},
           {"ph": "M", "pid": PID, "tid": TID_CL, "name": "thread_name",
            "args": {"name": "OpenCL queue"}},
           {"ph": "M", "pid": PID, "tid": TID_HOST, "name": "thread_name",
            "args": {"name": "host (reference)"}}]
    t0 = min((ev.profile.start for _, ev in events), default=0)
    for launch, ev in events:
        start, end = ev.profile.start, ev.profile.end
        op = sg.operations[launch.op_index]
        out.append({"ph": "X", "pid": PID, "tid": TID_CL, "cat": "kernel",
                    "name": f"{op.type.name} {launch.name}",
                    "ts": (start - t0) / 1e3, "dur": max(0, end - start) / 1e3,
                    "args": {"operation": launch.op_index, "kernel": launch.name,
                             "global_size": list(launch.global_size)}})
    for part, a, b in spans:
        names = [sg.operations[k].type.name for k in part.ops]
        out.append({"ph": "X", "pid": PID, "tid": TID_HOST, "cat": "reference",
                    "name": " + ".join(names) if len(names) <= 3
                    else f"{names[0]} ... {names[-1]} ({len(names)} operations)",
                    "ts": (a - t_start) / 1e3, "dur": (b - a) / 1e3,
                    "args": {"operations": list(part.ops)}})
    return {"traceEvents": out, "displayTimeUnit": "ms",
            "otherData": {"clock": "OpenCL queue: device profiling clock from the first "
                          "kernel's start; host: perf_counter from the execution's start"}}


def write_trace(path: str, prepared, model, inputs) -> int:
    """Write the trace of one execution to ``path``; the number of kernel events."""
    trace = trace_events(prepared, model, inputs)
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(trace, f)
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror or e}") from e
    return sum(1 for e in trace["traceEvents"] if e.get("cat") == "kernel")


__all__ = ["trace_events", "write_trace"]
