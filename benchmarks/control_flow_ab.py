"""``clnn capabilities``' IF and WHILE figures (exec_time: OpenCL / reference) of two checkouts
taking turns: the capabilities measurement itself (clnn.capabilities.measure, its rounds,
samples and remeasures) restricted to the IF and WHILE workloads, in a fresh process per set,
the checkouts alternating set by set (A B A B ...), the load average printed before each.

    python3 benchmarks/control_flow_ab.py --a /work/main --b . [--sets 3] [--json FILE]

The JSON record holds the commit of each checkout, and per set the load average and each
workload's exec_time and medians.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ("IF", "WHILE")


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


def _commit(root: str) -> str:
    return subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", default="/work/main")
    ap.add_argument("--b", default=os.path.dirname(HERE))
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return 0
    roots = {"a": os.path.abspath(args.a), "b": os.path.abspath(args.b)}
    sets = []
    for n in range(args.sets):
        for side, root in roots.items():
            load = [round(x, 2) for x in os.getloadavg()]
            res = subprocess.run([sys.executable, __file__, "--child", root], cwd=root,
                                 capture_output=True, text=True, env={**os.environ,
                                                                       "PYTHONPATH": root})
            if res.returncode:
                print(res.stderr[-2000:], file=sys.stderr)
                return 1
            fig = json.loads(res.stdout.strip().splitlines()[-1])
            sets.append({"set": n, "side": side, "loadavg": load, **fig})
            print(f"set {n} {side} load {load}: " + ", ".join(
                f"{k} {v['exec_time']} ({v['opencl_ms']} / {v['reference_ms']} ms)"
                for k, v in fig.items()), flush=True)
    record = {"what": __doc__.splitlines()[0], "cpu_count": os.cpu_count(),
              "checkouts": {s: {"root": r, "commit": _commit(r)} for s, r in roots.items()},
              "sets": sets}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
