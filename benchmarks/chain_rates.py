"""GFLOP/s of a model's pointwise and depthwise convolutions, chained and one by one.

    python3 benchmarks/chain_rates.py MODEL.tflite... [--rounds 8] [--iterations 20]

A chained run (clnn/chain.py) is one launch, so OpenCL profiling events cannot time its
operations. This measures them another way: for each category (CONV_2D with a 1x1 filter,
DEPTHWISE_CONV_2D, and every launch of the model), the category's launches of the prepared
model, in the model's order, run as one chain, and the same launches run one by one with a
finish after the last, in turns (``--rounds`` rounds of ``--iterations`` runs each side, wall
time of enqueue to finish, medians). GFLOP/s = the category's FLOP (clnn run --profile's
counts) / that time. The launches read and write the model's buffer pool as in a run, zeroed
before each round (a category's launches alone leave values no run makes, subnormal ones
among them, which compute slower): only the time is meaningful, not the values. Fused
operations (a PAD in a convolution, a depthwise convolution fused into the 1x1 after it:
``gemm.dwpw``) count in the category of the launch's operation.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def categories(pm, sg) -> dict[str, list]:
    """category -> the launches of the model's plans, in order."""
    out: dict[str, list] = {"pointwise CONV_2D": [], "DEPTHWISE_CONV_2D": [], "all": []}
    for p in pm.partitions:
        for plan in p.plans.values():
            for la in plan.launches if plan is not None else ():
                op = sg.operations[la.op_index]
                out["all"].append(la)
                if op.type.name == "DEPTHWISE_CONV_2D":
                    out["DEPTHWISE_CONV_2D"].append(la)
                elif op.type.name == "CONV_2D" and \
                        tuple(sg.operands[op.inputs[1]].dimensions[1:3]) == (1, 1):
                    out["pointwise CONV_2D"].append(la)
    return out


def zero_pools(pm, q):
    """Zero the plans' buffer pools: what a category's launches leave there (they run without
    the launches between them) could hold subnormal values, whose arithmetic is slower."""
    import pyopencl as cl

    for p in pm.partitions:
        for plan in p.plans.values():
            if plan is not None:
                cl.enqueue_fill_buffer(q, plan.pool, np.zeros(1, np.uint8), 0, plan.pool.size)
    q.finish()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=20)
    args = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    from clnn import chain
    from clnn.launch import enqueue_launch
    from clnn.tools.devices import open_device
    from clnn.tools.onnx_run import import_model
    from clnn.tools.roofline import counts
    from clnn.tools.run import parse_inputs

    device = open_device("opencl")
    print(f"device: {device.cl_device.name.strip()}, load average {os.getloadavg()[0]:.2f}")
    for path in args.models:
        imported = import_model(path, None)
        sg = imported.model.main
        pm = device.prepare_model(imported.model)
        pm.run([np.asarray(x) for x in parse_inputs(imported, ())])
        q = device.queue
        for name, launches in categories(pm, sg).items():
            if len(launches) < 2:
                continue
            if any(chain.part(la.key) is None for la in launches):
                print(f"{os.path.basename(path)} {name}: not chainable")
                continue
            ch = chain.make_chain(launches, device.cl_device, device.context)
            ch.build(device.context)
            flop = sum(counts(sg, k)[0] for k in dict.fromkeys(la.op_index
                                                                 for la in launches))

            def chained(q=q, ch=ch):
                enqueue_launch(q, ch)
                q.finish()

            def one_by_one(q=q, launches=launches):
                for la in launches:
                    enqueue_launch(q, la)
                q.finish()

            times: dict = {"chained": [], "one by one": []}
            for f in (chained, one_by_one):
                f()
            for _ in range(args.rounds):
                for label, f in (("chained", chained), ("one by one", one_by_one)):
                    zero_pools(pm, q)
                    for _ in range(args.iterations):
                        t0 = time.perf_counter()
                        f()
                        times[label].append(time.perf_counter() - t0)
            ms = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
            print(f"{os.path.basename(path):34} {name:18} {len(launches):3} launches "
                  f"{flop / 1e6:8.1f} MFLOP  chained {ms['chained']:7.3f} ms "
                  f"({flop / ms['chained'] / 1e6:6.1f} GFLOP/s)  one by one "
                  f"{ms['one by one']:7.3f} ms ({flop / ms['one by one'] / 1e6:6.1f} GFLOP/s)",
                  flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
