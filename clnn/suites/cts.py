"""The conformance runner: the NNAPI CTS corpus (JSON, see shared/cts/FORMAT.md) on a device.

Every test runs twice: as given ("static") and with every output's dimensions unknown
("dynamic": the driver must return the shapes, and report OUTPUT_INSUFFICIENT_SIZE for a
too-small buffer). Each test-variant ends as passed, failed, unsupported or error. The
``mode`` (sync, async, fenced, burst, device-memory) picks the execution path of every request;
clnn/suites/cts_modes.py says how each mode runs and counts.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from clnn.suites.corpus import (  # noqa: F401  (importers of these names from here keep working)
    CorpusError,
    array_of,
    build_model,
    build_request,
    iter_corpus,
    read_corpus_file,
)
from hal.errors import ErrorStatus, HalError
from hal.operations import lookup
from hal.types import (
    NUMPY_DTYPE,
    Model,
    OperandType,
)

OT = OperandType
STATUSES = ("passed", "failed", "unsupported", "error")


# ----------------------------------------------------------------------------- checking

def _tolerance(test: dict, t: OT):
    types = {o["type"] for sg in [test["main"], *test.get("referenced", [])]
             for o in sg["operands"]}
    relaxed = test.get("isRelaxed") or "TENSOR_FLOAT16" in types or "FLOAT16" in types
    if t in (OT.TENSOR_FLOAT32, OT.FLOAT32, OT.TENSOR_FLOAT16, OT.FLOAT16):
        if relaxed or t in (OT.TENSOR_FLOAT16, OT.FLOAT16):
            return 5 * 0.0009765625, 5 * 0.0009765625
        return 1e-5, 5 * 1.1920928955078125e-7
    if t in (OT.TENSOR_BOOL8, OT.BOOL):
        return 0, 0
    return 1, 0


def compare_output(test: dict, o: dict, actual: np.ndarray) -> str | None:
    """None if the output matches, else a detail string."""
    t = OT[o["type"]]
    expected = array_of(o)
    if test.get("multinomialTolerance", 0) > 0:
        return _check_multinomial(test, actual)
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)} != expected {list(expected.shape)}"
    atol, rtol = _tolerance(test, t)
    if t in (OT.TENSOR_BOOL8, OT.BOOL):
        bad = actual != expected
    else:
        a = actual.astype(np.float64)
        e = expected.astype(np.float64)
        bad = ~(np.abs(a - e) <= atol + rtol * np.abs(e))
        bad |= np.isnan(a) != np.isnan(e)
        bad &= ~(np.isnan(a) & np.isnan(e))
    if bad.any():
        idx = int(np.argmax(bad.reshape(-1)))
        return (f"{int(bad.sum())}/{bad.size} values differ; first at flat index {idx}: "
                f"got {actual.reshape(-1)[idx]}, expected {expected.reshape(-1)[idx]}")
    return None


def _check_multinomial(test: dict, actual: np.ndarray) -> str | None:
    sg = test["main"]
    logits = array_of(sg["operands"][sg["inputIndexes"][0]]).astype(np.float64)
    tol = test["multinomialTolerance"]
    for b in range(logits.shape[0]):
        p = np.exp(logits[b] - logits[b].max())
        p /= p.sum()
        freq = np.bincount(actual[b].astype(np.int64), minlength=p.size)[: p.size] / actual.shape[1]
        if np.any(np.abs(freq - p) > tol):
            return (f"batch {b}: frequencies {np.round(freq, 3).tolist()} vs "
                    f"{np.round(p, 3).tolist()}")
    return None


# ----------------------------------------------------------------------------- running

@dataclass
class Result:
    spec: str
    name: str
    variant: str
    status: str
    detail: str = ""
    seconds: float = 0.0  # wall time of this test-variant (JUnit time, the JSON report)


def unsupported_reason(device, model: Model) -> str | None:
    for sg in [model.main, *model.referenced]:
        for op in sg.operations:
            if lookup(op.type) is None:
                return f"{op.type.name} has no implementation in the HAL"
    try:
        supported = device.get_supported_operations(model)
    except HalError as e:
        return None if e.status == ErrorStatus.INVALID_ARGUMENT else str(e)
    if not all(supported) and not getattr(device, "fallback", False):
        bad = [model.main.operations[i].type.name for i, s in enumerate(supported) if not s]
        return f"device does not support {', '.join(sorted(set(bad)))}"
    return None


def run_variant(device, spec: str, test: dict, dynamic: bool, mode: str = "sync") -> Result:
    """One test-variant, executed the ``mode`` way (see clnn.suites.cts_modes)."""
    from clnn.suites.cts_modes import ModeRunner

    variant = "dynamic" if dynamic else "static"
    name = test["name"]

    def res(status, detail=""):
        return Result(spec, name, variant, status, detail)

    expect_failure = bool(test.get("expectFailure"))
    try:
        model = build_model(test, dynamic_outputs=dynamic)
    except (KeyError, ValueError, TypeError, IndexError, AttributeError) as e:
        return res("error", f"corpus entry cannot be built: {type(e).__name__}: {e}")
    try:
        reason = unsupported_reason(device, model)
        if reason:
            return res("unsupported", reason)
        try:
            prepared = device.prepare_model(model)
        except HalError as e:
            if expect_failure:
                return res("passed", f"prepare failed as expected: {e}")
            return res("failed", f"prepare: {e}")
        sg = test["main"]
        outs = [sg["operands"][i] for i in sg["outputIndexes"]]
        runner = ModeRunner(device, prepared, mode)
        # fenced executions need known output dimensions (see clnn.suites.cts_modes)
        fenced_dims = mode == "fenced" and not all(
            model.main.operands[i].is_fully_specified() for i in model.main.output_indexes)
        if fenced_dims and not expect_failure:
            request, _ = build_request(test)
            r = runner.execute(request)
            if r.status != ErrorStatus.INVALID_ARGUMENT:
                return res("failed", f"fenced execution with unknown output dimensions gave "
                                     f"{r.status.name}, expected INVALID_ARGUMENT {r.message}")
            if any(0 in o["dimensions"] for o in outs):  # zero-sized: never known
                return res("passed", "fenced: INVALID_ARGUMENT for outputs of unknown "
                                     "dimensions, as the HAL says")
        if dynamic and not expect_failure and mode != "fenced":
            request, _ = build_request(test, shrink_outputs=True)
            shrinkable = any(np.prod(o["dimensions"] or [1]) > 0 for o in outs)
            r = runner.execute(request, check_size=True)
            if shrinkable and r.status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE:
                return res("failed", f"too-small outputs gave {r.status.name}, expected "
                                     f"OUTPUT_INSUFFICIENT_SIZE {r.message}")
            if shrinkable and len(r.output_shapes) != len(outs):
                return res("failed", f"OUTPUT_INSUFFICIENT_SIZE returned "
                                     f"{len(r.output_shapes)} output shapes for {len(outs)}")
        request, slices = build_request(test, output_dims=fenced_dims)
        r = runner.execute(request)
        if expect_failure:
            if r.status != ErrorStatus.NONE:
                return res("passed", f"execution failed as expected: {r.status.name}")
            return res("failed", "expected a failure, the execution succeeded")
        if r.status != ErrorStatus.NONE:
            return res("failed", f"execute: {r.status.name}: {r.message}")
        pool = request.pools[1].view()
        for k, (o, (off, n)) in enumerate(zip(outs, slices)):
            t = OT[o["type"]]
            dims = tuple(o["dimensions"])
            if len(r.output_shapes) > k and tuple(r.output_shapes[k].dimensions) != dims:
                got = list(r.output_shapes[k].dimensions)
                return res("failed", f"output {k}: returned shape {got}, expected {list(dims)}")
            if o.get("isIgnored"):
                continue
            raw = bytes(pool[off: off + n])
            if t in (OT.TENSOR_BOOL8, OT.BOOL):
                actual = np.frombuffer(raw, dtype=np.uint8).astype(bool)
            else:
                actual = np.frombuffer(raw, dtype=NUMPY_DTYPE[t])
            actual = actual.reshape(dims) if dims else actual
            detail = compare_output(test, o, actual)
            if detail:
                return res("failed", f"output {k}: {detail}")
        return res("passed")
    except Exception as e:  # a crash in the driver: always a bug
        tb = traceback.format_exc(limit=4)
        return res("error", f"{type(e).__name__}: {e}\n{tb}")


@dataclass
class Summary:
    counts: Counter = field(default_factory=Counter)
    results: list = field(default_factory=list)
    seconds: float = 0.0  # wall time of the whole run

    def add(self, r: Result):
        self.counts[r.status] += 1
        self.results.append(r)

    def closing_line(self) -> str:
        c = self.counts
        return (f"{c['passed']} passed, {c['failed'] + c['error']} failed, "
                f"{c['unsupported']} skipped")

    def to_json(self, run: dict | None = None) -> dict:
        """The report; ``run``: what was run where (clnn.suites.cts_report.run_metadata)."""
        out = {"run": run} if run else {}
        return out | {"summary": {s: self.counts[s] for s in STATUSES} | {
                          "total": sum(self.counts.values()), "seconds": self.seconds},
                      "tests": [r.__dict__ for r in self.results]}


_WORKER_DEVICE = None


def open_cts_device(device_name, options):
    """The device a run uses: ``options["runtime"]`` (a list of device names) makes it the
    NNAPI runtime over those devices (clnn/nnapi/hal_adapter.py), each opened with the rest
    of ``options``; else ``device_name`` opened with ``options``."""
    from clnn.devices import open_device

    options = dict(options)
    runtime = options.pop("runtime", None)
    if runtime:
        from clnn.nnapi.devices import devices_from_specs
        from clnn.nnapi.hal_adapter import RuntimeDevice

        return RuntimeDevice(devices_from_specs(runtime, **options))
    return open_device(device_name, **options)


def _worker_init(device_name, options):
    global _WORKER_DEVICE

    _WORKER_DEVICE = open_cts_device(device_name, options)


def _run_test(args):
    spec, test, variants, mode = args
    out = []
    for v in variants:
        start = time.perf_counter()
        r = run_variant(_WORKER_DEVICE, spec, test, v == "dynamic", mode)
        r.seconds = time.perf_counter() - start
        out.append(r)
    return out


def _run_chunk(items):
    return [r for item in items for r in _run_test(item)]


def _crashed(item) -> list[Result]:
    spec, test, variants, _ = item
    return [Result(spec, test["name"], v, "error",
                   "the worker process running this test crashed") for v in variants]


def _run_parallel(tests, jobs, device_name, options, collect):
    """Run in spawned worker processes (a forked child would inherit OpenCL driver threads).

    A worker that dies (a crash in a driver) breaks its pool: the unfinished tests are retried
    one per task in a new pool, and those that still break it are run alone, each in its own
    process; a test that crashes even then ends as "error"."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp.get_context("spawn")

    def run_round(chunks, workers):
        broken = []
        with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init,
                                 initargs=(device_name, options)) as ex:
            futures = {ex.submit(_run_chunk, c): c for c in chunks}
            for f in as_completed(futures):
                try:
                    collect(f.result())
                except BrokenProcessPool:
                    broken.append(futures[f])
        return broken

    size = 8
    broken = run_round([tests[i:i + size] for i in range(0, len(tests), size)], jobs)
    if broken:
        broken = run_round([[t] for c in broken for t in c], jobs)
    for chunk in broken:
        if run_round([chunk], 1):
            collect([r for item in chunk for r in _crashed(item)])


