"""``clnn fuzz graphs``: random valid graphs (clnn/suites/random_graphs.py) run on the OpenCL
device and on the reference, compared with the CTS tolerances (shared/cts/FORMAT.md).

Where every operation of a graph has OpenCL kernels, fallback is off: the graph runs on the
kernels alone. Outcomes: ``match``; ``mismatch`` (an output outside the tolerance);
``rejected`` (OpenCL refused to prepare or execute with an error status); ``crash`` (an
exception escaped the driver); ``invalid`` (the generator made a graph that fails validation:
a generator bug). A failing graph is shrunk (outputs kept one at a time, operations cut into
model inputs) while it still fails, and printed as ModelBuilder code with its seed.
"""

from __future__ import annotations

import collections
import json
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from clnn.suites.random_graph_spec import F16, F32, Graph, build, to_python
from clnn.suites.random_graphs import generate
from hal.builder import make_request, read_outputs
from hal.errors import ErrorStatus, HalError

#: TENSOR_FLOAT32 of a model without float16: atol, rtol (shared/cts/FORMAT.md)
F32_TOL = (1e-5, 5 * 1.1920928955078125e-7)
F16_TOL = (5 * 0.0009765625, 5 * 0.0009765625)


@dataclass
class Outcome:
    status: str  # match | mismatch | rejected | crash | invalid | reference-failed
    detail: str = ""
    fusions: list = field(default_factory=list)  # "PAD->CONV_2D", ...
    fallback: bool = False  # some operation ran on the reference (not every one supported)
    #: a quantized or integer output within the tolerance but not bit-exact (where the
    #: kernels follow the reference's integer pipeline, an off-by-one is worth a look)
    inexact: bool = False


def compare(model, got: list, want: list, has_f16: bool) -> str | None:
    """None when every output is within the CTS tolerance, else a sentence on the first that
    is not."""
    sg = model.main
    for k, (g, w) in enumerate(zip(got, want)):
        t = sg.operands[sg.output_indexes[k]].type.name
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return f"output {k} ({t}) has shape {list(g.shape)}, the reference {list(w.shape)}"
        if t in (F32, F16):
            atol, rtol = F16_TOL if (t == F16 or has_f16) else F32_TOL
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            same_special = (np.isnan(g64) & np.isnan(w64)) | (np.isinf(w64) & (g64 == w64))
            with np.errstate(invalid="ignore"):
                bad = ~same_special & ~(np.abs(g64 - w64) <= atol + rtol * np.abs(w64))
        elif t == "TENSOR_BOOL8":
            bad = g != w
        else:
            bad = np.abs(g.astype(np.int64) - w.astype(np.int64)) > 1
        if bad.any():
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            return (f"output {k} ({t}, shape {list(w.shape)}): {int(bad.sum())} of {w.size} "
                    f"values outside the tolerance; at {list(i)} OpenCL {g[i]!r}, reference "
                    f"{w[i]!r}")
    return None


def _execute(prepared, model, inputs):
    req = make_request(model, inputs)
    r = prepared.execute_synchronously(req)
    if r.status != ErrorStatus.NONE:
        raise HalError(f"execution failed with {r.status.name}: {r.message}")
    return read_outputs(model, req, r.output_shapes)


def check(g: Graph, cl, ref) -> Outcome:
    """Run one graph on OpenCL (``cl``, a ClDevice) and on ``ref``; compare."""
    try:
        model, inputs = build(g)
    except HalError as e:
        return Outcome("invalid", f"the generator made an invalid graph: {e}")
    try:
        want = _execute(ref.prepare_model(model), model, inputs)
    except HalError as e:
        return Outcome("reference-failed", f"{type(e).__name__}: {e}")
    try:
        supported = cl.get_supported_operations(model)
        cl.fallback = not all(supported)
        prepared = cl.prepare_model(model)
        ops = prepared.model.main.operations  # the prepared graph (clnn/layout.py)
        fusions = sorted(f"{ops[a].type.name}->{ops[b].type.name}"
                         for a, b in prepared.fused_into.items())
        got = _execute(prepared, model, inputs)
    except HalError as e:
        return Outcome("rejected", f"{type(e).__name__}: {e}")
    except Exception as e:  # the driver must never let one escape
        return Outcome("crash", f"{type(e).__name__}: {e}")
    finally:
        cl.fallback = True
    bad = compare(model, got, want, g.has_float16)
    sg = model.main
    inexact = any(np.asarray(a).tobytes() != np.asarray(b).tobytes()
                  for k, (a, b) in enumerate(zip(got, want))
                  if sg.operands[sg.output_indexes[k]].type.name not in (F32, F16))
    return Outcome("mismatch" if bad else "match", bad or "", fusions, not all(supported),
                   inexact)


