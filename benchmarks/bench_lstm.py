"""UNIDIRECTIONAL_SEQUENCE_LSTM on the OpenCL device vs the reference device, in one run.

    python3 benchmarks/bench_lstm.py [--steps 100] [--batch 1] [--units 512] [--input 512]
                                     [--iterations 3] [--rounds 5] [--json]

One float32 LSTM layer (no CIFG, peephole or projection; tanh; constant weights) over a
time-major sequence. Both devices prepare the same model and run it once to warm up (the
OpenCL plan, its programs and packed weights are made there); then, round by round, each runs
``--iterations`` timed executions in turn, so that load changes on a shared machine hit both
alike. Reported: the median execution time of each over every round, the speed-up, the largest
difference between their outputs, and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(steps: int, batch: int, n_in: int, units: int, seed: int = 0):
    from hal.builder import ModelBuilder

    rng = np.random.default_rng(seed)
    t = "TENSOR_FLOAT32"
    b = ModelBuilder()
    x = b.input(t, [steps, batch, n_in])
    scale = 1.0 / np.sqrt(n_in)
    ins = [x]
    ins += [b.constant(rng.uniform(-scale, scale, (units, n_in)).astype(np.float32))
            for _ in range(4)]
    ins += [b.constant(rng.uniform(-scale, scale, (units, units)).astype(np.float32))
            for _ in range(4)]
    ins += [b.omitted(t) for _ in range(3)]
    ins += [b.constant(rng.uniform(-0.1, 0.1, units).astype(np.float32)) for _ in range(4)]
    ins += [b.omitted(t), b.omitted(t)]
    h = b.input(t, [batch, units])
    c = b.input(t, [batch, units])
    ins += [h, c, b.int32(4), b.float32(0.0), b.float32(0.0), b.bool(True)]
    ins += [b.omitted(t) for _ in range(4)]
    y = b.output(t, [steps, batch, units])
    b.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, y)
    model = b.finish()
    inputs = [rng.uniform(-1, 1, (steps, batch, n_in)).astype(np.float32),
              np.zeros((batch, units), np.float32), np.zeros((batch, units), np.float32)]
    return model, inputs


class Side:
    def __init__(self, device, model, inputs):
        from hal.builder import make_request, read_outputs

        self.model, self.prepared = model, device.prepare_model(model)
        self.request = make_request(model, inputs)
        self._read = read_outputs

    def run(self):
        r = self.prepared.execute_synchronously(self.request)
        if r.status != 0:
            raise RuntimeError(f"execution failed: {r}")
        return r

    def timed(self, n: int) -> list[float]:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            self.run()
            out.append(time.perf_counter() - t0)
        return out

    def outputs(self):
        return self._read(self.model, self.request, self.run().output_shapes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100, help="sequence length")
    ap.add_argument("--batch", type=int, default=1, help="batch size")
    ap.add_argument("--units", type=int, default=512, help="LSTM units (= output size)")
    ap.add_argument("--input", type=int, default=512, help="input size")
    ap.add_argument("--iterations", type=int, default=3, help="timed executions per round")
    ap.add_argument("--rounds", type=int, default=5, help="rounds, each device in turn")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    from clnn.devices import open_device

    model, inputs = build(args.steps, args.batch, args.input, args.units)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    cl = Side(open_device("opencl"), model, inputs)
    cl.run()
    cl_prepare = time.perf_counter() - t0
    ref = Side(open_device("reference"), model, inputs)
    ref.run()
    times = {"opencl": [], "reference": []}
    for _ in range(args.rounds):
        times["opencl"] += cl.timed(args.iterations)
        times["reference"] += ref.timed(args.iterations)
    diff = float(np.max(np.abs(cl.outputs()[0] - ref.outputs()[0])))
    ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    row = {"operation": "UNIDIRECTIONAL_SEQUENCE_LSTM", "steps": args.steps,
           "batch": args.batch, "input": args.input, "units": args.units,
           "iterations": args.iterations, "rounds": args.rounds,
           "opencl_ms": round(ms["opencl"], 2), "reference_ms": round(ms["reference"], 2),
           "speedup": round(ms["reference"] / ms["opencl"], 2),
           "opencl_prepare_and_first_run_s": round(cl_prepare, 2),
           "max_abs_difference": diff,
           "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    if args.json:
        print(json.dumps(row, indent=1))
    else:
        print(f"UNIDIRECTIONAL_SEQUENCE_LSTM {args.batch}x{args.steps} steps, input "
              f"{args.input}, {args.units} units, float32: OpenCL {row['opencl_ms']:.2f} ms, "
              f"reference {row['reference_ms']:.2f} ms (median of {args.rounds} x "
              f"{args.iterations}), speed-up {row['speedup']:.2f}x; max |difference| "
              f"{diff:.2e}; OpenCL prepare + first run {cl_prepare:.2f} s; load average "
              f"{row['load_average'][0]:.2f} -> {row['load_average'][1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
