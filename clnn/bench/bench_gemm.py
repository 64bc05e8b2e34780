"""``clnn bench gemm``: SGEMM n x n x n through the clnn GEMM kernel vs NumPy, in one run.

The clnn figure times the kernel every CONV_2D / FULLY_CONNECTED / BATCH_MATMUL plan launches
(templates/gemm.cl.mako): A row-major as an activation tensor is, B packed once as weights are
at prepare; enqueue + finish per repetition. A second figure includes packing B on the device
(the BATCH_MATMUL path, where B is not a constant).

The NumPy figure runs in a subprocess whose environment lacks OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE (set on some of these machines, they halve OpenBLAS), and reports the
OpenBLAS kernel it ran (threadpoolctl when installed, else the library's own
openblas_get_corename through ctypes, else numpy.show_config).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

_BLAS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

_NUMPY_CHILD = r"""
import json, sys, time
import numpy as np
n, reps = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n), dtype=np.float32)
b = rng.standard_normal((n, n), dtype=np.float32)
for _ in range(3):
    a @ b
ts = []
for _ in range(reps):
    t = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t)
info = {}
try:
    from threadpoolctl import threadpool_info
    info = [d for d in threadpool_info() if d.get("internal_api") == "openblas"][0]
    info = {"kernel": info.get("architecture"), "threads": info.get("num_threads"),
            "version": info.get("version"), "source": "threadpoolctl"}
except Exception:
    import ctypes
    libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "openblas" in l.lower()})
    for path in libs:
        lib = ctypes.CDLL(path)
        for pre in ("scipy_", ""):
            for suf in ("64_", ""):
                f = getattr(lib, pre + "openblas_get_corename" + suf, None)
                if f is None:
                    continue
                f.restype = ctypes.c_char_p
                g = getattr(lib, pre + "openblas_get_config" + suf, None)
                if g is not None:
                    g.restype = ctypes.c_char_p
                info = {"kernel": f().decode(), "config": g().decode() if g else None,
                        "library": path, "source": "openblas_get_corename (ctypes)"}
                break
            if info:
                break
        if info:
            break
    if not info:
        import io, contextlib
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            np.show_config()
        info = {"kernel": None, "show_config": buf.getvalue()[:2000],
                "source": "numpy.show_config"}