def shrink(g: Graph, fails, budget: int = 60) -> Graph:
    """A smaller graph for which ``fails(graph)`` still holds: one output at a time, then
    operations cut into model inputs (random data) while it fails."""
    rng = np.random.default_rng(g.seed)
    tries = 0
    if len(g.outputs) > 1:
        for o in g.outputs:
            tries += 1
            h = g.pruned([o])
            if fails(h):
                g = h
                break
    progress = True
    while progress and tries < budget:
        progress = False
        for k in range(len(g.ops) - 1, -1, -1):
            if len(g.ops) <= 1 or tries >= budget:
                break
            tries += 1
            h = g.cut(k, rng)
            if h.ops and fails(h):
                g, progress = h, True
                break
    return g


def reproducer(g: Graph, outcome: Outcome) -> str:
    return (f"# clnn fuzz graphs --seed {g.seed} --count 1: {outcome.status}: "
            f"{outcome.detail}\n{to_python(g)}")


def run(seeds, cl, ref, on_failure=None, progress=None):
    """Check the graphs of ``seeds``; returns (counts, fusion counts, operation counts,
    failures [(seed, outcome, shrunk reproducer)]). ``counts["inexact"]``: matches with a
    quantized / integer output not bit-exact (their seeds in ``counts.inexact_seeds``)."""
    counts, fusions, ops = collections.Counter(), collections.Counter(), collections.Counter()
    failures, inexact = [], []
    for n, seed in enumerate(seeds):
        g = generate(seed)
        out = check(g, cl, ref)
        counts[out.status] += 1
        counts["fallback"] += out.fallback
        if out.status == "match" and out.inexact:
            counts["inexact"] += 1
            inexact.append(seed)
        fusions.update(out.fusions)
        ops.update(g.op_names())
        if out.status not in ("match",):
            small = shrink(g, lambda h, s=out.status: check(h, cl, ref).status == s)
            text = reproducer(small, check(small, cl, ref))
            failures.append((seed, out, text))
            if on_failure:
                on_failure(seed, out, text)
        if progress:
            progress(n + 1)
    counts.inexact_seeds = inexact
    return counts, fusions, ops, failures


def run_in_process(seeds) -> tuple[dict, dict, list[str]]:
    """:func:`run` in a worker process with devices of its own: (counts, fusion counts, failure
    reports). Workers build their OpenCL programs in parallel (PoCL's disk cache is shared), so
    a cold cache costs about 1 / workers of the serial time."""
    from clnn.devices import open_device

    counts, fusions, _, failures = run(seeds, open_device("opencl"), open_device("reference"))
    return dict(counts), dict(fusions), [f"seed {s}: {o.status}: {o.detail}\n{text}"
                                         for s, o, text in failures]


def run_parallel(chunks, jobs: int) -> list[tuple[dict, dict, list[str]]]:
    """:func:`run_in_process` over ``chunks`` of seeds in ``jobs`` spawned processes."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(run_in_process, chunks))


def main(args) -> int:
    from clnn.devices import open_device

    cl, ref = open_device("opencl"), open_device("reference")
    seeds = range(args.seed, args.seed + args.count)
    t0 = time.perf_counter()

    def report(seed, out, text):
        print(f"FAIL seed {seed}: {out.status}: {out.detail}\n{text}\n", file=sys.stderr)

    def tick(n):
        if n % 250 == 0:
            print(f"{n}/{args.count} graphs ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)

    counts, fusions, ops, failures = run(seeds, cl, ref, report, tick)
    seconds = time.perf_counter() - t0
    print(f"{args.count} random graphs (seeds {args.seed}..{args.seed + args.count - 1}) in "
          f"{seconds:.0f} s: " + ", ".join(f"{counts[k]} {k}" for k in
                                           ("match", "mismatch", "rejected", "crash",
                                            "invalid", "reference-failed")) +
          f"; {counts['fallback']} with an operation on the reference (fallback); "
          f"{counts['inexact']} matches with a quantized output not bit-exact"
          + (f" (seeds {counts.inexact_seeds[:20]})" if counts.inexact_seeds else ""))
    print("fusions: " + ", ".join(f"{k} {v}" for k, v in sorted(fusions.items())))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"count": args.count, "seed": args.seed, "seconds": round(seconds, 1),
                       "outcomes": dict(counts), "inexact_seeds": counts.inexact_seeds,
                       "fusions": dict(fusions),
                       "operations": dict(ops),
                       "failures": [{"seed": s, "status": o.status, "detail": o.detail,
                                     "reproducer": t} for s, o, t in failures]}, f, indent=1)
    return 0 if not failures else 1
