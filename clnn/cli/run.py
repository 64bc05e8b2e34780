"""``clnn run MODEL.tflite|MODEL.onnx``: import a TFLite or ONNX model, run it on a device,
report outputs, latency, an optional per-operation profile and an optional comparison.

    clnn run model.tflite [--device reference|opencl] [--input NAME=FILE.npy ...]
             [--iterations N] [--warmup N] [--compare reference|litert] [--profile]
             [--json]
    clnn run model.onnx [--shape NAME=1,3,224,224 ...] [--compare reference|onnxruntime] ...

Inputs are random by default (seeded: floats uniform in [0, 1), integers over their range).
Latency (clnn/bench/timing.py): the first run apart, then ``--warmup`` untimed runs, then
statistics (mean, std, min, p50, p90, p99, max) of ``--iterations`` timed runs, with a warning
when their spread or the machine's load average makes them unreliable; ``--compare litert``
times ai-edge-litert (2 threads) the same way, taking turns with clnn. ``--profile``
(OpenCL) sums the OpenCL profiling events of every kernel per operation over the timed runs.
``--compare`` reports max |a - b| and max |a - b| / max |b| per output against the reference
device or ai-edge-litert (TFLite's runtime, the ``bench`` extra); an ONNX model's peer is
onnxruntime (2 threads, timed in turns the same way: clnn/cli/onnx_run.py).
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from clnn.bench import timing
from clnn.devices import open_device
from hal.builder import make_request, read_outputs
from hal.errors import ErrorStatus, HalError

SEED = 20240607
LITERT_THREADS = 2


def random_inputs(imported, seed: int = SEED) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for io in imported.inputs:
        dt = np.dtype(io.dtype)
        shape = tuple(d or 1 for d in io.shape)
        if dt.kind == "f":
            arrays.append(rng.random(shape, dtype=np.float32).astype(dt))
        elif dt.kind == "b":
            arrays.append(rng.random(shape) < 0.5)
        else:
            info = np.iinfo(dt)
            lo, hi = (0, 10) if dt == np.int32 else (info.min, info.max)
            arrays.append(rng.integers(lo, hi, shape, endpoint=True).astype(dt))
    return arrays


def parse_inputs(imported, specs, seed: int = SEED) -> list[np.ndarray]:
    """``NAME=FILE.npy`` (NAME: a TFLite input name or its position) over random inputs."""
    from clnn.cli.errors import CliError

    arrays = random_inputs(imported, seed)
    names = [io.name for io in imported.inputs]
    for spec in specs or ():
        name, sep, path = spec.partition("=")
        if not sep:
            raise CliError(f"--input {spec!r}: expected NAME=FILE.npy")
        if name in names:
            k = names.index(name)
        elif name.isdigit() and int(name) < len(names):
            k = int(name)
        else:
            raise CliError(f"--input {spec!r}: no input named {name!r} (inputs: "
                           f"{', '.join(names)})")
        try:
            arrays[k] = np.load(path, allow_pickle=False).astype(imported.inputs[k].dtype)
        except (OSError, ValueError, EOFError, TypeError) as e:  # missing, not .npy, objects
            reason = e.strerror if isinstance(e, OSError) and e.strerror else e
            raise CliError(f"--input {spec!r}: cannot load {path} as a NumPy array: "
                           f"{reason}") from e
    return arrays


def read_model_bytes(path: str) -> bytes | None:
    """The model file's bytes (the compilation cache's key), or None when unreadable."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


