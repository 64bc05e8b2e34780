"""``clnn capabilities``' IF and WHILE figures (exec_time: OpenCL / reference) across fresh
processes: each process measures as ``clnn capabilities --remeasure`` does
(clnn.capabilities.measure: every workload, its rounds, samples and remeasures; the cache is
not written), and the IF and WHILE lines are printed with both sides' medians and the load
average before the process. ``--control-only`` measures the IF and WHILE workloads alone (a
shorter process, whose heap differs from the full measurement's).

    python3 benchmarks/control_flow_caps.py [--processes 8] [--control-only] [--json FILE]

Why per process: the reference's WHILE takes ~0.6 ms or ~2 ms in one process, steadily, and
which one depends on the process (glibc's heap: where its 1 MiB arrays were trimmed off the
heap, every execution page-faults fresh ones in). Each process therefore also reports the
minor page faults per execution of the reference's WHILE samples in its measurement
(resource.getrusage around each sample, its requests' pages included): few in a process whose
reference is fast, ~1000 and more (4 MiB of fresh pages) in one whose reference is slow.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NAMES = ("IF", "WHILE")


def _count_reference_faults(caps, counts: dict) -> None:
    """Wrap the measurement's samples: the minor page faults of each of the reference's
    WHILE samples (its requests' own pages included) go to ``counts`` (faults, executions)."""
    import resource

    sample = caps._sample

    def counted(prepared, model, inputs, executions):
        mine = type(prepared).__module__.startswith("hal.") and \
            any(op.type.name == "WHILE" for op in model.main.operations)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        seconds = sample(prepared, model, inputs, executions)
        if mine:
            counts["faults"] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
            counts["executions"] += executions
        return seconds

    caps._sample = counted


def child(control_only: bool) -> None:
    """One measurement: a JSON line on stdout."""
    sys.path.insert(0, ROOT)
    from clnn import capabilities as caps
    from clnn.devices import open_cl_device

    if control_only:
        every = caps.workloads_all
        caps.workloads = lambda quick=False: {n: b for n, b in every(quick).items()
                                              if n in NAMES}
    counts = {"faults": 0, "executions": 0}
    _count_reference_faults(caps, counts)
    record = caps.measure(open_cl_device(), progress=False)
    out = {"reference_faults_per_while": counts["faults"] / max(counts["executions"], 1)}
    for name in NAMES:
        w = record["workloads"][name]
        out[name] = {"exec_time": round(w["ratio"], 3), "unstable": w["unstable"],
                     "opencl_ms": round(w["opencl"]["median"] * 1e3, 4),
                     "reference_ms": round(w["reference"]["median"] * 1e3, 4)}
    print(json.dumps(out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--control-only", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.control_only)
        return 0
    from clnn.bench.records import git_commit

    runs = []
    for n in range(args.processes):
        load = [round(x, 2) for x in os.getloadavg()]
        cmd = [sys.executable, __file__, "--child"] + (["--control-only"]
                                                        if args.control_only else [])
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": ROOT})
        if res.returncode:
            print(res.stderr[-2000:], file=sys.stderr)
            return 1
        fig = {"process": n, "loadavg": load, **json.loads(res.stdout.strip().splitlines()[-1])}
        runs.append(fig)
        print(f"process {n} load {load}: " + ", ".join(
            f"{k} {fig[k]['exec_time']} ({fig[k]['opencl_ms']} / {fig[k]['reference_ms']} ms"
            f"{', unstable' if fig[k]['unstable'] else ''})" for k in NAMES) +
            f"; reference faults per WHILE {fig['reference_faults_per_while']:.0f}", flush=True)
    for k in NAMES:
        r = [f[k]["exec_time"] for f in runs]
        ms = [f[k]["opencl_ms"] for f in runs]
        print(f"{k}: exec_time {min(r)}-{max(r)} (median {statistics.median(r)}), over 1.0 in "
              f"{sum(x > 1.0 for x in r)} of {len(r)}; OpenCL {min(ms)}-{max(ms)} ms")
    if args.json:
        record = {"what": __doc__.splitlines()[0], "commit": git_commit(ROOT),
                  "control_only": args.control_only, "cpu_count": os.cpu_count(),
                  "processes": runs}
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
