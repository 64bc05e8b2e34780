"""The compile helper process: a second process compiling kernels into PoCL's kernel cache
(clnn.program_cache)."""

from __future__ import annotations

import contextlib
import os
import threading
import time

from clnn.program_cache.compiler import BUILD_OPTIONS, POCL_SPECIALIZATION, is_pocl
from clnn.program_cache.rendering import cache_dir

# what the helper process runs: no clnn import (nothing but pyopencl on its path of work).
# It starts PoCL's compiler on a program of its own first (its start-up off the job's path),
# then waits for its job: a program to build and compile; none (its input closed): it exits.
_HELPER_CODE = """
import json, os, sys
import pyopencl as cl
where = json.loads(sys.argv[1])
plat = next(p for p in cl.get_platforms() if p.name == where["platform"])
dev = next(d for d in plat.get_devices() if d.name == where["device"])
ctx = cl.Context([dev])
cl.Program(ctx, "__kernel void clnn_helper_start(__global int* x) { x[0] = 1; }").build()
text = sys.stdin.read()
job = json.loads(text) if text else {}
if "source" in job:
    prg = cl.Program(ctx, job["source"]).build(options=job["options"],
                                               cache_dir=job["cache_dir"])
    prg.get_info(cl.program_info.BINARIES)
for i, src in enumerate(job.get("sources", ())):
    try:  # the queue: a kernel another process took is skipped
        os.close(os.open(os.path.join(job["claims"], str(i)),
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        continue
    try:
        prg = cl.Program(ctx, src).build(options=job["options"], cache_dir=job["cache_dir"])
        binary = prg.get_info(cl.program_info.BINARIES)[0]
        path = (job.get("binaries") or [None] * (i + 1))[i]
        if path and binary:  # kept as the process that needs it would (save_binary)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open("%s.%d.tmp" % (path, os.getpid()), "wb") as f:
                f.write(bytes(binary))
            os.replace("%s.%d.tmp" % (path, os.getpid()), path)
    except Exception:  # the process that needs it reports it
        pass
    open(os.path.join(job["claims"], "%d.done" % i), "w").close()
"""


