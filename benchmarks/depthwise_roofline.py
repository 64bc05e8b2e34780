"""How far the models' depthwise convolutions run from what moving their data allows.

    python3 benchmarks/depthwise_roofline.py MODEL.tflite... [--reps 9] [--json]

Every distinct float32 NHWC depthwise layer the models plan (``CLNN_TUNE=off``, ``CLNN_DWPW=0``:
the CPU rule's variant, the layer apart from its 1x1 convolution) is timed alone on the tuner's
scratch buffers (clnn/tuning.py ``measure_candidates``: warm caches, as the tuner measures),
then a copy kernel moves the same bytes (the layer's input read once, its output written once,
16 floats a work-item) on buffers of the same sizes: the least time any kernel reading the input
and writing the output can take on this device, caches as warm. Per layer: the rule's GFLOP/s,
the copy bound (the layer's FLOP over the copy's time), the FMA bound (``clnn bench peak``'s
figure) and the rule's time over the lower of the two bounds' times. FLOP-weighted over the
layers' occurrences: the same, and per filter / stride class its share of the depthwise time.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

COPY = """__kernel void traffic(__global const float* x, __global float* y, int nin, int nout) {
    const int i = get_global_id(0);
    float16 v = (float16)(0.0f);
    if (i < nin) v = vload16(i, x);
    if (i < nout) vstore16(v, i, y);
}
"""


def layers(device, paths: list[str]) -> dict:
    """{json signature of a float32 depthwise layer: [occurrences, the variant planned]} over
    the models' plans."""
    from clnn.cli.onnx_run import import_model
    from clnn.kernels import _depthwise_variants as dv

    seen: dict = {}
    choose = dv.choose

    def record(b, **kw):
        v = choose(b, **kw)
        if kw["dt"] == "f32":
            key = json.dumps({k: x for k, x in kw.items() if k != "flop"}, sort_keys=True)
            seen.setdefault(key, [0, v])[0] += 1
        return v

    dv.choose = record
    try:
        for p in paths:
            device.prepare_model(import_model(p).model)
    finally:
        dv.choose = choose
    return seen


def copy_seconds(device, kernel, nin: int, nout: int, reps: int) -> float:
    """Median seconds of the copy ``kernel`` (COPY, built once) reading ``nin`` and writing
    ``nout`` floats."""
    import numpy as np
    import pyopencl as cl

    from clnn.kernels.support import i32

    q = device.timing_queue()
    vin, vout = -(-nin // 16), -(-nout // 16)
    bufs = [cl.Buffer(device.context, cl.mem_flags.READ_WRITE, 64 * n) for n in (vin, vout)]
    for b, n in zip(bufs, (vin, vout)):
        cl.enqueue_fill_buffer(q, b, np.float32(0), 0, 64 * n)
    kernel.set_args(*bufs, i32(vin), i32(vout))
    g = -(-max(vin, vout) // 64) * 64
    times = []
    for _ in range(reps + 1):
        ev = cl.enqueue_nd_range_kernel(q, kernel, (g,), (64,))
        ev.wait()
        times.append((ev.profile.end - ev.profile.start) * 1e-9)
    return statistics.median(times[1:])


def measure(device, paths: list[str], reps: int) -> dict:
    import pyopencl as cl

    from clnn import tuning
    from clnn.bench.bench_peak import load_or_measure_peak, peak_figures
    from clnn.kernels import _depthwise_variants as dv

    fma = peak_figures(load_or_measure_peak(device))[0] * 1e9
    copy = cl.Kernel(cl.Program(device.context, COPY).build(), "traffic")
    rows = []
    for sig_json, (n, rule) in sorted(layers(device, paths).items()):
        s = json.loads(sig_json)
        sig = {**dv.signature(**s), "c": s["o"]}
        times, _ = tuning.measure_candidates(
            device, lambda v, sig=sig: dv.scratch_depthwise(device, v, sig), [rule], reps,
            lambda: True)
        t_rule = times[tuning._key(rule)] * 1e-3
        t_copy = copy_seconds(device, copy, s["n"] * s["h"] * s["w"] * s["o"],
                              s["n"] * s["oh"] * s["ow"] * s["o"], reps)
        flop = 2.0 * s["n"] * s["oh"] * s["ow"] * s["o"] * s["fh"] * s["fw"]
        form = f"{s['fh']}x{s['fw']} s{s['sw']}"
        rows.append({"layer": f"{s['h']}x{s['w']}x{s['o']} {form}", "class": form, "n": n,
                     "flop": flop, "variant": rule, "rule_s": t_rule, "copy_s": t_copy,
                     "fma_s": flop / fma})
    return {"fma_gflops": fma * 1e-9, "rows": rows, "load": os.getloadavg()}


def report(res: dict) -> str:
    out = []
    tot: dict = collections.defaultdict(float)
    cls: dict = collections.defaultdict(float)
    for r in res["rows"]:
        bound = max(r["copy_s"], r["fma_s"])
        out.append(f"{r['layer']:<22} x{r['n']:<3} rule {r['flop'] / r['rule_s'] * 1e-9:6.1f} "
                   f"GFLOP/s  copy bound {r['flop'] / r['copy_s'] * 1e-9:6.1f}  rule / bound "
                   f"{r['rule_s'] / bound:5.2f}")
        for k, v in (("flop", r["flop"]), ("rule", r["rule_s"]), ("copy", r["copy_s"]),
                     ("bound", bound)):
            tot[k] += r["n"] * v
        cls[r["class"]] += r["n"] * r["rule_s"]
    if tot["rule"]:
        def rate(k):
            return tot["flop"] / tot[k] * 1e-9
        out.append(f"all {len(res['rows'])} layers (FLOP-weighted over their occurrences): rule "
                   f"{rate('rule'):.1f} GFLOP/s, copy bound {rate('copy'):.1f}, copy and FMA "
                   f"({res['fma_gflops']:.0f}) bound {rate('bound'):.1f}: the rule takes "
                   f"{tot['rule'] / tot['bound']:.2f}x the bound's time")
        out.append("share of the depthwise time: " + ", ".join(
            f"{k} {100 * v / tot['rule']:.0f}%" for k, v in sorted(cls.items(),
                                                                    key=lambda kv: -kv[1])))
    out.append(f"load average {res['load'][0]:.2f}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions

    res = measure(ClDevice(None, profiling=True, options=DeviceOptions(tune="off", dwpw="off")),
                  args.models, args.reps)
    print(json.dumps(res, indent=1) if args.json else report(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
