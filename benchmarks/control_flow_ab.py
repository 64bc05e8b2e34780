"""``clnn capabilities``' IF and WHILE figures (exec_time: OpenCL / reference) of two checkouts
taking turns: the capabilities measurement itself (clnn.capabilities.measure, its rounds,
samples and remeasures) restricted to the IF and WHILE workloads, in a fresh process per set,
the checkouts alternating set by set (A B A B ...), the load average printed before each.

    python3 benchmarks/control_flow_ab.py --a /work/main --b . [--sets 3] [--json FILE]

The JSON record holds the commit of each checkout, and per set the load average and each
workload's exec_time and medians.

``--malloc fixed`` runs the processes with glibc's mmap and trim thresholds fixed
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``), ``both`` in turn with the default:
the reference's 512x512 ADD takes 0.18 ms or ~1.5 ms in one process depending on whether the
heap was trimmed under its 1 MiB allocations (the bytes of its output, page faults on every
execution), which earlier allocations of the process decide, not the code measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from clnn.bench.records import git_commit  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ("IF", "WHILE")
#: glibc's thresholds fixed: large blocks from the heap, and the heap never trimmed under them
FIXED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20), "MALLOC_TRIM_THRESHOLD_": str(256 << 20)}


def child(root: str) -> None:
    """One measurement with the clnn of ``root``: a JSON line on stdout."""
    sys.path.insert(0, root)
    from clnn import capabilities as caps
    from clnn.devices import open_cl_device

    every = caps.workloads_all
    caps.workloads = lambda quick=False: {n: b for n, b in every(quick).items() if n in NAMES}
    record = caps.measure(open_cl_device(), progress=False)
    out = {}
    for name in NAMES:
        w = record["workloads"][name]
        out[name] = {"exec_time": round(w["ratio"], 3), "unstable": w["unstable"],
                     "opencl_ms": round(w["opencl"]["median"] * 1e3, 4),
                     "reference_ms": round(w["reference"]["median"] * 1e3, 4)}
    print(json.dumps(out))


def _measure(root: str, malloc: str) -> dict | None:
    """One child process's figures, with the load average before it."""
    load = [round(x, 2) for x in os.getloadavg()]
    env = {**os.environ, "PYTHONPATH": root, **(FIXED_MALLOC if malloc == "fixed" else {})}
    res = subprocess.run([sys.executable, __file__, "--child", root], cwd=root,
                         capture_output=True, text=True, env=env)
    if res.returncode:
        print(res.stderr[-2000:], file=sys.stderr)
        return None
    return {"loadavg": load, **json.loads(res.stdout.strip().splitlines()[-1])}



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", default="/work/main")
    ap.add_argument("--b", default=os.path.dirname(HERE))
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--malloc", choices=["default", "fixed", "both"], default="both")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return 0
    roots = {"a": os.path.abspath(args.a), "b": os.path.abspath(args.b)}
    mallocs = ["default", "fixed"] if args.malloc == "both" else [args.malloc]
    sets = []
    for n in range(args.sets):
        for malloc in mallocs:
            for side, root in roots.items():
                fig = _measure(root, malloc)
                if fig is None:
                    return 1
                sets.append({"set": n, "side": side, "malloc": malloc, **fig})
                print(f"set {n} {side} malloc {malloc} load {fig['loadavg']}: " + ", ".join(
                    f"{k} {fig[k]['exec_time']} ({fig[k]['opencl_ms']} / "
                    f"{fig[k]['reference_ms']} ms)" for k in NAMES), flush=True)
    record = {"what": __doc__.splitlines()[0], "cpu_count": os.cpu_count(),
              "checkouts": {s: {"root": r, "commit": git_commit(r)} for s, r in roots.items()},
              "sets": sets}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
