"""``clnn bench prepare``: cold prepare vs prepare from the compilation cache, in one run.

The demo's MobileNet-style model (clnn.cli.demo) on the OpenCL device, three fresh processes, each
with empty program caches (pyopencl's binary cache and PoCL's kernel cache point into a new
temporary directory, so nothing built by an earlier phase or run is reused):

``cold``  prepare_model without cache files: render and build every program;
``save``  prepare_model with a model-cache and a data-cache file and a token (what a client
          that caches pays once: the cold prepare plus warming the kernels and saving);
``warm``  prepare_model_from_cache with those files.

Each phase also times its first execution and checks the outputs against the reference
device. The speedup is cold prepare time / warm prepare time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

TOKEN = bytes(range(32))


def _phase(phase: str, workdir: str) -> dict:
    import numpy as np

    from clnn.cli.demo import build_model, demo_input
    from clnn.devices import open_cl_device
    from clnn.program_cache import build_stats
    from hal.builder import make_request, read_outputs
    from hal.reference import ReferenceDevice

    t0 = time.perf_counter()
    device = open_cl_device()
    device_s = time.perf_counter() - t0
    # what the first kernel.set_args of a process imports, for every phase alike
    import pyopencl.invoker  # noqa: F401
    model = build_model()
    files = {"model_cache": [os.path.join(workdir, "model.cache")],
             "data_cache": [os.path.join(workdir, "data.cache")], "token": TOKEN}
    t0 = time.perf_counter()
    if phase == "cold":
        prepared = device.prepare_model(model)
    elif phase == "save":
        prepared = device.prepare_model(model, **files)
    else:
        prepared = device.prepare_model_from_cache(**files)
    prepare_s = time.perf_counter() - t0
    x = demo_input()
    req = make_request(model, [x])
    t0 = time.perf_counter()
    r = prepared.execute_synchronously(req)
    first_s = time.perf_counter() - t0
    if r.status != 0:
        return {"phase": phase, "error": f"execution failed: {r.status.name} {r.message}"}
    got = read_outputs(model, req, r.output_shapes)
    ref_req = make_request(model, [x])
    ref = ReferenceDevice().prepare_model(model).execute_synchronously(ref_req)
    want = read_outputs(model, ref_req, ref.output_shapes)
    err = max(float(np.max(np.abs(g.astype(np.float64) - w))) for g, w in zip(got, want))
    stats = build_stats()
    return {"phase": phase, "device_s": device_s, "prepare_s": prepare_s,
            "first_execution_s": first_s, "max_abs_error": err,
            "programs_rendered": stats["rendered"], "programs_built": stats["built"],
            "device": device.name}


def _run_phase(phase: str, workdir: str) -> dict:
    fresh = tempfile.mkdtemp(prefix=f"{phase}-", dir=workdir)
    env = dict(os.environ, CLNN_CACHE_DIR=os.path.join(fresh, "clnn"),
               POCL_CACHE_DIR=os.path.join(fresh, "pocl"))
    proc = subprocess.run([sys.executable, "-m", "clnn.bench.bench_prepare", phase, workdir],
                          env=env, capture_output=True, text=True, timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"phase": phase, "error": (proc.stderr or proc.stdout).strip()[-2000:]}
    return json.loads(lines[-1])


def run_prepare_bench(as_json: bool = False) -> int:
    with tempfile.TemporaryDirectory(prefix="clnn-bench-prepare-") as workdir:
        phases = [_run_phase(p, workdir) for p in ("cold", "save", "warm")]
        sizes = {n: os.path.getsize(os.path.join(workdir, n)) for n in
                 ("model.cache", "data.cache") if os.path.exists(os.path.join(workdir, n))}
    errors = [p for p in phases if "error" in p]
    result = {"model": "clnn demo (MobileNet-style block, input [1, 64, 64, 3])",
              "phases": phases, "cache_bytes": sizes}
    if not errors:
        cold, _, warm = phases
        result["speedup"] = cold["prepare_s"] / warm["prepare_s"]
    if as_json:
        print(json.dumps(result, indent=1))
    else:
        for p in phases:
            if "error" in p:
                print(f"{p['phase']:>5}: failed: {p['error']}")
                continue
            print(f"{p['phase']:>5}: prepare {p['prepare_s'] * 1e3:9.1f} ms, first execution "
                  f"{p['first_execution_s'] * 1e3:8.1f} ms, programs built "
                  f"{p['programs_built']}, max |err| vs reference {p['max_abs_error']:.1e}")
        if "speedup" in result:
            print(f"prepare from cache is {result['speedup']:.1f}x faster than a cold prepare "
                  f"(cache files: {sizes}) on {phases[0]['device']}")
    return 1 if errors else 0


if __name__ == "__main__":
    print(json.dumps(_phase(sys.argv[1], sys.argv[2])))