class CompileHelper:
    """A second process compiling kernels into PoCL's kernel cache while this process compiles
    others. With one program per kernel key (the default), this process and a helper per other
    core take the kernels from one queue (:meth:`give_queue`, :func:`claim`, :meth:`wait_for`);
    with ``combine``, as follows. PoCL compiles a kernel (its work-group function, the bulk of a
    cold prepare: clnn bench prepare) at its first launch, or every kernel of a program when the
    program's binaries are asked for; one process compiles one kernel at a time (threads
    measured no faster), so on a cold cache a model's kernels are split in two programs: this
    process builds both and warms the first up while the helper builds the second and asks for
    its binaries, which compiles its kernels in their order in the source. The warm-up then
    launches the second program's kernels in the opposite order: those the helper compiled come
    from PoCL's cache, the others this process compiles, so the two meet wherever the costs put
    them (clnn.prepared_model.ClPreparedModel.warm_up), and the helper is stopped. Only with
    PoCL's generic work-group functions (clnn.device.pocl_generic_work_groups), which the
    binaries hold; ``DeviceOptions(compile_helper=False)`` turns it off. A helper that fails
    costs nothing but its start: the warm-up compiles what it left."""

    #: kernels to build below which one process does it all
    MIN_KERNELS = 8
    #: a first program built faster than this came from PoCL's cache (a build from the cache
    #: takes a fraction of a compile; the split between the two: clnn bench prepare, cold
    #: against warm)
    WARM_BUILD_S = 0.06
    #: estimated compile cost per kernel def (the rest: 1), to split the kernels in halves
    #: and order the compile queue (the rule: a GEMM or direct convolution costs most, a
    #: depthwise one about 60% of that, im2col half, the pooling, resize and element-wise
    #: kernels least; CPU seconds to build and compile each of four MediaPipe models' kernels
    #: alone (PoCL 3.1, AVX-512): GEMM 0.36-0.63, conv_tile 0.42-0.50, depthwise_slide
    #: 0.22-0.40, im2col_pack 0.20-0.34, conv_cvec 0.15-0.24, the others 0.10-0.20)
    COST = {"gemm": 8, "conv_tile": 7, "conv_cvec": 3, "depthwise_tile": 5, "depthwise_sweep": 5,
            "depthwise_slide": 5, "depthwise_slide_rows": 6, "depthwise": 5, "im2col_pack": 4}

    def __init__(self, proc, names: list):
        self.proc = proc
        self._take(names)

    def _take(self, names):
        #: the kernel names (clnn.program_cache.kernel_name) the helper compiles, in its order
        self.names = list(names)
        self._rank = {n: len(self.names) - i for i, n in enumerate(self.names)}

    @classmethod
    def wanted(cls, context, n_kernels: int) -> bool:
        """Whether a helper may compile half of ``n_kernels`` on this context (callers check
        the device's ``compile_helper`` option first)."""
        if n_kernels < cls.MIN_KERNELS:
            return False
        from clnn.options import environ_value

        return is_pocl(context.devices[0].platform) and \
            environ_value(POCL_SPECIALIZATION) == "0"

    @classmethod
    def split(cls, keys: list) -> tuple[list, list]:
        """(this process's keys, the helper's), halves by estimated cost."""
        load = [0, 0]
        mine, helper = [], []
        for key in sorted(keys, key=lambda k: -cls.COST.get(k[1], 1)):
            side = 0 if load[0] <= load[1] else 1
            load[side] += cls.COST.get(key[1], 1)
            (mine if side == 0 else helper).append(key)
        order = {k: i for i, k in enumerate(keys)}
        return sorted(mine, key=order.get), sorted(helper, key=order.get)

    @classmethod
    def spawn(cls, context, nice: int = 0):
        """A helper started ahead of its job (its start-up overlaps the planning), or None
        where it cannot start; :meth:`give` hands it the job, :meth:`stop` dismisses it.
        ``nice``: the helper's niceness increment (a background compile: executions first)."""
        import json
        import subprocess
        import sys

        dev = context.devices[0]
        where = json.dumps({"platform": dev.platform.name, "device": dev.name})
        try:
            proc = subprocess.Popen([sys.executable, "-c", _HELPER_CODE, where],
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL,
                                    preexec_fn=(lambda: os.nice(nice)) if nice else None)
        except OSError:
            return None
        return cls(proc, [])

    def give(self, source: str, names: list, cache_root: str | None = None) -> bool:
        """Hand the helper its program; False where it is gone. ``cache_root``: the device's
        ``DeviceOptions.cache_dir`` (pyopencl's binaries go under it, :func:`cache_dir`)."""
        job = {"source": source, "options": BUILD_OPTIONS, "cache_dir": cache_dir(cache_root)}
        if not self._send(job):
            return False
        self._take(names)
        return True

    def _send(self, job: dict) -> bool:
        """Write ``job`` to the helper's input from a thread, False where the helper is gone:
        the helper reads it once its compiler started, and a job larger than the pipe holds
        (a chain's source, a queue of sources) kept the writer waiting until then (0.6-0.9 s
        of an execution that asked for a chain, pose_landmark_full, loaded machine)."""
        import json

        if self.proc.poll() is not None:
            return False
        data = json.dumps(job).encode()

        def write():
            with contextlib.suppress(OSError, ValueError):  # (a helper stopped first)
                self.proc.stdin.write(data)
                self.proc.stdin.close()

        threading.Thread(target=write, daemon=True).start()
        return True

    @classmethod
    def queue_helpers(cls, context, n_kernels: int, spare=None) -> list:
        """Helpers for a queue of ``n_kernels`` kernels: one per core but this process's (at
        most one per two kernels), ``spare`` (one started ahead) the first of them."""
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # (not Linux)
            cores = os.cpu_count() or 1
        n = min(cores - 1, n_kernels // 2)
        helpers = [spare] if spare is not None else []
        while len(helpers) > n:
            helpers.pop().stop()
        while len(helpers) < n:
            h = cls.spawn(context)
            if h is None:
                break
            helpers.append(h)
        return helpers

    def give_queue(self, sources: list, claims: str, cache_root: str | None = None,
                   binaries: list | None = None) -> bool:
        """Hand the helper the queue of kernel sources (claims: its directory, :func:`claim`;
        ``binaries``: where each program's binary is kept, ProgramCache.save_binary, or None);
        False where it is gone."""
        job = {"sources": sources, "claims": claims, "options": BUILD_OPTIONS,
               "cache_dir": cache_dir(cache_root),
               "binaries": [str(p) if p else None for p in binaries or ()]}
        if not self._send(job):
            return False
        self.names = ["queue"]  # (a job: stop() does not close its input again)
        return True

    @staticmethod
    def wait_for(helpers: list, claims: str, theirs: list, timeout: float = 600.0):
        """Until the helpers compiled the jobs ``theirs`` of the queue in ``claims`` (each
        marks one done), then stop them (one still starting took none: not waited for). A
        helper gone first leaves its kernels to this process (compiled at their launch)."""
        t_end = time.monotonic() + timeout
        left = [os.path.join(claims, f"{i}.done") for i in theirs]
        while left and time.monotonic() < t_end and \
                any(h.proc.poll() is None for h in helpers):
            left = [p for p in left if not os.path.exists(p)]
            if left:
                time.sleep(0.005)
        for h in helpers:
            h.stop()

    def order(self, name: str) -> int:
        """Where this process launches kernel ``name`` in the warm-up: its own kernels first
        (-1), then the helper's from its last one back."""
        return self._rank.get(name, -1)

    def stop(self):
        """The warm-up is done (whatever the helper still compiles is compiled already), or
        the helper has no job."""
        if not self.names:  # no job (a warm cache): stopped at once, not left starting up
            with contextlib.suppress(OSError, ValueError):  # on the other core
                self.proc.stdin.close()
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 (a helper that ignores SIGTERM)
            self.proc.kill()
            self.proc.wait()