class ClnnRunner:
    """A prepared imported model on a device, with a reusable request."""

    def __init__(self, imported, device, model_bytes: bytes | None = None):
        """``model_bytes``: the model file's bytes, to prepare through the compilation cache
        under clnn's cache directory (clnn/prepare_cached.py); None: prepare afresh."""
        from clnn.devices import compilation_dir
        from clnn.prepare_cached import prepare_with_cache

        if getattr(imported, "states", None):  # its inputs include the state (a stream's)
            raise ValueError(f"a streaming model ({len(imported.states)} state variables): "
                             "run its frames with clnn run --stream N or clnn.load")
        self.imported = imported
        self.device = device
        t0 = time.perf_counter()
        #: "off", "miss" (prepared, and saved) or "hit" (prepared from the cache)
        self.prepared, self.cache, self._save = prepare_with_cache(
            device, imported.model, model_bytes, compilation_dir(device))
        self.prepare_s = time.perf_counter() - t0
        self._runs = 0

    def save_cache(self):
        """Save the compilation cache of a miss, after the first result (once)."""
        save, self._save = self._save, None
        if save is not None:
            save()

    def run(self, inputs) -> tuple[list[np.ndarray], float]:
        """One execution: (outputs, seconds). Before the second, the chains (clnn/chain.py) are
        made and waited for (outside the timed call): the runs from it on are the steady
        state, the first is the first result."""
        model = self.imported.model
        if self._runs == 1:
            getattr(self.prepared, "wait_chains", lambda: None)()
        self._runs += 1
        req = make_request(model, inputs)
        t0 = time.perf_counter()
        r = self.prepared.execute_synchronously(req)
        dt = time.perf_counter() - t0
        if r.status != ErrorStatus.NONE:
            raise HalError(f"execution failed: {r.message or r.status.name}", r.status)
        return read_outputs(model, req, r.output_shapes), dt

    def latency(self, inputs, iterations: int) -> tuple[list[np.ndarray], list[float]]:
        """(outputs, seconds of each timed run) after one untimed first run."""
        outs, s = timing.time_callable(lambda: self.run(inputs)[0], iterations, warmup=0)
        return outs, [t * 1e-3 for t in s["times_ms"]]


class LiteRtRunner:
    """ai-edge-litert's Interpreter on the same model file."""

    def __init__(self, path: str, threads: int = LITERT_THREADS):
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError as e:
            raise RuntimeError("--compare litert needs ai-edge-litert (pip install "
                               "'clnn[bench]')") from e
        self.interpreter = Interpreter(model_path=path, num_threads=threads)
        self.threads = threads
        self.interpreter.allocate_tensors()

    def run(self, imported, inputs) -> tuple[list[np.ndarray], float]:
        it = self.interpreter
        by_index = {d["index"]: d for d in it.get_input_details()}
        for io, x in zip(imported.inputs, inputs):
            it.set_tensor(io.tensor, np.asarray(x, by_index[io.tensor]["dtype"]))
        t0 = time.perf_counter()
        it.invoke()
        dt = time.perf_counter() - t0
        return [it.get_tensor(io.tensor) for io in imported.outputs], dt

    def latency(self, imported, inputs, iterations: int):
        outs, s = timing.time_callable(lambda: self.run(imported, inputs)[0], iterations,
                                       warmup=0)
        return outs, [t * 1e-3 for t in s["times_ms"]]


def litert_expected(path: str, imported, inputs) -> list[np.ndarray]:
    """What ``--compare litert`` checks outputs against, untimed: litert's builtin kernels for
    a quantized model (clnn.suites.litert_builtin), else litert's default runtime."""
    from clnn.suites.litert_builtin import litert_run, quantized

    if quantized(imported.model):
        return litert_run(path, inputs)
    return LiteRtRunner(path).run(imported, inputs)[0]


def latency_stats(times: list[float]) -> dict:
    """timing.stats of timed runs given in seconds."""
    return timing.stats(times)


def compare(outputs, expected) -> list[dict]:
    """Per output: max |a - b|, max |a - b| / max |b|, and whether |a - b| <= 1e-4 + 1e-3 *
    max |b| holds everywhere (b: the expected output)."""
    rows = []
    for a, b in zip(outputs, expected):
        a = np.asarray(a, np.float64)
        b = np.asarray(b, np.float64).reshape(a.shape)
        err = float(np.max(np.abs(a - b))) if a.size else 0.0
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        rows.append({"max_abs_err": err, "max_rel_err": err / scale if scale else err,
                     "within_tolerance": err <= 1e-4 + 1e-3 * scale})
    return rows


