"""Where litert's XNNPACK runs the models' depthwise layers against the roofline's bound.

    python3 benchmarks/depthwise_peer.py [MODEL.tflite...] [--quick | --per-class N | --all]
                                         [--rounds 5] [--iterations 20] [--census-rounds 3]
                                         [--check-bound] [--json]
    python3 benchmarks/depthwise_peer.py --merge RUN.json... [--json]

The layers: every distinct float32 NHWC depthwise layer the models plan, their copy bound and
the CPU rule's time alone (benchmarks/depthwise_roofline.py ``measure``: the tuner's scratch
buffers, warm caches, the copy kernel moving the same bytes, ``clnn bench peak``'s FMA figure);
without models, the MediaPipe models of clnn's cache that import. Of them, per filter / stride
class, the ``--per-class`` layers of most FLOP over their occurrences (``--quick``: 2 and 2
rounds, the roofline's 1; default 5; ``--all``: every layer). A default run takes under a
minute on 2 cores, ``--all`` a few.

Per layer, :func:`layer_model` writes two .tflite models (the ``tflite`` package's builders, as
clnn/suites/fuzz_tflite_bases.py) holding ``LO`` and ``HI`` copies of that DEPTHWISE_CONV_2D
(its own filter each): a shape-preserving layer (stride 1, SAME) as a sequence, each copy
reading the one before; any other as copies all reading the model's input, each writing its own
tensor: in litert's file every copy's tensor a model output (XNNPACK drops an operation no
output needs: 24 such copies took what one took), in clnn's the last one's only (clnn runs every
operation, and would read every output back). Each model runs in litert (ai-edge-litert's
Interpreter, 2 threads, XNNPACK as it comes) and in clnn (``clnn.tflite.load``, an ``opencl``
device with the default options but the companion off, so that both models run on the same
device; ``prepare_model``, executions), taking turns round by round, each first in turn,
``--iterations`` timed invocations each; a side's time of a layer is (least time of the ``HI``
model - least time of the ``LO`` model) / (``HI`` - ``LO``): what one more copy costs, the
invocation's fixed cost, the input's and the output's transfers cancelled (medians kept alike in
the record).

Reported per layer and FLOP-weighted per class (3x3 s1, 3x3 s2, 5x5 s1, 5x5 s2): XNNPACK's
fraction of the copy-and-FMA bound (the bound's time over its time), clnn's in the model and
the roofline's layer-alone figure, and clnn / XNNPACK. ``--check-bound``: also the copy
kernel's time against numpy's copy of the same bytes on as many threads (:class:`HostCopy`),
and the FMA figure against a measure now and numpy's SGEMM (:func:`check_bound`).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

#: copies of the layer in the two models whose difference times one copy (both at least the
#: chain's MIN_LAUNCHES, so that clnn runs both as one chain)
LO, HI = 8, 24
CLASSES = ("3x3 s1", "3x3 s2", "5x5 s1", "5x5 s2")


def padding(s: dict) -> int:
    """The layer's TFLite padding (0 SAME, 1 VALID) from its geometry."""
    if s["oh"] == -(-s["h"] // s["sh"]) and s["ow"] == -(-s["w"] // s["sw"]):
        return 0
    if (s["oh"], s["ow"]) == ((s["h"] - s["fh"]) // s["sh"] + 1, (s["w"] - s["fw"]) // s["sw"] + 1):
        return 1
    raise ValueError(f"layer {s}: neither SAME nor VALID padding gives its output's size")


def chained(s: dict) -> bool:
    """Whether copies of the layer can follow one another (its output's shape its input's)."""
    return (s["oh"], s["ow"]) == (s["h"], s["w"])


def layer_model(s: dict, copies: int, every_output: bool = False, seed: int = 0) -> bytes:
    """A .tflite model of ``copies`` DEPTHWISE_CONV_2D layers of signature ``s`` (a census key:
    h, w, oh, ow, fh, fw, sh, sw, o channels), float32: a sequence where the output's shape is
    the input's, else copies reading the input, the last one's output the model's
    (``every_output``: every copy's; where the copies follow one another the last's only).
    Filters average the window (positive, summing to about 1 a channel: values neither grow
    nor decay to denormals over the sequence), biases zero, no activation."""
    from clnn.suites.fuzz_tflite_bases import write

    rng = np.random.default_rng(seed)
    f32 = np.float32
    c = s["o"]
    x_shape, y_shape = [1, s["h"], s["w"], c], [1, s["oh"], s["ow"], c]
    seq = chained(s)
    tensors = [("x", x_shape, f32, None, None)]
    ops = []
    opts = {"Padding": padding(s), "StrideW": s["sw"], "StrideH": s["sh"], "DepthMultiplier": 1,
            "FusedActivationFunction": 0, "DilationWFactor": s["dw"], "DilationHFactor": s["dh"]}
    for i in range(copies):
        w = rng.uniform(0.9, 1.1, (1, s["fh"], s["fw"], c)) / (s["fh"] * s["fw"])
        tensors += [(f"w{i}", [1, s["fh"], s["fw"], c], f32, w, None),
                    (f"b{i}", [c], f32, np.zeros(c), None),
                    (f"y{i}", y_shape, f32, None, None)]
        src = len(tensors) - 4 if seq and i else 0
        ops.append(("DEPTHWISE_CONV_2D", [src, len(tensors) - 3, len(tensors) - 2],
                    [len(tensors) - 1], "DepthwiseConv2DOptions", opts, {}))
    outs = [len(tensors) - 1]
    if every_output and not seq:
        outs = list(range(3, len(tensors), 3))
    return write(tensors, ops, inputs=[0], outputs=outs)


def select(rows: list[dict], per_class: int | None) -> list[dict]:
    """The layers of the four classes, per class the ``per_class`` of most FLOP over their
    occurrences (None: all)."""
    out = []
    for cls in CLASSES:
        mine = sorted((r for r in rows if r["class"] == cls), key=lambda r: -r["n"] * r["flop"])
        out += mine if per_class is None else mine[:per_class]
    return out


class Side:
    """One runtime's two models of a layer: least and median seconds of each over the rounds."""

    def __init__(self, name, run_lo, run_hi):
        self.name, self.runs = name, {LO: run_lo, HI: run_hi}
        self.times = {LO: [], HI: []}

    def turn(self, iterations: int):
        for k, run in self.runs.items():
            for _ in range(iterations):
                t0 = time.perf_counter()
                run()
                self.times[k].append(time.perf_counter() - t0)

    def per_copy(self, how) -> float:
        return (how(self.times[HI]) - how(self.times[LO])) / (HI - LO)


def sides(device, s: dict, where: str):
    """(litert Side, clnn Side, [outputs of clnn and litert on the LO model])."""
    from ai_edge_litert.interpreter import Interpreter

    from clnn.cli.run import ClnnRunner
    from clnn.tflite import load

    x = np.random.default_rng(1).uniform(0.5, 1.5, (1, s["h"], s["w"], s["o"])).astype(np.float32)
    lite, cl, outs = {}, {}, []
    for k in (LO, HI):
        data = layer_model(s, k)
        path = os.path.join(where, f"dw{k}.tflite")
        with open(path, "wb") as f:  # litert drops a copy no output needs: every one an output
            f.write(layer_model(s, k, every_output=True))
        it = Interpreter(model_path=path, num_threads=2)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        runner = ClnnRunner(load(data), device)
        for _ in range(2):  # the first result, then the chains made and waited for
            got = runner.run([x])[0]
        if k == LO:
            it.invoke()
            outs = [got[0], it.get_tensor(3 * k)]  # the last copy's output (tensor 3 k)
        lite[k] = it.invoke
        cl[k] = lambda runner=runner: runner.run([x])
    return Side("litert", lite[LO], lite[HI]), Side("clnn", cl[LO], cl[HI]), outs


class HostCopy:
    """numpy's copy of a layer's bytes on the host's cores: the input read once, the output
    written once (``np.copyto`` of their common share, the rest of the input summed or of the
    output filled), split
    into one contiguous share a core, each share copied ``REPEATS`` times in a thread of a
    persistent pool (numpy lets go of the GIL while it copies); warm: the same buffers each
    time. Its least time less the least time of the pool's round trip with nothing to do
    (Python's dispatch), over ``REPEATS``: as the copy kernel's copies in one launch."""

    REPEATS = 32

    def __init__(self, threads: int):
        from concurrent.futures import ThreadPoolExecutor

        self.threads, self.pool = threads, ThreadPoolExecutor(threads)
        self.empty = self._least(lambda i: None, 200)

    def _least(self, task, reps: int) -> float:
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            list(self.pool.map(task, range(self.threads)))
            best = min(best, time.perf_counter() - t0)
        return best

    def seconds(self, nin: int, nout: int, reps: int = 20) -> float:
        a, b = np.ones(max(nin, nout), np.float32), np.empty(max(nin, nout), np.float32)
        n = self.threads

        both = min(nin, nout)

        def share(lo, hi, i):
            return lo + (hi - lo) * i // n, lo + (hi - lo) * (i + 1) // n

        def task(i):
            lo, hi = share(0, both, i)
            rlo, rhi = share(both, max(nin, nout), i)
            for _ in range(self.REPEATS):
                np.copyto(b[lo:hi], a[lo:hi])
                if nin > nout:  # the rest of the input read
                    a[rlo:rhi].sum()
                elif nout > nin:  # the rest of the output written
                    b[rlo:rhi] = 0.0

        return max(self._least(task, reps) - self.empty, 1e-9) / self.REPEATS


def check_bound(device) -> dict:
    """The FMA bound against a measure now (clnn bench peak's kernels, not saved) and numpy's
    SGEMM (its BLAS on the host's threads, 2048 x 2048: a GEMM runs near the FMA peak), and the
    clock the figure implies at 2 FMA pipes of 16 floats a core."""
    from clnn.bench.bench_peak import load_or_measure_peak, measure_fma, peak_figures

    cached = peak_figures(load_or_measure_peak(device))[0]
    now = measure_fma(device)["gflops"]
    a = np.random.default_rng(0).standard_normal((2048, 2048)).astype(np.float32)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t0)
    cores = int(device.cl_device.max_compute_units)
    return {"fma_cached_gflops": cached, "fma_now_gflops": now,
            "numpy_sgemm_gflops": 2 * 2048 ** 3 / best * 1e-9, "cores": cores,
            "ghz_at_64_flop_a_cycle_a_core": cached / (cores * 64)}


def measure(paths, per_class, rounds, iterations, bound_check, census_rounds=3) -> dict:
    from benchmarks import depthwise_roofline as roof
    from clnn.device import ClDevice
    from clnn.options import DeviceOptions

    load0 = os.getloadavg()
    census = roof.measure(ClDevice(None, profiling=True,
                                   options=DeviceOptions(tune="off", dwpw="off")),
                          paths, 9, census_rounds)
    device = ClDevice(None, options=DeviceOptions(companion=False))
    host = HostCopy(int(device.cl_device.max_compute_units)) if bound_check else None
    rows = []
    for r in select(census["rows"], per_class):
        s = json.loads(r["key"])
        with tempfile.TemporaryDirectory() as where:
            lite, cl, (got, want) = sides(device, s, where)
            for i in range(rounds):
                for side in ((lite, cl) if i % 2 == 0 else (cl, lite)):
                    side.turn(iterations)
        err = float(np.max(np.abs(got - want)))
        row = {**r, "litert_s": lite.per_copy(min), "clnn_s": cl.per_copy(min),
               "litert_median_s": lite.per_copy(np.median), "clnn_median_s": cl.per_copy(np.median),
               "litert_lo_s": min(lite.times[LO]), "clnn_lo_s": min(cl.times[LO]),
               "litert_hi_s": min(lite.times[HI]), "clnn_hi_s": min(cl.times[HI]),
               "max_abs_err": err, "sequence": chained(s)}
        if host is not None:
            row["numpy_copy_s"] = host.seconds(s["h"] * s["w"] * s["o"],
                                               s["oh"] * s["ow"] * s["o"])
        rows.append(row)
        print(line(row), file=sys.stderr, flush=True)
    res = {"fma_gflops": census["fma_gflops"], "lo": LO, "hi": HI, "rounds": rounds,
           "iterations": iterations, "rows": rows, "census": census["rows"]}
    if host is not None:
        res["bound_check"] = {**check_bound(device), "pool_round_trip_s": host.empty}
    res["load"] = [load0, os.getloadavg()]
    return res


def merge(records: list[dict]) -> dict:
    """Runs of :func:`measure` as one: per layer the least of each time over the runs (the
    copy's, the rule's alone, numpy's, and each side's ``LO`` and ``HI`` models', a side's time
    a copy taken again from its least two), the layers every run measured."""
    out = {**records[0], "runs": len(records),
           "load": [x for r in records for x in r["load"]]}
    if any("bound_check" in r for r in records):
        out["bound_check_runs"] = [r["bound_check"] for r in records if "bound_check" in r]
    rows = []
    for first in records[0]["rows"]:
        same = [x for r in records for x in r["rows"] if x["key"] == first["key"]]
        if len(same) < len(records):
            continue
        row = dict(first)
        for k in ("copy_s", "rule_s", "numpy_copy_s", "litert_lo_s", "litert_hi_s",
                  "clnn_lo_s", "clnn_hi_s"):
            if k in first:
                row[k] = min(x[k] for x in same)
        for side in ("litert", "clnn"):
            row[f"{side}_s"] = (row[f"{side}_hi_s"] - row[f"{side}_lo_s"]) / (HI - LO)
        rows.append(row)
    out["rows"] = rows
    return out


def bound_s(r: dict) -> float:
    return max(r["copy_s"], r["fma_s"])


def line(r: dict) -> str:
    b = bound_s(r)
    extra = f"  numpy copy / copy kernel {r['numpy_copy_s'] / r['copy_s']:5.2f}" \
        if "numpy_copy_s" in r else ""
    return (f"{r['layer']:<22} x{r['n']:<3} of the bound: XNNPACK {b / r['litert_s']:5.2f}  clnn "
            f"in model {b / r['clnn_s']:5.2f}  clnn alone {b / r['rule_s']:5.2f}  clnn / XNNPACK "
            f"{r['clnn_s'] / r['litert_s']:5.2f}  ({r['litert_s'] * 1e6:.1f} / "
            f"{r['clnn_s'] * 1e6:.1f} us a copy){extra}")


def classes(rows: list[dict]) -> dict:
    """Per class and over all: the occurrence-weighted times (s) of the bound, litert, clnn in
    the model and clnn alone, and the share of the class's FLOP (in the census) measured."""
    tot = collections.defaultdict(lambda: collections.defaultdict(float))
    for r in rows:
        for cls in (r["class"], "all"):
            t = tot[cls]
            t["bound"] += r["n"] * bound_s(r)
            t["litert"] += r["n"] * r["litert_s"]
            t["clnn"] += r["n"] * r["clnn_s"]
            t["alone"] += r["n"] * r["rule_s"]
            t["flop"] += r["n"] * r["flop"]
    return {k: dict(v) for k, v in tot.items()}


def report(res: dict) -> str:
    out = [line(r) for r in res["rows"]]
    census_flop = collections.defaultdict(float)
    for r in res["census"]:
        if r["class"] in CLASSES:
            census_flop[r["class"]] += r["n"] * r["flop"]
            census_flop["all"] += r["n"] * r["flop"]
    for cls, t in sorted(classes(res["rows"]).items(), key=lambda kv: kv[0] == "all"):
        out.append(f"{cls:<7} ({100 * t['flop'] / census_flop[cls]:3.0f}% of its FLOP): of the "
                   f"bound XNNPACK {t['bound'] / t['litert']:.2f}, clnn in model "
                   f"{t['bound'] / t['clnn']:.2f}, clnn alone {t['bound'] / t['alone']:.2f}; "
                   f"clnn / XNNPACK {t['clnn'] / t['litert']:.2f}")
    if "bound_check" in res and all("numpy_copy_s" in r for r in res["rows"]):
        q = [r["numpy_copy_s"] / r["copy_s"] for r in res["rows"]]
        big = [r["numpy_copy_s"] / r["copy_s"] for r in res["rows"] if r["copy_s"] > 5e-6]
        b = res["bound_check"]
        out.append(f"numpy's copy on {b['cores']} threads / the copy kernel: median "
                   f"{np.median(q):.2f}, least {min(q):.2f} (layers whose copy takes > 5 us: "
                   f"median {np.median(big) if big else float('nan'):.2f}; the pool's round "
                   f"trip {b['pool_round_trip_s'] * 1e6:.0f} us taken off)")
        tight = classes([{**r, "copy_s": min(r["copy_s"], r["numpy_copy_s"])}
                         for r in res["rows"]])
        out.append("of the bound with numpy's copy where it is the faster: " + ", ".join(
            f"{cls} XNNPACK {t['bound'] / t['litert']:.2f} clnn {t['bound'] / t['clnn']:.2f}"
            for cls, t in sorted(tight.items(), key=lambda kv: kv[0] == "all")))
        out.append(f"FMA bound {b['fma_cached_gflops']:.0f} GFLOP/s (clnn bench peak's record; "
                   f"measured now {b['fma_now_gflops']:.0f}; numpy SGEMM "
                   f"{b['numpy_sgemm_gflops']:.0f}): {b['ghz_at_64_flop_a_cycle_a_core']:.2f} "
                   f"GHz at 2 FMA pipes of 16 floats on each of {b['cores']} cores")
    loads = [x[0] for x in res["load"]]
    out.append(f"load average {loads[0]:.2f} -> {loads[-1]:.2f} (least {min(loads):.2f}, most "
               f"{max(loads):.2f})")
    return "\n".join(out)


def default_models() -> list[str]:
    from clnn.tflite import load

    root = os.path.expanduser("~/.cache/clnn/models")
    out = []
    for name in sorted(os.listdir(root)):
        if name.endswith(".tflite"):
            try:
                load(os.path.join(root, name))
            except Exception:  # noqa: BLE001 (a model clnn does not import is left out)
                continue
            out.append(os.path.join(root, name))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--per-class", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 layers a class, 2 rounds")
    ap.add_argument("--all", action="store_true", help="every layer of the four classes")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--census-rounds", type=int, default=3,
                    help="the roofline's rounds (each layer alone and its copy, least kept)")
    ap.add_argument("--check-bound", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--merge", nargs="+", metavar="RECORD",
                    help="no measure: these runs' --json records as one (least times)")
    args = ap.parse_args(argv)
    if args.merge:
        recs = []
        for path in args.merge:
            with open(path) as f:
                recs.append(json.load(f))
        res = merge(recs)
        print(json.dumps(res, indent=1) if args.json else report(res))
        return 0
    per_class = None if args.all else 2 if args.quick else args.per_class
    rounds = 2 if args.quick else args.rounds
    res = measure(args.models or default_models(), per_class, rounds, args.iterations,
                  args.check_bound, 1 if args.quick else args.census_rounds)
    print(json.dumps(res, indent=1) if args.json else report(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
