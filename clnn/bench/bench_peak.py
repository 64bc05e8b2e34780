"""``clnn bench peak``: the device's roofline, FMA throughput and memory bandwidth, as clpeak
measures them (templates/peak.cl.mako).

FMA: float32 multiply-adds over vectors of width 1..16 with independent chains; the best
width's figure is the peak (GFLOP/s, 2 FLOP per multiply-add). Bandwidth: a copy kernel over
a buffer far larger than the caches (GB/s of bytes read + written). Times are kernel-only,
from OpenCL profiling events; the best of a few repetitions (a peak: the fastest the device
went), with the median beside it. The result is cached per device identity (platform, device,
driver: clnn/tuning.py) under ``<cache dir>/peak``; ``clnn run --profile`` reads it to show
each operation's fraction of the peak.
"""

from __future__ import annotations

import json
import os
import statistics

from clnn import paths
from clnn.options import options_of
from clnn.tuning import device_identity, identity_hash

SCHEMA = 1
#: vector widths tried for the FMA peak; chains per work-item
FMA_WIDTHS = (1, 4, 8, 16)
FMA_CHAINS = 8
FMA_ITERS = 256
#: bytes of the copy source (and destination), capped by the device's allocation limit
COPY_BYTES = 64 << 20


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def _timed(q, kernel, gsize, lsize, reps: int) -> list[float]:
    import pyopencl as cl

    cl.enqueue_nd_range_kernel(q, kernel, gsize, lsize).wait()  # warm
    out = []
    for _ in range(reps):
        ev = cl.enqueue_nd_range_kernel(q, kernel, gsize, lsize)
        ev.wait()
        out.append((ev.profile.end - ev.profile.start) * 1e-9)
    return out


def measure_fma(device, reps: int = 5) -> dict:
    """GFLOP/s per vector width and the best."""
    import numpy as np
    import pyopencl as cl

    d = device.cl_device
    q = device.timing_queue()
    # enough work-items to fill every compute unit many times over
    n = max(1024, int(d.max_compute_units) * 256)
    out = cl.Buffer(device.context, cl.mem_flags.WRITE_ONLY, n * 4)
    per_width = {}
    for vw in FMA_WIDTHS:
        k = cl.Kernel(device.programs.program("peak", "peak_fma", {"vw": vw, "chains": FMA_CHAINS}),
                      "peak_fma")
        iters = max(8, FMA_ITERS * 16 // vw)
        k.set_args(out, np.float32(0.999), np.int32(iters))
        flop = 2.0 * vw * FMA_CHAINS * 8 * iters * n
        ts = _timed(q, k, (n,), None, reps)
        per_width[vw] = {"gflops_best": flop / min(ts) / 1e9,
                         "gflops_median": flop / statistics.median(ts) / 1e9}
    best = max(per_width, key=lambda w: per_width[w]["gflops_best"])
    return {"gflops": per_width[best]["gflops_best"], "best_width": best,
            "per_width": {str(w): v for w, v in per_width.items()}}


def measure_bandwidth(device, reps: int = 5) -> dict:
    """GB/s of a float4 copy (bytes read + written)."""
    import pyopencl as cl

    d = device.cl_device
    q = device.timing_queue()
    size = min(COPY_BYTES, int(d.max_mem_alloc_size) // 2)
    size -= size % 16
    src = cl.Buffer(device.context, cl.mem_flags.READ_ONLY, size)
    dst = cl.Buffer(device.context, cl.mem_flags.WRITE_ONLY, size)
    cl.enqueue_fill_buffer(q, src, b"\0\0\0\0", 0, size)
    k = cl.Kernel(device.programs.program("peak", "peak_copy", {"vw": 4}), "peak_copy")
    k.set_args(src, dst)
    ts = _timed(q, k, (size // 16,), None, reps)
    return {"gbs": 2.0 * size / min(ts) / 1e9, "gbs_median": 2.0 * size / statistics.median(ts)
            / 1e9, "bytes": size}


def cache_file(device):
    ident = device_identity(device.platform, device.cl_device)
    root = options_of(device).cache_dir  # (the options the entry point read)
    return paths.cache_dir("peak", root=root) / f"{identity_hash(ident)}.json", ident


def measure_peak(device, reps: int = 5) -> dict:
    """Both figures, with the identity and load average they were measured under."""
    _, ident = cache_file(device)
    return {"schema": SCHEMA, "identity": ident, "load_average": _load(),
            "fma": measure_fma(device, reps), "bandwidth": measure_bandwidth(device, reps)}


def load_peak(device) -> dict | None:
    """The cached record of this device identity, else None."""
    path, ident = cache_file(device)
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if isinstance(rec, dict) and rec.get("schema") == SCHEMA and rec.get("identity") == ident:
        return rec
    return None


def save_peak(device, rec: dict):
    path, _ = cache_file(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(rec, indent=1))
    os.replace(tmp, path)


def load_or_measure_peak(device, remeasure: bool = False) -> dict:
    rec = None if remeasure else load_peak(device)
    if rec is None:
        rec = measure_peak(device)
        save_peak(device, rec)
        rec["cached"] = False
    else:
        rec["cached"] = True
    return rec


def peak_figures(rec: dict) -> tuple[float, float]:
    """(GFLOP/s, GB/s) of a peak record."""
    return float(rec["fma"]["gflops"]), float(rec["bandwidth"]["gbs"])


def format_peak(rec: dict, device_name: str) -> str:
    f, b = rec["fma"], rec["bandwidth"]
    widths = ", ".join(f"float{w if w != '1' else ''} {v['gflops_best']:.1f}"
                       for w, v in f["per_width"].items())
    la = rec.get("load_average")
    return "\n".join([
        f"peak of {device_name} ({'cached' if rec.get('cached') else 'measured now'}; "
        f"load average when measured {la})",
        f"  FMA float32:      {f['gflops']:.1f} GFLOP/s (vector width {f['best_width']}; "
        f"{widths})",
        f"  memory bandwidth: {b['gbs']:.1f} GB/s (copy of {b['bytes'] >> 20} MiB; median "
        f"{b['gbs_median']:.1f})",
        f"  ridge point:      {f['gflops'] / b['gbs']:.1f} FLOP/byte"])


def run_peak_bench(as_json: bool = False, remeasure: bool = False) -> int:
    from clnn.devices import open_cl_device

    dev = open_cl_device(profiling=True)
    rec = load_or_measure_peak(dev, remeasure=remeasure)
    if as_json:
        print(json.dumps(rec, indent=1))
    else:
        print(format_peak(rec, dev.name))
    return 0