def profile(runner: ClnnRunner, inputs, iterations: int) -> list[dict]:
    """Per operation: kernel time from OpenCL profiling events summed over ``iterations``."""
    return profile_prepared(runner.prepared, runner.imported.model, inputs, iterations)


def profile_prepared(pm, model, inputs, iterations: int) -> list[dict]:
    """:func:`profile` of a prepared model ``pm`` of ``model`` (shared with clnn.load's
    ``profile``): rows by descending kernel time, then fused operations, then a host row.
    The runs are made as the executions make them: where the plans run chains
    (clnn/chain.py), each chained launch's time is read from the cycle counters of the chain's
    profiled variant (the longest a work-group spent in it, clnn.bench.chain_profile.
    launch_cycles: the launches of a chain add up to about its run; row ``chained``), the
    other launches' from
    OpenCL profiling events; where the device's compiler has no cycle counter, every launch
    runs on its own, timed by its event."""
    if not hasattr(pm, "run"):
        raise RuntimeError("--profile needs the OpenCL device")
    from clnn import chain
    from clnn.bench import chain_profile
    from clnn.launch import ChainEvents

    sg = getattr(pm, "model", model).main  # the prepared graph (clnn/layout.py may add ops)
    values = [np.asarray(x) for x in inputs]
    per_op: dict[int, float] = {}
    launches: dict[int, set] = {}

    in_chain: set[int] = set()

    def add(launch, seconds: float, chained_: bool = False):
        per_op[launch.op_index] = per_op.get(launch.op_index, 0.0) + seconds
        launches.setdefault(launch.op_index, set()).add(launch.name)
        if chained_:
            in_chain.add(launch.op_index)

    chains = []
    if hasattr(pm, "chains") and pm.chains_started():  # (a model not chained yet stays so:
        pm.wait_chains()  # no chain compiled for a profile)
        chains = pm.chains()
    hz = chain_profile.ready(chains, pm.device.context) if chains else None
    chained = hz is not None
    with chain_profile.profiled(chains if chained else []):
        if chained:  # untimed: PoCL compiles a kernel at its first launch
            with np.errstate(all="ignore"):
                pm.run(values, events=ChainEvents())
        for _ in range(iterations):
            events = ChainEvents() if chained else []
            with np.errstate(all="ignore"):
                pm.run(values, events=events)
            for step, ev in events:
                if isinstance(step, chain.Chain):
                    for launch, sec in zip(step.launches,
                                          chain_profile.launch_times(step, pm.queue, hz)):
                        add(launch, sec, True)
                else:
                    add(step, (ev.profile.end - ev.profile.start) * 1e-9)
    total = sum(per_op.values()) or 1.0
    rows = [{"operation": k, "type": sg.operations[k].type.name,
             "kernels": sorted(launches[k]), "ms": per_op[k] * 1e3 / iterations,
             "share": per_op[k] / total, "chained": k in in_chain} for k in per_op]
    rows.sort(key=lambda r: -r["ms"])
    fused = getattr(pm, "fused_into", {})  # done by another operation's kernels
    rows += [{"operation": k, "type": sg.operations[k].type.name,
              "kernels": [f"fused into operation {j}"], "ms": 0.0, "share": 0.0}
             for k, j in sorted(fused.items()) if k not in per_op]
    on_cl = set(per_op) | set(fused)
    host = [k for k in range(len(sg.operations)) if k not in on_cl]
    if host:
        rows.append({"operation": None, "type": f"{len(host)} operations without kernel time "
                     "(reference fallback or empty)", "kernels": [], "ms": 0.0, "share": 0.0})
    return rows


