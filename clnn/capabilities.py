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
third stop after 60 s), each round taking one OpenCL and one reference sample of every
workload in turn, a sample being the median of 3 to 50 executions (at least 20 ms; quick:
1). The record keeps every sample, the median / min / max / relative spread per device and
of the per-round ratio, and flags a workload whose ratio spreads over 20% as unstable; it
also records when (date, clnn version) and how (rounds, executions per sample, load average,
the machine) it was measured.

Scalar types take the figure of their tensor type (they are parameters of the same
operations). Types without a workload are those no OpenCL kernel takes (OEM, ...): they get
FLT_MAX, as NNAPI asks for types a driver cannot run.

``power_usage`` is an estimate, not a measurement: both devices run on the same CPU cores
(PoCL's pthread device and NumPy/OpenBLAS), so at equal package power the energy ratio equals
the time ratio; power_usage = exec_time. The method is recorded in the JSON.

Results are cached as JSON in ``$CLNN_CACHE_DIR`` (default ``~/.cache/clnn``) under
``capabilities/<key>.json``, the key hashing (platform, device, driver version, clnn version,
and whether unsupported operations fall back to the reference inside the prepared model):
measured once per such combination; a record of an older format (``SCHEMA``) is remeasured. A first
measurement takes well under a minute and shows a tqdm progress bar.
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
SCHEMA = 2
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


# ----------------------------------------------------------------- workloads

def workloads(quick: bool = False) -> dict:
    return workloads_all(quick)


def workloads_all(quick: bool = False) -> dict:
    """name -> (builder function); quick: small shapes (tests)."""
    s, e = (16, 32) if quick else (112, 512)
    return {
        "TENSOR_FLOAT32": lambda: block("TENSOR_FLOAT32", s),
        "TENSOR_FLOAT16": lambda: block("TENSOR_FLOAT16", s),
        "relaxed": lambda: block("TENSOR_FLOAT32", s, relaxed=True),
        "TENSOR_QUANT8_ASYMM": lambda: block("TENSOR_QUANT8_ASYMM", s, quant=False),
        "TENSOR_QUANT8_ASYMM_SIGNED": lambda: block("TENSOR_QUANT8_ASYMM_SIGNED", s,
                                                     quant=True),
        "TENSOR_QUANT8_SYMM_PER_CHANNEL": lambda: block("TENSOR_QUANT8_ASYMM_SIGNED", s,
                                                         quant=True, per_channel=True),
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
    return paths.cache_dir("capabilities") / f"{key}.json"


def measure(device, quick: bool = False, progress: bool = True, rounds: int | None = None,
            executions: int | None = None) -> dict:
    """Measure every workload on ``device`` and the reference device; the JSON record.

    Each workload is prepared once per device and warmed up; then ``rounds`` rounds run, and in
    each round every workload takes one OpenCL sample and one reference sample in turn (so a
    burst of load on the machine hits both sides, not one). A sample is the median of
    ``executions`` runs (default: enough for SAMPLE_SECONDS on the faster device). Rounds
    beyond the third stop once MAX_MEASURE_SECONDS have passed, which bounds a measurement on a
    slow or busy machine."""
    from hal.reference import ReferenceDevice

    rounds = rounds or (QUICK_ROUNDS if quick else ROUNDS)
    executions = executions or (1 if quick else None)
    ref = ReferenceDevice()
    t_start = time.perf_counter()
    load_before = _loadavg()
    bar = None
    if progress:
        try:
            from tqdm import tqdm

            bar = tqdm(total=rounds, desc="measuring clnn capabilities", unit="round")
        except ImportError:
            bar = None
    results: dict = {}
    live: dict = {}
    for name, build in workloads(quick).items():
        try:
            model, inputs = build()
            cl_p, on_cl = _prepare(device, model)
            ref_p, _ = _prepare(ref, model)
            _sample(cl_p, model, inputs, 1)  # warm-up: first-run compilation, allocation
            _sample(ref_p, model, inputs, 1)
            # a sample lasts at least SAMPLE_SECONDS on the faster side: a sample of one
            # sub-millisecond run is mostly timer and scheduler noise
            n = executions or _executions(min(_sample(cl_p, model, inputs, 1),
                                              _sample(ref_p, model, inputs, 1)))
            live[name] = (model, inputs, cl_p, ref_p, n)
            results[name] = {"opencl_s": [], "reference_s": [], "executions_per_sample": n,
                             "operations": len(model.main.operations),
                             "operations_in_opencl_kernels": on_cl}
        except Exception as e:  # a workload that cannot run: the type gets FLT_MAX
            results[name] = {"error": f"{type(e).__name__}: {e}"}
    done = 0
    for k in range(rounds):
        if k >= MIN_ROUNDS and time.perf_counter() - t_start > MAX_MEASURE_SECONDS:
            break
        for name, (model, inputs, cl_p, ref_p, n) in list(live.items()):
            try:
                results[name]["opencl_s"].append(_sample(cl_p, model, inputs, n))
                results[name]["reference_s"].append(_sample(ref_p, model, inputs, n))
            except Exception as e:
                results[name] = {"error": f"{type(e).__name__}: {e}"}
                del live[name]
        done += 1
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    for name in live:
        w = results[name]
        w["opencl"], w["reference"] = spread(w["opencl_s"]), spread(w["reference_s"])
        w["ratio_s"] = [c / r for c, r in zip(w["opencl_s"], w["reference_s"])]
        w["ratio_spread"] = spread(w["ratio_s"])
        # the figure: ratio of the medians (robust to one slow sample on either side)
        w["ratio"] = w["opencl"]["median"] / w["reference"]["median"]
        w["unstable"] = is_unstable(w)
    return {"schema": SCHEMA, "identity": identity(device), "quick": quick,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "measure_seconds": time.perf_counter() - t_start, "method": METHOD,
            "conditions": {"rounds": done, "executions_per_sample": executions or
                           f"adaptive: {MIN_EXECUTIONS}-{MAX_EXECUTIONS}, at least "
                           f"{SAMPLE_SECONDS * 1e3:.0f} ms on the faster device",
                           "interleaved": True, "loadavg_before": load_before,
                           "loadavg_after": _loadavg(), "machine": machine(),
                           "unstable_threshold": UNSTABLE_SPREAD},
            "workloads": results}


def load_or_measure(device, remeasure: bool = False, quick: bool = False,
                    progress: bool = True) -> dict:
    """The cached record, or a new measurement (saved). A record of another schema (an older
    clnn's format) or identity is measured again."""
    path = cache_path(device)
    if not remeasure and path.exists():
        try:
            record = json.loads(path.read_text())
            if record.get("schema") == SCHEMA and record.get("identity") == identity(device):
                record["cached"] = str(path)
                return record
        except (OSError, ValueError):
            pass
    record = measure(device, quick=quick, progress=progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(path)
    record["cached"] = None
    return record


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
