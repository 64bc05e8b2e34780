#!/usr/bin/env python
"""The long sweep of tests/tflite/test_quant_bitexact.py: N seeded single-operation models per
quantized operation and type (tests/kits/quant_cases.py), each run on clnn's devices and on
ai-edge-litert's built-in kernels (the reference of the comparison) and, with --xnnpack, on
litert's default XNNPACK delegate. Prints, per operation and type, how many cases give the same
bits (0 LSB) and the largest difference, on each side.

    python scripts/quant_bitexact.py [--seeds 200] [--devices reference,opencl] [--xnnpack]
                                     [--ops CONV_2D,ADD] [--json FILE]

Run it from the repository root (it imports tests.kits). OpenCL runs without fallback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.kits.quant_cases import OPS, case, run_case  # noqa: E402


def open_devices(names):
    from clnn.devices import open_device

    return {n: open_device(n, fallback=False) if n == "opencl" else open_device(n)
            for n in names}


def sweep(op, dtype, seeds, devices, xnnpack):
    """{side: [cases at 0 LSB, cases, max LSB]} and the errors (seed, message)."""
    rows, errors = {}, []
    for seed in range(seeds):
        c = case(op, dtype, seed)
        try:
            result = run_case(c, devices, xnnpack)
        except Exception as e:  # report it and go on
            errors.append((seed, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"))
            continue
        for side, d in result.items():
            r = rows.setdefault(side, [0, 0, 0])
            r[0] += d == 0
            r[1] += 1
            r[2] = max(r[2], d)
    return rows, errors


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--devices", default="reference,opencl")
    ap.add_argument("--xnnpack", action="store_true")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    devices = open_devices([d for d in args.devices.split(",") if d])
    report, ok = [], True
    for op in args.ops.split(","):
        for dtype in OPS[op]:
            rows, errors = sweep(op, dtype, args.seeds, devices, args.xnnpack)
            report.append({"op": op, "type": dtype, "sides": rows, "errors": errors})
            cells = "  ".join(f"{side} {r[0]}/{r[1]} (max {r[2]})" for side, r in rows.items())
            print(f"{op:24} {dtype:6} {cells}{f'  errors {len(errors)}' if errors else ''}",
                  flush=True)
            ok &= not errors and all(r[0] == r[1] for s, r in rows.items() if s != "xnnpack")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