def _stats(a: np.ndarray) -> str:
    if a.size == 0:
        return "empty"
    f = a.astype(np.float64)
    return (f"min {f.min():.4g}  max {f.max():.4g}  mean {f.mean():.4g}  "
            f"std {f.std():.4g}")


def run_model(path: str, device: str = "reference", input_specs=(), iterations: int = 10,
              compare_with: str | None = None, do_profile: bool = False,
              as_json: bool = False, top: int = 15,
              warmup: int = timing.DEFAULT_WARMUP, plot: str | None = None,
              trace: str | None = None, shapes=None, use_cache: bool = True,
              devices: list[str] | None = None, show_plan: bool = False) -> int:
    from clnn.cli.errors import CliError
    from clnn.cli.onnx_run import import_model

    if iterations < 1:
        raise CliError(f"--iterations {iterations}: at least one timed run is needed")
    if warmup < 0:
        raise CliError(f"--warmup {warmup}: the number of warm-up runs cannot be negative")
    imported = import_model(path, shapes)  # .tflite or .onnx (clnn/cli/onnx_run.py)
    if getattr(imported, "states", None):
        raise CliError(f"{os.path.basename(path)} is a streaming model ({len(imported.states)} "
                       "state variables): run its frames with --stream N")
    # a failure here (a bad --input, a device, an execution) ends in clnn.cli.main.main
    inputs = parse_inputs(imported, input_specs)
    # --plot and --trace read OpenCL profiling events as --profile does
    profiling = do_profile or trace is not None or (plot is not None and device == "opencl")
    runner = _open_runner(path, imported, device, devices, profiling, use_cache, shapes)
    if show_plan:
        plan = getattr(runner.prepared, "plan", None)
        if plan is None:
            raise CliError("--plan shows the runtime's placement: it needs --devices")
        if not as_json:
            print(plan())
    ok, litert = _open_peer(compare_with, path)
    if not ok:
        return 1
    run_clnn = lambda: runner.run(inputs)[0]  # noqa: E731
    if litert is not None:  # taking turns: a load change during the runs hits both sides
        (outputs, lat), (expected, litert_lat) = timing.interleave(
            run_clnn, lambda: litert.run(imported, inputs)[0], iterations, warmup)
    else:
        outputs, lat = timing.time_callable(run_clnn, iterations, warmup)
        expected = litert_lat = None
    runner.save_cache()  # after the timed runs: saving compiles again (clnn/compilation_cache.py)
    report = _report(path, imported, runner, inputs, outputs, lat, show_plan)
    _add_peer(report, lat, compare_with, litert, litert_lat)
    status = 0
    if compare_with:
        status = _compare_outputs(report, imported, inputs, outputs, expected, compare_with,
                                  path)
        if status is None:
            return 1
    if do_profile:
        try:
            report["profile"] = profile(runner, inputs, iterations)
        except RuntimeError as e:
            print(f"clnn run: {e}", file=sys.stderr)
            return 1
        _add_roofline(report, runner)
    _write_pictures(report, runner, inputs, [t / 1e3 for t in lat["times_ms"]], plot, trace,
                    iterations)
    if as_json:
        print(json.dumps(report, indent=1))
        return status
    _print_report(report, top)
    return status


def _open_runner(path, imported, device, devices, profiling, use_cache, shapes) -> ClnnRunner:
    """The model prepared on ``device`` (through the compilation cache when ``use_cache``), or
    through the NNAPI runtime over ``devices`` (clnn/nnapi) when they are given."""
    model_bytes = read_model_bytes(path) if use_cache else None
    if model_bytes is not None and shapes:  # the shapes fixed at load make another model
        model_bytes += repr(sorted(shapes.items())).encode()
    if devices:  # the NNAPI runtime over several devices (clnn/nnapi)
        from clnn.nnapi.hal_adapter import RuntimeDevice

        return ClnnRunner(imported, RuntimeDevice(devices), None)
    return ClnnRunner(imported, open_device(device, profiling=profiling), model_bytes)


