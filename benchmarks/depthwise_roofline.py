"""How far the models' depthwise convolutions run from what moving their data allows.

    python3 benchmarks/depthwise_roofline.py MODEL.tflite... [--reps 9] [--rounds 1]
                                             [--fused] [--json]

Every distinct float32 NHWC depthwise layer the models plan (``CLNN_TUNE=off``, ``CLNN_DWPW=0``:
the CPU rule's variant, the layer apart from its 1x1 convolution) is timed alone on the tuner's
scratch buffers (clnn/tuning.py ``measure_candidates``: warm caches, as the tuner measures),
then a copy kernel moves the same bytes (the layer's input read once, its output written once,
16 floats a work-item) on buffers of the same sizes: the least time any kernel reading the input
and writing the output can take on this device, caches as warm. The copy is timed as the rule
is: where the device runs chains the tuner times a layer as one launch of CHAIN_REPEATS copies
of it and divides (no launch's start in a layer's time), so the copy runs as many copies of
itself in one launch (one work-group per compute unit walking the buffers, a barrier between
copies) and is divided alike; timed a launch apiece, a small layer's copy was mostly the
launch's start (4-10 us on PoCL against the rule's 0.1-2 us), a bound the rule beat 10-50x.
Per layer: the rule's GFLOP/s, the copy bound (the layer's FLOP over the copy's time), the FMA
bound (``clnn bench peak``'s figure) and the rule's time over the higher of the two bounds'
times (the one that binds). FLOP-weighted over the
layers' occurrences: the same, and per filter / stride class its share of the depthwise time.
``--rounds N``: each layer's rule and copy timed N times in turn, the least of each kept (a
shared machine's load inflates some rounds).

``--fused``: where the models' depthwise time runs, per model: each model prepared as a user
gets it (the default options: the tuning cache's choices, the depthwise -> 1x1 fusion where
the tuner chose it, chains) and with the fusion wherever a tile fits (``dwpw`` "all"), and of
its float32 depthwise layers (weighted by the rule's time above, the layer apart), the share
fused into the 1x1 convolution's kernel (``gemm.dwpw``: counted as fused work, no depthwise
launch of its own), run as a launch of a chain (clnn/chain.py: one launch of persistent
work-groups with the model's other launches) and run as a launch alone, and the share at
>= 0.85 of its bound (unfused) or fused, #36's measure.
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

#: the share of the copy-and-FMA bound a layer apart runs at to count as at its bound (#36)
NEAR = 0.85

COPY = """__kernel void traffic(__global const float* x, __global float* y, int nin, int nout,
                      int copies) {
    /* the copy repeated ``copies`` times, each work-item walking its own contiguous share of
       the vectors (the work-group's items all done with one copy before the next: the
       barrier); the vectors read past the output's end feed a branch no value takes, so that
       none of the reads is dropped */
    const int n = max(nin, nout), g = get_global_size(0);
    const int per = (n + g - 1) / g, i0 = get_global_id(0) * per, i1 = min(i0 + per, n);
    for (int r = 0; r < copies; ++r) {
        for (int i = i0; i < i1; ++i) {
            float16 v = (float16)(0.0f);
            if (i < nin) v = vload16(i, x);
            if (i < nout) vstore16(v, i, y);
            else if (v.s0 == -1.5f) y[0] = v.s1;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
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
            seen.setdefault(key_of(kw), [0, v])[0] += 1
        return v

    dv.choose = record
    try:
        for p in paths:
            device.prepare_model(import_model(p).model)
    finally:
        dv.choose = choose
    return seen


def copy_seconds(device, kernel, nin: int, nout: int, reps: int) -> float:
    """Median seconds of one copy by ``kernel`` (COPY, built once) reading ``nin`` and writing
    ``nout`` floats, timed as the tuner times the rule (:func:`copies`)."""
    import numpy as np
    import pyopencl as cl

    from clnn.kernels.support import i32

    q = device.timing_queue()
    vin, vout = -(-nin // 16), -(-nout // 16)
    bufs = [cl.Buffer(device.context, cl.mem_flags.READ_WRITE, 64 * n) for n in (vin, vout)]
    for b, n in zip(bufs, (vin, vout)):
        cl.enqueue_fill_buffer(q, b, np.float32(0), 0, 64 * n)
    k = copies(device)
    kernel.set_args(*bufs, i32(vin), i32(vout), i32(k))
    units = int(device.cl_device.max_compute_units)
    local = 64
    g = min(-(-max(vin, vout) // local), units) * local if k > 1 else \
        -(-max(vin, vout) // local) * local
    times = []
    for _ in range(reps + 1):
        ev = cl.enqueue_nd_range_kernel(q, kernel, (g,), (local,))
        ev.wait()
        times.append((ev.profile.end - ev.profile.start) * 1e-9 / k)
    return statistics.median(times[1:])


def copies(device) -> int:
    """The copies of the copy in one launch: the tuner's CHAIN_REPEATS where the device runs
    chains (clnn/tuning.py chained_kernels: the rule's time is a chain's over its copies of
    the layer), else 1 (the rule timed a launch apiece, as the copy)."""
    from clnn import tuning

    return tuning.CHAIN_REPEATS if tuning.chaining(device) else 1


def key_of(kw: dict) -> str:
    """A depthwise layer's key (as :func:`layers` keys them) from dv.choose's keywords (a
    float layer's ``quant``, None, left out: the fused layers' keys have none)."""
    return json.dumps({k: x for k, x in kw.items()
                       if k != "flop" and not (k == "quant" and x is None)}, sort_keys=True)


def planned_layers(device, path: str) -> dict:
    """{operation: (layer key, "fused" | "chained" | "alone")} of the float32 depthwise
    layers of the model at ``path`` as ``device`` plans it: fused into the 1x1 convolution
    after it (the fusion pass's choice, clnn.passes.select.DwpwChoices), else its own launch,
    in a chain where the device's runner chains the plan (clnn.chain.chain_plan)."""
    from clnn.cli.onnx_run import import_model
    from clnn.kernels import _depthwise_variants as dv
    from clnn.passes import select

    apart, fused = {}, {}
    choose, call = dv.choose, select.DwpwChoices.__call__

    def record(b, **kw):
        apart[getattr(b, "op_index", -1)] = kw
        return choose(b, **kw)

    def record_fused(self, op, sig):
        tile = call(self, op, sig)
        fused[op] = (sig, tile)
        return tile

    dv.choose, select.DwpwChoices.__call__ = record, record_fused
    try:
        pm = device.prepare_model(import_model(path).model)
    finally:
        dv.choose, select.DwpwChoices.__call__ = choose, call
    out = {}
    for op, (sig, tile) in fused.items():
        if tile is not None and sig["dt"] == "f32":
            out[("dwpw", op)] = (key_of({**{k: sig[k] for k in (
                "dt", "n", "h", "w", "oh", "ow", "fh", "fw", "sh", "sw", "dh", "dw")},
                "o": sig["c"]}), "fused")
    chained = chained_ops(device, pm)
    for op, kw in apart.items():
        if kw["dt"] == "f32":
            out[("depthwise", op)] = (key_of(kw), "chained" if op in chained else "alone")
    return out


def chained_ops(device, pm) -> set:
    """The operations whose launches run in a chain of ``pm``'s plans on ``device``."""
    from clnn import chain

    options = device.options
    if not chain.enabled(device.cl_device, options):
        return set()
    least = options.chain_min_launches or chain.MIN_LAUNCHES
    return {la.op_index for plan in pm._all_plans()
            for step in chain.chain_plan(plan, device.cl_device, device.context, least,
                                         options.cache_dir)
            if isinstance(step, chain.Chain) for la in step.launches}


def fused_shares(paths: list[str], rows: list[dict]) -> list[dict]:
    """Per model and dwpw mode ("on": a user's default, "all"): the rule's time (ms, layers
    apart) of its float32 depthwise layers fused, chained and alone (:func:`planned_layers`;
    ``rows``: :func:`measure`'s, keyed by the layers' keys)."""
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions

    t = {r["key"]: r["rule_s"] for r in rows}
    near = {r["key"] for r in rows if max(r["copy_s"], r["fma_s"]) >= NEAR * r["rule_s"]}
    out = []
    for mode in ("on", "all"):
        device = ClDevice(None, options=DeviceOptions(dwpw=mode))
        for p in paths:
            ms = collections.defaultdict(float)
            counts = collections.Counter()
            at_bound = 0.0
            for key, how in planned_layers(device, p).values():
                ms[how] += t.get(key, 0.0) * 1e3
                counts[how] += 1
                if how != "fused" and key in near:
                    at_bound += t.get(key, 0.0) * 1e3
            out.append({"model": os.path.basename(p), "dwpw": mode, "ms": dict(ms),
                        "layers": dict(counts), "at_bound_ms": at_bound})
    return out


def measure(device, paths: list[str], reps: int, rounds: int = 1) -> dict:
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
        t_rule = t_copy = float("inf")
        for _ in range(rounds):
            times, _ = tuning.measure_candidates(
                device, lambda v, sig=sig: dv.scratch_depthwise(device, v, sig), [rule], reps,
                lambda: True)
            t_rule = min(t_rule, times[tuning._key(rule)] * 1e-3)
            t_copy = min(t_copy, copy_seconds(device, copy, s["n"] * s["h"] * s["w"] * s["o"],
                                              s["n"] * s["oh"] * s["ow"] * s["o"], reps))
        flop = 2.0 * s["n"] * s["oh"] * s["ow"] * s["o"] * s["fh"] * s["fw"]
        form = f"{s['fh']}x{s['fw']} s{s['sw']}"
        rows.append({"layer": f"{s['h']}x{s['w']}x{s['o']} {form}", "class": form, "n": n,
                     "key": sig_json,
                     "flop": flop, "variant": rule, "rule_s": t_rule, "copy_s": t_copy,
                     "fma_s": flop / fma})
    return {"fma_gflops": fma * 1e-9, "rows": rows, "load": os.getloadavg()}


def report(res: dict) -> str:
    out = []
    tot: dict = collections.defaultdict(float)
    cls: dict = collections.defaultdict(float)
    cls_bound: dict = collections.defaultdict(float)
    for r in res["rows"]:
        bound = max(r["copy_s"], r["fma_s"])
        out.append(f"{r['layer']:<22} x{r['n']:<3} rule {r['flop'] / r['rule_s'] * 1e-9:6.1f} "
                   f"GFLOP/s  copy bound {r['flop'] / r['copy_s'] * 1e-9:6.1f}  rule / bound "
                   f"{r['rule_s'] / bound:5.2f}")
        for k, v in (("flop", r["flop"]), ("rule", r["rule_s"]), ("copy", r["copy_s"]),
                     ("bound", bound)):
            tot[k] += r["n"] * v
        cls[r["class"]] += r["n"] * r["rule_s"]
        cls_bound[r["class"]] += r["n"] * bound
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
        out.append("of the copy-and-FMA bound per class (its time over the rule's): " + ", ".join(
            f"{k} {cls_bound[k] / v:.2f}" for k, v in sorted(cls.items(), key=lambda kv: -kv[1])))
    out.extend(report_fused(res.get("fused", [])))
    out.append(f"load average {res['load'][0]:.2f}")
    return "\n".join(out)


def report_fused(shares: list[dict]) -> list[str]:
    """:func:`fused_shares`'s lines: per model and dwpw mode, the depthwise time's shares."""
    out = []
    for m in shares:
        total = sum(m["ms"].values())
        if not total:
            out.append(f"{m['model']} (dwpw {m['dwpw']}): no float32 depthwise layer")
            continue
        near = m.get("at_bound_ms", 0.0)
        out.append(f"{m['model']:<34} dwpw {m['dwpw']:<3}: of {total:.3f} ms depthwise (rule, "
                   "apart): " + ", ".join(
                       f"{how} {100 * m['ms'].get(how, 0.0) / total:.0f}% "
                       f"({m['layers'].get(how, 0)} layers)"
                       for how in ("fused", "chained", "alone")) +
                   f"; unfused at >= {NEAR} of the bound {100 * near / total:.0f}%, fused or "
                   f"there {100 * (near + m['ms'].get('fused', 0.0)) / total:.0f}%")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--fused", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions

    res = measure(ClDevice(None, profiling=True, options=DeviceOptions(tune="off", dwpw="off")),
                  args.models, args.reps, args.rounds)
    if args.fused:
        res["fused"] = fused_shares(args.models, res["rows"])
    print(json.dumps(res, indent=1) if args.json else report(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
