"""How a WHILE loop on the OpenCL device can read its condition back, each way timed as a whole
iteration of a loop like ``clnn capabilities``' WHILE workload (a condition kernel on a 1-element
counter, then a body of a 512x512 float ADD and the counter's increment), in pyopencl without
clnn around it: what each way costs the loop, not one read alone.

- ``blocking read``: the condition kernel, a blocking 1-byte read, then the body (clnn's way);
- ``map``: the condition written to a CL_MEM_ALLOC_HOST_PTR buffer, mapped (blocking) and
  unmapped;
- ``host pointer + finish``: the condition written to a CL_MEM_USE_HOST_PTR buffer over a host
  array, the queue finished, the array read;
- ``overlap``: the condition kernel, a non-blocking read, the next body enqueued at once
  (speculatively: it would be discarded after a false condition), then a wait on the read;
- ``no condition``: the body alone (the floor).

    python3 benchmarks/condition_read.py [--rounds 5] [--iterations 300] [--json FILE]

Rounds take the ways in turn; each round times ``--iterations`` iterations per way. The JSON
record holds the device, the load average before and after and every round's microseconds
per iteration.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

SOURCE = """
__kernel void add(__global const float* a, __global float* b) {
    int i = get_global_id(0); b[i] = a[i] + 1.5f; }
__kernel void inc(__global const int* a, __global int* b) { b[0] = a[0] + 1; }
__kernel void less(__global const int* a, __global const int* n, __global uchar* c) {
    c[0] = a[0] < n[0]; }
"""
N = 512 * 512


class Loop:
    """The buffers and kernels of the loop."""

    def __init__(self, cl):
        self.cl = cl
        dev = cl.get_platforms()[0].get_devices()[0]
        self.device = dev.name.strip()
        self.ctx = ctx = cl.Context([dev])
        self.q = cl.CommandQueue(ctx)
        prg = cl.Program(ctx, SOURCE).build()
        rw = cl.mem_flags.READ_WRITE
        a, b = cl.Buffer(ctx, rw, N * 4), cl.Buffer(ctx, rw, N * 4)
        i, j, n = (cl.Buffer(ctx, rw, 4) for _ in range(3))
        self.keep = (a, b, i, j, n)  # (kernel arguments hold no reference)
        self.flag = cl.Buffer(ctx, rw, 4)
        self.mapped = cl.Buffer(ctx, rw | cl.mem_flags.ALLOC_HOST_PTR, 4)
        self.host = np.zeros(4, np.uint8)
        self.pinned = cl.Buffer(ctx, rw | cl.mem_flags.USE_HOST_PTR, hostbuf=self.host)
        self.add, self.inc = cl.Kernel(prg, "add"), cl.Kernel(prg, "inc")
        self.add.set_args(a, b)
        self.inc.set_args(i, j)
        self.less = {}
        for name, out in (("flag", self.flag), ("mapped", self.mapped),
                          ("pinned", self.pinned)):
            self.less[name] = cl.Kernel(prg, "less")
            self.less[name].set_args(i, n, out)
        self.out = np.empty(1, np.uint8)

    def body(self):
        self.cl.enqueue_nd_range_kernel(self.q, self.add, (N,), None)
        self.cl.enqueue_nd_range_kernel(self.q, self.inc, (1,), None)

    def cond(self, name: str):
        self.cl.enqueue_nd_range_kernel(self.q, self.less[name], (1,), None)

    def blocking_read(self):
        self.cond("flag")
        self.cl.enqueue_copy(self.q, self.out, self.flag, is_blocking=True)
        self.body()

    def map(self):
        cl = self.cl
        self.cond("mapped")
        arr, _ = cl.enqueue_map_buffer(self.q, self.mapped, cl.map_flags.READ, 0, (1,),
                                       np.uint8, is_blocking=True)
        bool(arr[0])
        arr.base.release(self.q)
        self.body()

    def host_pointer(self):
        self.cond("pinned")
        self.q.finish()
        bool(self.host[0])
        self.body()

    def overlap(self):
        self.cond("flag")
        ev = self.cl.enqueue_copy(self.q, self.out, self.flag, is_blocking=False)
        self.body()
        ev.wait()

    def no_condition(self):
        self.body()


WAYS = {"blocking read": "blocking_read", "map": "map", "host pointer + finish": "host_pointer",
        "overlap": "overlap", "no condition": "no_condition"}


def _time(loop, way, iterations: int) -> float:
    fn = getattr(loop, WAYS[way])
    for _ in range(20):
        fn()
    loop.q.finish()
    t0 = time.perf_counter()
    for _ in range(iterations):
        fn()
    loop.q.finish()
    return (time.perf_counter() - t0) / iterations * 1e6


def main() -> int:
    import pyopencl as cl

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    loop = Loop(cl)
    load_before = [round(x, 2) for x in os.getloadavg()]
    rounds = {w: [] for w in WAYS}
    for _ in range(args.rounds):
        for w in WAYS:
            rounds[w].append(round(_time(loop, w, args.iterations), 1))
    medians = {w: statistics.median(v) for w, v in rounds.items()}
    print(f"{loop.device}, load before {load_before}")
    for w, m in medians.items():
        print(f"  {w:24} {m:8.1f} us per iteration  (rounds {rounds[w]})")
    record = {"what": __doc__.splitlines()[0], "device": loop.device,
              "loadavg_before": load_before,
              "loadavg_after": [round(x, 2) for x in os.getloadavg()],
              "cpu_count": os.cpu_count(), "iterations_per_round": args.iterations,
              "us_per_iteration_median": medians, "us_per_iteration_rounds": rounds}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