def _open_peer(compare_with, path):
    """(ok, the peer runtime): ai-edge-litert, or onnxruntime for an ONNX model; None when
    ``compare_with`` names neither. Not ok: the peer cannot run the model (said on stderr)."""
    from clnn.cli.errors import one_line
    from clnn.cli.onnx_run import OrtRunner, check_peer

    if compare_with not in ("litert", "onnxruntime"):
        return True, None
    try:
        check_peer(compare_with, path)
        return True, OrtRunner(path) if compare_with == "onnxruntime" else LiteRtRunner(path)
    except Exception as e:  # noqa: BLE001 - missing package, or a file it refuses
        print(f"clnn run: --compare {compare_with}: {one_line(e) or type(e).__name__}",
              file=sys.stderr)
        return False, None


def _report(path, imported, runner, inputs, outputs, lat, show_plan) -> dict:
    report = {"model": os.path.basename(path), "device": runner.device.name,
              "operations": len(imported.model.main.operations),
              "prepare_s": runner.prepare_s, "compilation_cache": runner.cache,
              "first_execution_s": lat["first_ms"] / 1e3, "latency": lat,
              "inputs": [{"name": io.name, "shape": list(x.shape), "dtype": str(x.dtype)}
                         for io, x in zip(imported.inputs, inputs)],
              "outputs": [{"name": io.name, "shape": list(o.shape), "dtype": str(o.dtype),
                           "stats": _stats(o)} for io, o in zip(imported.outputs, outputs)]}
    if hasattr(runner.prepared, "pool_report"):
        report["memory"] = runner.prepared.pool_report()
    if show_plan:
        from clnn.nnapi.partition import plan_dict

        report["plan"] = plan_dict(runner.prepared.plan())
    return report


def _add_peer(report, lat, compare_with, litert, litert_lat) -> None:
    """The peer's latency and the ratio, the load average and the warnings of unreliable
    timings (on stderr: stdout stays the report, or its JSON)."""
    if litert is not None:
        report[f"{compare_with}_latency"] = litert_lat
        report[f"{compare_with}_threads"] = litert.threads
        report["ratio_p50"] = lat["p50_ms"] / litert_lat["p50_ms"]
    named = {"clnn": lat}
    if litert is not None:
        named[compare_with] = litert_lat
    report["load_average"] = timing.load_average()
    report["warnings"] = timing.reliability_warnings(named, report["load_average"])
    for w in report["warnings"]:
        print(f"clnn run: warning: {w}", file=sys.stderr)


def _compare_outputs(report, imported, inputs, outputs, expected, compare_with,
                     path) -> int | None:
    """0 when every output is within tolerance of the reference's (``expected``: the peer's,
    or None for the reference device, run here), else 1; None when the reference fails (said
    on stderr). A quantized model's outputs are checked against litert's builtin kernels
    (clnn.suites.litert_builtin.expected_outputs), the timed XNNPACK's difference kept apart."""
    from clnn.suites.litert_builtin import expected_outputs

    timed = expected
    try:
        if compare_with == "reference":
            expected, _ = ClnnRunner(imported, open_device("reference")).run(inputs)
        elif compare_with == "litert":
            expected = expected_outputs(path, imported, inputs, timed)
    except (RuntimeError, ValueError, HalError) as e:
        print(f"clnn run: --compare {compare_with}: {getattr(e, 'reason', e)}",
              file=sys.stderr)
        return None
    rows = compare(outputs, expected)
    for row, out in zip(rows, report["outputs"]):
        out["compare"] = row
    report["compare_with"] = compare_with
    if compare_with == "litert" and expected is not timed:
        report["compared_with"] = "litert builtin kernels"
        for row, vs_timed in zip(rows, compare(outputs, timed)):  # for information
            row["xnnpack_max_abs_err"] = vs_timed["max_abs_err"]
    return 0 if all(r["within_tolerance"] for r in rows) else 1