print(json.dumps({"times": ts, "blas": info, "numpy": np.__version__}))
"""


def _stats(times: list[float], flops: float) -> dict:
    g = sorted(flops / t / 1e9 for t in times)
    q = statistics.quantiles(g, n=4) if len(g) >= 4 else [g[0], g[len(g) // 2], g[-1]]
    return {"times_s": list(times),
            "gflops_median": statistics.median(g), "gflops_min": g[0], "gflops_max": g[-1],
            "gflops_iqr": [q[0], q[-1]], "seconds_median": statistics.median(times),
            "repetitions": len(times)}


def numpy_gemm(n: int, reps: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _BLAS_ENV}
    out = subprocess.run([sys.executable, "-c", _NUMPY_CHILD, str(n), str(reps)], env=env,
                         capture_output=True, text=True, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    res = _stats(data["times"], 2.0 * n ** 3)
    res.update(blas=data["blas"], numpy=data["numpy"],
               env_removed=[k for k in _BLAS_ENV if k in os.environ])
    return res


class _DirectBuilder:
    """Just enough of clnn.launch.LaunchBuilder to run the GEMM launches by hand."""

    def __init__(self, device):
        self.device = device
        self.launches = []
        # no fusions: the kernels read these as LaunchBuilder's
        self.input_pad = self.residual = self.activation = self.depthwise = None
        self.input_layout = None

    def launch(self, family, name, params, global_size, args, local_size=None,
               flexible=False):
        import pyopencl as cl

        from clnn.workgroups import work_groups

        kernel = cl.Kernel(self.device.programs.program(family, name, params), name)
        kernel.set_args(*args)
        gs = tuple(int(g) for g in global_size)
        # an n^3 GEMM is heavy: grouped as in a model
        self.launches.append((kernel, gs, work_groups(kernel, self.device.limits, name, gs,
                                                      local_size, True, flexible)))


def clnn_gemm(n: int, reps: int, tile=None, device=None) -> dict:
    import pyopencl as cl

    from clnn.devices import open_cl_device
    from clnn.kernels import _gemm, _gemm_variants

    dev = device or open_cl_device()
    q, ctx = dev.queue, dev.context
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    bm = rng.standard_normal((n, n), dtype=np.float32)
    if tile is None:  # the device's heuristic tile (its vector width; a GPU's own tiles)
        tile = _gemm_variants.heuristic(_gemm_variants.traits(dev.limits), n, n, n)["tile"]
    tile = tuple(tile)
    mf = cl.mem_flags
    a_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    braw = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=bm)
    c = np.empty((n, n), np.float32)
    c_buf = cl.Buffer(ctx, mf.READ_WRITE, c.nbytes)
    b = _DirectBuilder(dev)
    bpk = _gemm.device_buffer(b, _gemm.pack_weights(bm[None], tile[1] * tile[2], False))
    _gemm.launch_gemm(b, dt="f32", a=a_buf, bpk=bpk, c=c_buf, M=n, N=n, K=n, tile=tile,
                      sam=n, sak=1)
    nr = tile[1] * tile[2]
    packed, _ = _gemm.launch_pack_b(b, dt="f32", y=braw, N=n, K=n, nr=nr, sk=n, sn=1)
    _gemm.launch_gemm(b, dt="f32", a=a_buf, bpk=packed, c=c_buf, M=n, N=n, K=n, tile=tile,
                      sam=n, sak=1)
    (gemm_k, gs, ls), (pack_k, ps, _), (gemm2_k, _, _) = b.launches

    def timed(kernels):
        for k, size, lsz in kernels:
            cl.enqueue_nd_range_kernel(q, k, size, lsz)
        q.finish()
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            for k, size, lsz in kernels:
                cl.enqueue_nd_range_kernel(q, k, size, lsz)
            q.finish()
            ts.append(time.perf_counter() - t)
        return ts

    t_kernel = timed([(gemm_k, gs, ls)])
    cl.enqueue_copy(q, c, c_buf)
    q.finish()
    ref = a.astype(np.float64) @ bm.astype(np.float64)
    t_pack = timed([(pack_k, ps, None), (gemm2_k, gs, ls)])
    res = _stats(t_kernel, 2.0 * n ** 3)
    res.update(tile={"mr": tile[0], "nv": tile[1], "vw": tile[2]},
               with_device_packing=_stats(t_pack, 2.0 * n ** 3),
               max_error_vs_float64=float(np.max(np.abs(c - ref))),
               relative_error=float(np.max(np.abs(c - ref)) / np.max(np.abs(ref))),
               device=dev.get_version_string())
    return res


def run_gemm_bench(n: int = 1024, reps: int = 10, as_json: bool = False,
                   sweep: bool = False) -> int:
    from clnn.devices import open_cl_device

    dev = open_cl_device()
    # alternate rounds of both, so that a change in the machine's load hits both figures
    rounds = 3 if reps >= 6 else 1
    per = max(reps // rounds, 1)
    cl_runs, np_runs = [], []
    for _ in range(rounds):
        cl_runs.append(clnn_gemm(n, per, device=dev))
        np_runs.append(numpy_gemm(n, per))
    flops = 2.0 * n ** 3
    cl_r = dict(cl_runs[-1])
    cl_r.update(_stats([t for r in cl_runs for t in r["times_s"]], flops))
    cl_r["with_device_packing"] = _stats([t for r in cl_runs for t in
                                          r["with_device_packing"]["times_s"]], flops)
    np_r = dict(np_runs[-1])
    np_r.update(_stats([t for r in np_runs for t in r["times_s"]], flops))
    result = {"n": n, "rounds": rounds, "clnn": cl_r, "numpy": np_r}
    result["ratio_clnn_over_numpy"] = (result["clnn"]["gflops_median"] /
                                       result["numpy"]["gflops_median"])
    if sweep:
        result["sweep"] = []
        from clnn.kernels import _gemm_variants

        cpu = _gemm_variants.traits(dev.limits).cpu  # the tuner's tiles for the device
        for tile in (_gemm_variants.CPU_TILES if cpu else _gemm_variants.GPU_TILES):
            r = clnn_gemm(n, max(3, reps // 2), tile=tile, device=dev)
            result["sweep"].append({"tile": tile, "gflops_median": r["gflops_median"]})
    if as_json:
        print(json.dumps(result, indent=1))
        return 0
    cl_r, np_r = result["clnn"], result["numpy"]
    print(f"SGEMM {n}x{n}x{n}, {cl_r['repetitions']} repetitions each in {rounds} alternating "
          f"rounds, same run")
    print(f"  clnn  {cl_r['gflops_median']:8.1f} GFLOP/s median  (min {cl_r['gflops_min']:.1f}, "
          f"max {cl_r['gflops_max']:.1f}; tile {cl_r['tile']})  on {cl_r['device']}")
    pk = cl_r["with_device_packing"]
    print(f"        {pk['gflops_median']:8.1f} GFLOP/s median including packing B on the device")
    print(f"  numpy {np_r['gflops_median']:8.1f} GFLOP/s median  (min {np_r['gflops_min']:.1f}, "
          f"max {np_r['gflops_max']:.1f}; numpy {np_r['numpy']}, OpenBLAS kernel "
          f"{np_r['blas'].get('kernel')} via {np_r['blas'].get('source')}; removed from its "
          f"environment: {', '.join(np_r['env_removed']) or 'none were set'})")
    print(f"  ratio clnn / numpy = {result['ratio_clnn_over_numpy']:.2f}")
    for s in result.get("sweep", []):
        print(f"  tile {s['tile']}: {s['gflops_median']:.1f} GFLOP/s")
    return 0
