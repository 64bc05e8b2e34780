"""Whether a device runs the quantized GEMM's AVX512-VNNI helper (gemm.cl.mako vk_helper).

A kernel may call a function compiled for a target feature the device's compiler does not
declare (``__attribute__((target("avx512vnni")))``: PoCL compiles for skylake-avx512 on a
CPU that has VNNI); whether the compiler takes it and the processor executes it is known only
by trying. The probe builds and runs a tiny kernel with such a function in a SUBPROCESS (an
illegal instruction or a compiler crash ends only that process) and checks its sums; the
answer is kept per device (platform, device, driver, the host's processor flags and the
probe's source) in clnn's
cache (``probes/vnni-<hash>.json``) and in this process. Nothing here assumes PoCL: a device
whose compiler refuses the attribute answers no, and the GEMM keeps its portable form.

    available(device) -> bool
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import subprocess
import sys

from clnn import paths

#: the probe's kernel: one noinline VNNI function (vpdpbusd: unsigned by signed bytes, 4 by 4)
PROBE_SOURCE = r"""
__attribute__((noinline, target("avx512vnni")))
void clnn_vk_probe(int16* acc, const __global uchar* a, const __global int* b) {
    int16 c = acc[0];
    for (int k = 0; k < 4; ++k)
        c = __builtin_ia32_vpdpbusd512(c, (int16)(as_int(vload4(k, a))), vload16(k, b));
    acc[0] = c;
}
__kernel void probe(__global const uchar* a, __global const int* b, __global int* out) {
    int16 acc[1];
    acc[0] = (int16)(get_global_id(0));
    clnn_vk_probe(acc, a, b);
    vstore16(acc[0], 0, out);
}
"""

#: seconds the probe may take (a compile of one small kernel)
TIMEOUT_S = 120
#: device key -> the answer, this process
_KNOWN: dict = {}
#: cl_device.int_ptr -> its key, this process
_KEYS: dict = {}


@functools.lru_cache(maxsize=1)
def _cpu_flags() -> str:
    """The host processor's flags (Linux /proc/cpuinfo; "" elsewhere): a cache entry is not
    reused on another processor."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((ln for ln in f if ln.startswith("flags")), "")
    except OSError:
        return ""


def device_key(cl_device) -> str:
    """The hash naming a device's probe answer."""
    p = cl_device.platform
    text = "|".join(str(x) for x in (p.name, p.version, cl_device.name,
                                      cl_device.driver_version, platform.machine(),
                                      _cpu_flags(), PROBE_SOURCE))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def available(device) -> bool:
    """Whether ``device`` (clnn.device.ClDevice) runs the VNNI helper: its class's
    gemm_vnni (clnn/kernels/_defaults.py) and its probe's answer."""
    from clnn.kernels import _defaults

    limits = getattr(device, "limits", None)
    cl_device = getattr(limits, "cl_device", None)
    if limits is None or cl_device is None or \
            not _defaults.defaults(_defaults.traits(limits)).gemm_vnni:
        return False
    key = _KEYS.get(cl_device.int_ptr) or _KEYS.setdefault(cl_device.int_ptr,
                                                           device_key(cl_device))
    if key not in _KNOWN:
        root = getattr(getattr(device, "options", None), "cache_dir", None)
        _KNOWN[key] = _cached_probe(cl_device, key, root)
    return _KNOWN[key]


def _cached_probe(cl_device, key: str, root) -> bool:
    def measure() -> dict:
        ok, why = run_probe(cl_device.platform.name, cl_device.name)
        return {"vnni": ok, "why": why, "device": cl_device.name}

    return bool(paths.cached_probe(f"vnni-{key}", root, measure, lambda e: e["vnni"])["vnni"])


def run_probe(platform_name: str, device_name: str) -> tuple[bool, str]:
    """(whether the probe passed, why not) for the device of these names, in a subprocess
    that imports this process's clnn (run from the directory holding it, which comes first)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from clnn.options import child_environ, defaulted_environ, environ_value

    env = child_environ(PYTHONPATH=os.pathsep.join(  # (PoCL's device list as clnn set it)
        [root] + [p for p in [environ_value("PYTHONPATH")] if p]),
        **defaulted_environ("POCL_DEVICES"))
    try:
        r = subprocess.run([sys.executable, "-m", "clnn.kernels._vnni", platform_name,
                            device_name], capture_output=True, text=True, timeout=TIMEOUT_S,
                           cwd=root, env=env)
    except (OSError, subprocess.SubprocessError) as e:
        return False, f"the probe did not run: {e}"
    if r.returncode == 0 and r.stdout.strip().endswith("ok"):
        return True, "ok"
    lines = (r.stderr + r.stdout).strip().splitlines() or [""]
    why = next((ln for ln in lines if "error:" in ln.lower()),
               next((ln for ln in lines if "error" in ln.lower()), lines[-1])).strip()
    return False, f"the probe exited {r.returncode}: {why[:300]}"


def _probe_here(platform_name: str, device_name: str) -> str:
    """Build and run the probe kernel on the named device; "ok" when its sums are right."""
    import numpy as np
    import pyopencl as cl

    dev = next((d for p in cl.get_platforms() if p.name == platform_name
                for d in p.get_devices() if d.name == device_name), None)
    if dev is None:
        return f"no device {device_name!r} on platform {platform_name!r}"
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx)
    rng = np.random.default_rng(36)
    a = rng.integers(0, 256, 16).astype(np.uint8)
    b = rng.integers(-128, 128, (4, 16, 4)).astype(np.int8)
    mf = cl.mem_flags
    da = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    db = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
    out = np.zeros(16, np.int32)
    do = cl.Buffer(ctx, mf.WRITE_ONLY, out.nbytes)
    cl.Program(ctx, PROBE_SOURCE).build().probe(queue, (1,), None, da, db, do)
    cl.enqueue_copy(queue, out, do)
    queue.finish()
    want = np.einsum("kp,knp->n", a.reshape(4, 4).astype(np.int32), b.astype(np.int32))
    return "ok" if np.array_equal(out, want) else f"wrong sums {out[:4]} != {want[:4]}"


if __name__ == "__main__":
    print(_probe_here(sys.argv[1], sys.argv[2]))