def _add_roofline(report: dict, runner):
    """Per-operation GFLOP/s or GB/s and fraction of the device's peak (clnn/bench/roofline.py),
    and the totals per operation type."""
    from clnn.bench.roofline import annotate, profile_peak

    peak = profile_peak(runner.device)
    report["peak"] = peak
    model = getattr(runner.prepared, "model", runner.imported.model)  # (clnn/layout.py)
    planned = getattr(runner.prepared, "planned_shapes", None)  # (a dynamic batch is 0 in
    report["profile_totals"] = annotate(  # the model's dimensions)
        report["profile"], model.main, None if peak is None else (peak["gflops"], peak["gbs"]),
        planned() if planned else None)


def _write_pictures(report, runner, inputs, times, plot, trace, iterations):
    """--plot and --trace (clnn/bench/plots.py, clnn/bench/trace.py)."""
    if trace is not None:
        from clnn.bench.trace import write_trace

        n = write_trace(trace, runner.prepared,
                        getattr(runner.prepared, "model", runner.imported.model), inputs)
        print(f"clnn run: wrote {trace} ({n} kernel events)", file=sys.stderr)
    if plot is not None:
        from clnn.bench.plots import run_figure

        rows = report.get("profile")
        if rows is None and hasattr(runner.prepared, "run"):
            rows = profile(runner, inputs, iterations)
        # the per-operation divergence report, where --per-op made one (clnn/suites/divergence.py)
        run_figure(plot, report["model"], report["device"], times, rows, report.get("per_op"))
        print(f"clnn run: wrote {plot}", file=sys.stderr)


def _print_report(report: dict, top: int):
    lat = report["latency"]
    print(f"{report['model']} on {report['device']}: {report['operations']} operations, "
          f"prepared in {report['prepare_s']:.2f} s (compilation cache: "
          f"{report['compilation_cache']}), first execution "
          f"{report['first_execution_s'] * 1e3:.1f} ms")
    for x in report["inputs"]:
        print(f"  input  {x['name']}: {x['shape']} {x['dtype']}")
    for o in report["outputs"]:
        print(f"  output {o['name']}: {o['shape']} {o['dtype']}  {o['stats']}")
        if "compare" in o:
            c = o["compare"]
            print(f"         vs {report.get('compared_with', report['compare_with'])}: max abs "
                  f"err {c['max_abs_err']:.3g}, max rel err {c['max_rel_err']:.3g} "
                  f"({'ok' if c['within_tolerance'] else 'OUT OF TOLERANCE'})")
            if "xnnpack_max_abs_err" in c:
                print(f"         vs litert's XNNPACK delegate (timed; its int8 kernels "
                      f"requantize otherwise): max abs err {c['xnnpack_max_abs_err']:.3g}")
    if "memory" in report:
        m = report["memory"]
        print(f"memory: buffer pool {m['pool_bytes']:,} B for {m['tensor_bytes']:,} B of "
              f"intermediate tensors (planned by liveness), constants {m['constant_bytes']:,} B, "
              f"{m['launches']} kernel launches per run")
    n, w = lat["iterations"], lat["warmup"]
    peer = report.get("compare_with")
    timed_peer = f"{peer}_latency" in report  # litert or onnxruntime, timed in turns
    print(f"latency: {n} timed run{'s' * (n != 1)} after the first and {w} warm-up "
          f"run{'s' * (w != 1)}" + (f", clnn and {peer} taking turns" if timed_peer else ""))
    print(timing.stats_header())
    print(timing.stats_row("clnn", lat))
    if timed_peer:
        # the table's name column is 8 wide: onnxruntime's usual short name fits it
        print(timing.stats_row("ort" if peer == "onnxruntime" else peer,
                               report[f"{peer}_latency"]))
        print(f"  clnn / {peer} (p50): {report['ratio_p50']:.2f} "
              f"({peer} with {report[f'{peer}_threads']} threads; above 1: clnn is slower)")
    if "profile" in report:
        from clnn.bench.roofline import print_profile

        print_profile(report, top)
