"""Measured capabilities of the OpenCL device (``ClDevice.get_capabilities``,
``clnn capabilities [--remeasure] [--json] [--baseline litert]``).

NNAPI's PerformanceInfo is relative to the CPU: ``exec_time`` and ``power_usage`` are ratios
where lower is better. Here every figure is measured against the reference (NumPy) device on the
same workload in the same process:

    exec_time(type)   = median execution time on this device / median on the reference device

A workload per operand type is built in code (:func:`workloads`, builders in
clnn/capabilities_workloads.py): MobileNet-style blocks
(CONV_2D 3x3 stride 2 + RELU6, DEPTHWISE_CONV_2D 3x3, CONV_2D 1x1, residual ADD) for float32,
float16, relaxed float32, quant8 asymm, quant8 signed and per-channel quant8 filters;
elementwise chains for int32 (ADD, MUL, SUB) and bool8 (LOGICAL_AND / OR / NOT); identity
CASTs for quant16 symm / asymm, CAST + DEQUANTIZE for quant8 symm; IF choosing
between two elementwise branches and a WHILE loop of eight iterations. An execution is
``execute_synchronously`` of a prepared model (host copies in and out included), after one
warm-up run. Figures come from several samples: 5 rounds (3 in quick mode; rounds past the
third stop after 60 s), each round taking one sample of every workload on the device and then
one on the reference, a sample being the median of 3 to 50 executions (at least 20 ms on that
side; quick: 1). A workload whose per-round ratio spreads over 20% is measured again (up to 3
measurements in all, within the 60 s; not in quick mode) and the steadiest kept; one still
over 20% is flagged unstable. The record keeps every sample, the median / min / max /
relative spread per device and of the per-round ratio, the attempts, and when (date, clnn
version) and how (rounds, executions per sample, load average, the machine) it was measured.

Several devices can be measured together (:func:`measure_devices`, :func:`load_or_measure_all`,
``clnn capabilities --devices A,B``; the runtime does so for the OpenCL devices of a
compilation whose figures are not cached): each round samples every device and then the
reference, so every device's figures are ratios to the same reference samples and two devices
compare round by round under the same load. A measurement takes seconds, bounded by the
rounds' time limit above (the record keeps ``measure_seconds``).

On PoCL a sub-device (``opencl:P:D/N``) need not be slower than its parent: PoCL's pthread
driver runs a sub-device's work-groups on all its worker threads, whatever the partition, and
on a machine whose cores other processes occupy a device's extra threads bring nothing; the
figures say what is measured (``clnn capabilities --devices opencl:0:0,opencl:0:0/1``).

Scalar types take the figure of their tensor type (they are parameters of the same
operations). Types without a workload are those no OpenCL kernel takes (OEM, ...): they get
FLT_MAX, as NNAPI asks for types a driver cannot run.

``power_usage`` is an estimate, not a measurement: both devices run on the same CPU cores
(PoCL's pthread device and NumPy/OpenBLAS), so at equal package power the energy ratio equals
the time ratio; power_usage = exec_time. The method is recorded in the JSON.

Results are cached as JSON under the device's cache directory (``DeviceOptions.cache_dir``,
``$CLNN_CACHE_DIR`` at the entry points; default ``~/.cache/clnn``) in
``capabilities/<key>.json``, the key hashing (platform, device, driver version, clnn version,
and whether unsupported operations fall back to the reference inside the prepared model):
measured once per such combination; a record of an older format (``SCHEMA``) is remeasured. A
first measurement shows a tqdm progress bar.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import statistics
import time
from pathlib import Path

from clnn import paths
from clnn.capabilities_workloads import (
    block,
    bool_chain,
    if_model,
    int32_chain,
    symm_chain,
    while_model,
)
from hal import __version__
from hal.builder import make_request
from hal.types import (
    FLT_MAX,
    Capabilities,
    OperandPerformance,
    OperandType,
    PerformanceInfo,
)

OT = OperandType
#: the record format; a cached record of another schema is measured again
SCHEMA = 3
METHOD = {
    "exec_time": "median execution time on the OpenCL device / median on the reference "
                 "(NumPy) device, same workload, same process",
    "power_usage": "estimated = exec_time ratio: both devices run on the same CPU cores, "
                   "equal power assumed",
}
#: scalar operand types -> the tensor type whose figure they take
SCALAR_OF = {OT.FLOAT32: OT.TENSOR_FLOAT32, OT.INT32: OT.TENSOR_INT32,
             OT.UINT32: OT.TENSOR_INT32, OT.BOOL: OT.TENSOR_BOOL8,
             OT.FLOAT16: OT.TENSOR_FLOAT16}
#: rounds (samples per workload and device), executions per sample; quick: tests
ROUNDS, QUICK_ROUNDS, MIN_ROUNDS = 5, 3, 3
#: executions per sample: enough for SAMPLE_SECONDS, within [MIN_EXECUTIONS, MAX_EXECUTIONS]
SAMPLE_SECONDS, MIN_EXECUTIONS, MAX_EXECUTIONS = 0.02, 3, 50
#: rounds after MIN_ROUNDS stop once a measurement has taken this long (bounded on a miss)
MAX_MEASURE_SECONDS = 60.0
#: a workload whose samples spread more than this (max - min over median) is flagged unstable
UNSTABLE_SPREAD = 0.20
#: the float and quant8 workloads: a conv and BLOCK_DEPTH MobileNet blocks (13 operations: long
#: enough a run of launches for a device that runs a model's launches as one chain to do so)
BLOCK_DEPTH = 4
#: measurements of a workload at most (the first, and remeasures of one that spread too much)
ATTEMPTS = 3


# ----------------------------------------------------------------- workloads

def workloads(quick: bool = False) -> dict:
    return workloads_all(quick)


def workloads_all(quick: bool = False) -> dict:
    """name -> (builder function); quick: small shapes (tests)."""
    s, e = (16, 32) if quick else (112, 512)
    depth = 1 if quick else BLOCK_DEPTH
    return {
        "TENSOR_FLOAT32": lambda: block("TENSOR_FLOAT32", s, depth=depth),
        "TENSOR_FLOAT16": lambda: block("TENSOR_FLOAT16", s, depth=depth),
        "relaxed": lambda: block("TENSOR_FLOAT32", s, relaxed=True, depth=depth),
        "TENSOR_QUANT8_ASYMM": lambda: block("TENSOR_QUANT8_ASYMM", s, quant=False,
                                             depth=depth),
        "TENSOR_QUANT8_ASYMM_SIGNED": lambda: block("TENSOR_QUANT8_ASYMM_SIGNED", s,
                                                     quant=True, depth=depth),
        "TENSOR_QUANT8_SYMM_PER_CHANNEL": lambda: block("TENSOR_QUANT8_ASYMM_SIGNED", s,
                                                         quant=True, per_channel=True,
                                                         depth=depth),
        "TENSOR_INT32": lambda: int32_chain(e),
        "TENSOR_BOOL8": lambda: bool_chain(e),
        "TENSOR_QUANT16_SYMM": lambda: symm_chain("TENSOR_QUANT16_SYMM", e),
        "TENSOR_QUANT16_ASYMM": lambda: symm_chain("TENSOR_QUANT16_ASYMM", e),
        "TENSOR_QUANT8_SYMM": lambda: symm_chain("TENSOR_QUANT8_SYMM", e),
        "IF": lambda: if_model(e),
        "WHILE": lambda: while_model(e),
    }


# ----------------------------------------------------------------- measuring

def _prepare(device, model):
    """(prepared model, operations the device runs itself)."""
    try:
        on_device = sum(device.get_supported_operations(model))
    except Exception:
        on_device = -1
    return device.prepare_model(model), on_device


def _sample(prepared, model, inputs, executions: int) -> float:
    """Median seconds of ``executions`` back-to-back runs (one sample): the median, not the
    mean, so one run preempted by another process does not move the sample."""
    from hal.errors import ErrorStatus

    times = []
    for _ in range(executions):
        req = make_request(model, inputs)
        t0 = time.perf_counter()
        r = prepared.execute_synchronously(req)
        times.append(time.perf_counter() - t0)
        if r.status != ErrorStatus.NONE:
            raise RuntimeError(f"execution failed: {r.status.name} {r.message}")
    return statistics.median(times)


def _executions(seconds_per_run: float) -> int:
    return max(MIN_EXECUTIONS, min(MAX_EXECUTIONS, math.ceil(SAMPLE_SECONDS / seconds_per_run)))


def spread(values: list[float]) -> dict:
    """median, min, max and relative spread ((max - min) / median) of a list of samples."""
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return {"median": med, "min": lo, "max": hi, "samples": len(values),
            "relative_spread": (hi - lo) / med if med > 0 else 0.0}


def is_unstable(workload: dict, threshold: float = UNSTABLE_SPREAD) -> bool:
    """A workload whose per-round ratio spreads more than ``threshold`` (max - min over the
    median) across rounds: its figure is not to be trusted. The ratio, not each device's time,
    is judged: load that slows both sides of one round alike does not change the figure."""
    r = workload.get("ratio_spread")
    return r is not None and r["relative_spread"] > threshold


def identity(device) -> dict:
    p, d = device.platform, device.cl_device
    ident = {"platform": f"{p.name.strip()} {p.version.strip()}", "device": d.name.strip(),
             "driver_version": d.driver_version.strip(), "clnn_version": __version__,
             # without fallback, operations no kernel takes cannot run at all
             "fallback": bool(getattr(device, "fallback", True))}
    units = getattr(device, "sub_device_units", None)
    if units is not None:  # a sub-device has its parent's name, not its speed
        ident["sub_device_compute_units"] = units
    return ident


def machine() -> dict:
    """The host the figures were measured on (they hold for it only)."""
    return {"node": platform.node(), "system": f"{platform.system()} {platform.release()}",
            "machine": platform.machine(), "processor": platform.processor(),
            "cpu_count": os.cpu_count(), "python": platform.python_version()}


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):  # not on every OS
        return None


def cache_path(device) -> Path:
    ident = identity(device)
    key = hashlib.sha1(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]
    root = getattr(getattr(device, "options", None), "cache_dir", None)
    return paths.cache_dir("capabilities", root=root) / f"{key}.json"


def _bar(total: int, progress: bool):
    if not progress:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="measuring clnn capabilities", unit="round")


def _setup(devices, ref, build, executions, quick=False):
    """(model, inputs, [prepared per device..., reference], [executions per side], the
    operations each device runs in its kernels) of one workload, warmed up."""
    model, inputs = build()
    preps, on_cl = [], []
    for device in devices:
        p, n_ops = _prepare(device, model)
        preps.append(p)
        on_cl.append(n_ops)
    preps.append(_prepare(ref, model)[0])
    for p in preps:  # warm-up: first-run compilation, allocation; then the steady state:
        _sample(p, model, inputs, 1)  # the chains a device runs a plan as, built now
        wait = getattr(p, "wait_chains", None)
        if wait is not None and not quick:
            wait()
            _sample(p, model, inputs, 1)
    if executions:
        counts = [executions] * len(preps)
    else:  # each side's sample lasts at least SAMPLE_SECONDS: one sub-millisecond run is
        # mostly timer and scheduler noise
        # mostly timer and scheduler noise. A run's time is the fastest of three: a run the
        # scheduler interrupted is slower, never faster (a slow one gave 3 executions a sample)
        counts = [_executions(min(_sample(p, model, inputs, 1) for _ in range(3)))
                  for p in preps]
    return model, inputs, preps, counts, on_cl


def _round(live, name, k: int = 0):
    """Round ``k`` of a workload: a sample on every device, then on the reference, in turn (a
    burst of load on the machine hits every side of the round). The devices take turns at
    going first (round k starts with device k mod n): the side that follows the reference
    (the previous workload's) shares the CPU with the reference's BLAS threads winding down,
    and no device is to bear it alone."""
    model, inputs, preps, counts, _ = live[name]
    n = len(preps) - 1
    out = [0.0] * len(preps)
    for d in [(k + j) % n for j in range(n)] + [n]:
        out[d] = _sample(preps[d], model, inputs, counts[d])
    return out


def _worst_spread(rounds_of: list[list[float]]) -> float:
    """The largest relative spread, over the devices, of the per-round ratio device /
    reference (rounds_of: per round, the samples of every device and then the reference)."""
    worst = 0.0
    for d in range(len(rounds_of[0]) - 1):
        worst = max(worst, spread([r[d] / r[-1] for r in rounds_of])["relative_spread"])
    return worst


def measure(device, quick: bool = False, progress: bool = True, rounds: int | None = None,
            executions: int | None = None) -> dict:
    """The JSON record of ``device`` (see :func:`measure_devices`)."""
    return measure_devices([device], quick, progress, rounds, executions)[0]


def measure_devices(devices, quick: bool = False, progress: bool = True,
                    rounds: int | None = None, executions: int | None = None) -> list[dict]:
    """Measure every workload on each of ``devices`` and on the reference device, in one
    interleaved run; a JSON record per device, all ratios to the same reference samples (so
    two devices measured together compare round by round, under the same load).

    Each workload is prepared once per device and warmed up; then ``rounds`` rounds run, and in
    each round every workload takes one sample on every device and then one on the reference
    (so a burst of load on the machine hits every side, not one). A sample is the median of
    ``executions`` runs (default: enough for SAMPLE_SECONDS on that side). Rounds beyond the
    third stop once MAX_MEASURE_SECONDS have passed, which bounds a measurement on a slow or
    busy machine. A workload whose per-round ratio spreads over UNSTABLE_SPREAD is then
    rejected and measured again (up to ATTEMPTS times in all, not in quick mode, within the
    time bound); the steadiest measurement is kept, the attempts recorded."""
    from hal.reference import ReferenceDevice

    devices = list(devices)
    rounds = rounds or (QUICK_ROUNDS if quick else ROUNDS)
    executions = executions or (1 if quick else None)
    ref = ReferenceDevice()
    t_start = time.perf_counter()
    deadline = t_start + MAX_MEASURE_SECONDS
    load_before = _loadavg()
    errors: dict = {}
    live: dict = {}
    for name, build in workloads(quick).items():
        try:
            live[name] = _setup(devices, ref, build, executions, quick)
        except Exception as e:  # a workload that cannot run: the type gets FLT_MAX
            errors[name] = f"{type(e).__name__}: {e}"
    samples = {name: [] for name in live}
    bar = _bar(rounds, progress)
    done = _run_rounds(live, samples, errors, rounds, deadline, bar)
    attempts = {name: 1 for name in live}
    for _ in range(0 if quick else ATTEMPTS - 1):
        _remeasure(live, samples, errors, attempts, rounds, deadline)
    if bar is not None:
        bar.close()
    conditions = {"rounds": done, "executions_per_sample": executions or
                  f"adaptive: {MIN_EXECUTIONS}-{MAX_EXECUTIONS}, at least "
                  f"{SAMPLE_SECONDS * 1e3:.0f} ms on each side",
                  "interleaved": True, "loadavg_before": load_before,
                  "loadavg_after": _loadavg(), "machine": machine(),
                  "unstable_threshold": UNSTABLE_SPREAD, "attempts_at_most": ATTEMPTS,
                  "measured_together": [identity(d) for d in devices],
                  "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    return [_record(d, devices[d], live, samples, errors, attempts, quick, conditions,
                    time.perf_counter() - t_start) for d in range(len(devices))]


def _run_rounds(live, samples, errors, rounds, deadline, bar=None, names=None) -> int:
    """Rounds over the workloads ``names`` (default: all live ones); the rounds made."""
    done = 0
    for k in range(rounds):
        if k >= MIN_ROUNDS and time.perf_counter() > deadline:
            break
        for name in list(names or live):
            if name not in live:
                continue
            try:
                samples[name].append(_round(live, name, len(samples[name])))
            except Exception as e:
                errors[name] = f"{type(e).__name__}: {e}"
                del live[name]
        done += 1
        if bar is not None:
            bar.update(1)
    return done


def _remeasure(live, samples, errors, attempts, rounds, deadline):
    """Measure again the workloads whose ratio spreads too much; keep the steadier."""
    bad = [n for n in live if samples[n] and _worst_spread(samples[n]) > UNSTABLE_SPREAD]
    if not bad or time.perf_counter() > deadline:
        return
    fresh = {n: [] for n in bad}
    _run_rounds(live, fresh, errors, rounds, deadline, names=bad)
    for n in bad:
        if n in live:
            attempts[n] += 1
            if len(fresh[n]) >= MIN_ROUNDS and \
                    _worst_spread(fresh[n]) < _worst_spread(samples[n]):
                samples[n] = fresh[n]


def _record(d: int, device, live, samples, errors, attempts, quick, conditions,
            seconds) -> dict:
    results: dict = {}
    for name in workloads(quick):
        if name in errors or name not in live:
            results[name] = {"error": errors.get(name, "not measured")}
            continue
        model, _, _, counts, on_cl = live[name]
        rows = samples[name]
        w = results[name] = {
            "opencl_s": [r[d] for r in rows], "reference_s": [r[-1] for r in rows],
            "executions_per_sample": counts[d], "reference_executions_per_sample": counts[-1],
            "operations": len(model.main.operations),
            "operations_in_opencl_kernels": on_cl[d], "attempts": attempts[name]}
        w["opencl"], w["reference"] = spread(w["opencl_s"]), spread(w["reference_s"])
        w["ratio_s"] = [c / r for c, r in zip(w["opencl_s"], w["reference_s"])]
        w["ratio_spread"] = spread(w["ratio_s"])
        # the figure: ratio of the medians (robust to one slow sample on either side)
        w["ratio"] = w["opencl"]["median"] / w["reference"]["median"]
        w["unstable"] = is_unstable(w)
    return {"schema": SCHEMA, "identity": identity(device), "quick": quick,
            "measured_at": conditions["finished_at"], "measure_seconds": seconds,
            "method": METHOD, "conditions": conditions,
            "workloads": results}


def _cached(device) -> dict | None:
    path = cache_path(device)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if record.get("schema") == SCHEMA and record.get("identity") == identity(device):
        record["cached"] = str(path)
        return record
    return None


def _save(device, record: dict) -> None:
    path = cache_path(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(path)
    record["cached"] = None


def load_or_measure(device, remeasure: bool = False, quick: bool = False,
                    progress: bool = True) -> dict:
    """The cached record, or a new measurement (saved). A record of another schema (an older
    clnn's format) or identity is measured again."""
    record = None if remeasure else _cached(device)
    if record is not None:
        return record
    record = measure(device, quick=quick, progress=progress)
    _save(device, record)
    return record


def load_or_measure_all(devices, remeasure: bool = False, quick: bool = False,
                        progress: bool = True) -> list[dict]:
    """A record per device: the cached ones, and the others measured together in one
    interleaved run (:func:`measure_devices`: the same reference samples, round by round) and
    saved."""
    devices = list(devices)
    records = [None if remeasure else _cached(d) for d in devices]
    todo = [k for k, r in enumerate(records) if r is None]
    if todo:
        fresh = measure_devices([devices[k] for k in todo], quick=quick, progress=progress)
        for k, record in zip(todo, fresh):
            _save(devices[k], record)
            records[k] = record
    return records


def _info(record: dict, name: str) -> PerformanceInfo:
    w = record["workloads"].get(name) or {}
    if "ratio" not in w:
        return PerformanceInfo(FLT_MAX, FLT_MAX)
    r = float(w["ratio"])
    return PerformanceInfo(r, r)


def to_capabilities(record: dict) -> Capabilities:
    relaxed = _info(record, "relaxed")
    perf = []
    for t in OperandType:
        if t == OT.SUBGRAPH:
            continue
        perf.append(OperandPerformance(t, _info(record, SCALAR_OF.get(t, t).name)))
    return Capabilities(relaxed, relaxed, perf, _info(record, "IF"), _info(record, "WHILE"))