def run_corpus(corpus, device_name="reference", pattern=None, jobs=None, variants=("static",
               "dynamic"), progress=None, device_options=None, mode="sync") -> Summary:
    """Run the corpus. ``jobs`` > 1 runs tests in worker processes; ``mode``: see
    clnn.suites.cts_modes."""
    from tqdm import tqdm

    started = time.perf_counter()
    unreadable = []
    tests = [(spec, t, variants, mode) for spec, _, t in iter_corpus(corpus, pattern,
                                                                     errors=unreadable)]
    summary = Summary()
    for spec, name, reason in unreadable:  # the rest of the corpus still runs
        summary.add(Result(spec, name, "file", "error", reason))
    options = device_options or {}
    show = sys.stderr.isatty() if progress is None else progress
    bar = tqdm(total=len(tests) * len(variants), disable=not show, unit="test", file=sys.stderr)
    jobs = jobs or 1

    def collect(rs):
        for r in rs:
            summary.add(r)
        bar.update(len(rs))

    if jobs > 1:
        _run_parallel(tests, jobs, device_name, options, collect)
    else:
        _worker_init(device_name, options)
        for item in tests:
            collect(_run_test(item))
    bar.close()
    summary.results.sort(key=lambda r: (r.spec, r.name, r.variant))
    summary.seconds = time.perf_counter() - started
    return summary
