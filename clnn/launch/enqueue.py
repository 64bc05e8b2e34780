"""A plan run (:func:`enqueue_plan`): the copies of its inputs, every kernel and the copies of
the tensors that leave it, then one wait (clnn.launch)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clnn.launch import launches as kernel_launches
from clnn.launch.direct import upload
from clnn.launch.launches import chained_events, finish_lazy, nbytes
from clnn.memory import DeviceTensor, PoolTensor, host_region, on_device


@dataclass
class Readback:
    """A few int32 words the kernels of an operation write for the host (a status flag, the
    count of a data-dependent output), zeroed before every run of the plan and read back
    after its kernels, in the same wait. ``finish(words)`` then raises GeneralFailure for a
    value the operation rejects (a malformed box: the reference fails the execution too), or
    returns {operand: shape}: the real shapes of outputs planned at their largest (the
    count is known only after the kernels ran); those outputs are cut to these shapes
    (leading rows of the planned tensor, so the bytes are a prefix)."""
    buffer: object
    words: int
    finish: object


def _upload_inputs(q, plan, values: dict, keep: list):
    """The plan's inputs into its pool, and its direct inputs bound."""
    import pyopencl as cl

    # inputs held in this pool's own bytes (a loop body's previous iteration) go through a
    # scratch buffer first: the other inputs' destinations may overlap their sources
    staged = {}
    for i, _ in plan.uploads:
        t = values.get(i)
        if t is not None and on_device(t) and t.nbytes and t.cl_buffer == plan.pool:
            scratch = cl.Buffer(plan.pool.context, cl.mem_flags.READ_WRITE, t.nbytes)
            cl.enqueue_copy(q, scratch, t.cl_buffer, src_offset=t.offset, byte_count=t.nbytes)
            staged[i] = PoolTensor(q, scratch, 0, t.shape, t.dtype)
    for i, off in plan.uploads:
        t = staged.get(i, values.get(i))
        if t is not None:  # (None: an omitted model input, Planner.plan_for: no bytes)
            upload(q, plan.pool, off, t, keep)
    for d in plan.direct.values():
        d.bind(q, values.get(d.operand), keep)


def _bind_outputs(plan, device_outputs: dict, keep: list):
    """The plan's direct outputs pointed at the request's memory where they go there (those
    in ``device_outputs`` as host bytes), else at their own buffers."""
    for o, d in plan.direct_out.items():
        dst = device_outputs.get(o)
        d.bind(dst if isinstance(dst, np.ndarray) else None, keep)


def _read_written(q, plan, op_index: int, results: list):
    """Download what operation ``op_index`` wrote (-1: views of the inputs) into
    ``results``."""
    import pyopencl as cl

    for o, off, shape, dtype, *ld in plan.written.get(op_index, ()):
        arr = np.empty(shape, dtype)
        if arr.nbytes and ld:  # a concatenation's slot: rows ld[0] elements apart
            rows = arr.size // shape[-1]
            flat = np.empty(rows * ld[0], dtype)
            span = ((rows - 1) * ld[0] + shape[-1]) * arr.itemsize
            cl.enqueue_copy(q, flat.view(np.uint8)[:span], plan.pool, src_offset=off)
            arr = flat.reshape(rows, ld[0])[:, :shape[-1]].reshape(shape)
        elif arr.nbytes:
            cl.enqueue_copy(q, arr, plan.pool, src_offset=off, is_blocking=False)
        results.append((o, arr))


def _runs_chains(plan, events, keep_all: bool) -> bool:
    return chained_events(events) and not keep_all and plan.chained is not None


def _enqueue_launches(q, plan, events, keep_all: bool, results: list, chains: bool):
    launches = plan.launches
    if chains:
        for step in plan.chained:  # launches and clnn.chain.Chains
            kernel_launches.enqueue_launch(q, step, events)
        launches = ()
    for n, launch in enumerate(launches):
        kernel_launches.enqueue_launch(q, launch, events)
        if keep_all and (n + 1 == len(launches) or launches[n + 1].op_index != launch.op_index):
            _read_written(q, plan, launch.op_index, results)


#: the most bytes of the pool that one read spanning a plan's host outputs takes: each read is
#: a command of its own, which the device takes up after the one before and signals apart (on
#: a CPU device about 10 us a read after the last kernel), where one read spanning them costs
#: a copy of their bytes on the host (about as long for 128 KiB)
SPAN_BYTES = 1 << 17


def _download_outputs(q, plan, device_outputs: dict, resident, results: list) -> list:
    """Enqueue the plan's outputs' downloads into ``results``; returns the copies to make
    on the host once the queue is finished (:func:`_finish_copies`). A direct output the
    kernels wrote into the request's memory (DirectOutput.bound) is not read."""
    import pyopencl as cl

    reads = []  # (pool offset, host array) read from the pool
    for o, off, shape, dtype in plan.downloads:
        src, d = plan.pool, plan.direct_out.get(o)
        if d is not None:
            if d.bound is not None:  # written where the request takes it
                results.append((o, d.bound))
                continue
            src, off = d.buffer, 0
        dst = device_outputs.get(o)
        if isinstance(dst, np.ndarray):  # a model output's bytes in the client's memory
            # (one a later OpenCL partition reads stays on the device: read in at the end)
            arr = None if o in resident else host_region(dst, shape, dtype)
            if arr is not None:
                _read(q, src, off, arr, reads if d is None else None, results, o)
                continue
            dst = None
        if dst is not None:  # a model output in a device memory: copied on the device
            n = nbytes(shape, dtype)
            dst.ensure(n)
            if n:
                cl.enqueue_copy(q, dst.cl_buffer, src, src_offset=off, byte_count=n)
            results.append((o, DeviceTensor(dst, shape)))
            continue
        if o in resident:  # read by a later OpenCL partition: no trip through the host
            results.append((o, PoolTensor.of(q, src, int(off), shape, dtype)))
            continue
        _read(q, src, off, np.empty(shape, dtype), reads if d is None else None, results, o)
    return _enqueue_reads(q, plan.pool, reads)


def _read(q, src, off: int, arr, reads: list | None, results: list, o: int):
    """``arr`` read from byte ``off`` of ``src``: with the pool's other reads (``reads``), or
    at once from a buffer of its own (a direct output's: ``reads`` None)."""
    import pyopencl as cl

    results.append((o, arr))
    if not arr.nbytes:
        return
    if reads is not None:
        reads.append((off, arr))
    else:
        cl.enqueue_copy(q, arr, src, src_offset=off, is_blocking=False)


def _enqueue_reads(q, pool, reads: list) -> list:
    """Enqueue reads of ``pool`` (pool offset, host array) without blocking: one read of the
    bytes spanning two or more where those are :data:`SPAN_BYTES` at most, the copies out of
    it returned (made once the queue is finished), else one read each."""
    import pyopencl as cl

    if not reads:
        return []
    lo = min((off for off, _ in reads), default=0)
    hi = max((off + a.nbytes for off, a in reads), default=0)
    if len(reads) < 2 or hi - lo > SPAN_BYTES:
        for off, arr in reads:
            cl.enqueue_copy(q, arr, pool, src_offset=off, is_blocking=False)
        return []
    span = np.empty(hi - lo, np.uint8)
    cl.enqueue_copy(q, span, pool, src_offset=lo, is_blocking=False)
    return [(span[off - lo:off - lo + a.nbytes], a) for off, a in reads]


def _finish_copies(copies: list):
    """The host copies of :func:`_enqueue_reads` (the queue finished)."""
    for src, dst in copies:
        dst.reshape(-1).view(np.uint8)[:] = src


def _store_results(values: dict, results: list, cut: dict):
    """``results`` into ``values``, cut to the data-dependent shapes read back."""
    for o, arr in results:
        if o in cut:  # a data-dependent shape: the leading rows of the planned tensor
            shape = tuple(cut[o])
            if isinstance(arr, DeviceTensor):
                arr = DeviceTensor(arr.buffer, shape)
            elif isinstance(arr, PoolTensor):  # left on the device for the next partition
                arr = PoolTensor(arr.queue, arr.cl_buffer, arr.offset, shape, arr.dtype)
            else:
                arr = arr.reshape(-1)[:int(np.prod(shape, dtype=np.int64))].reshape(shape)
        values[o] = arr


def enqueue_plan(queue, plan, values: dict, device_outputs: dict, events=None,
                 keep_all: bool = False, resident=(), held: list | None = None):
    """Run a plan on ``queue``: ``values`` gives its inputs and receives its outputs (arrays, or
    DeviceTensors for model outputs in ``device_outputs`` device memories, arrays over the
    client's memory for those whose ``device_outputs`` entry is its bytes, or PoolTensors, left
    in the pool, for the outputs in ``resident``: those the next OpenCL partitions read).
    ``keep_all``: every tensor an operation writes is also downloaded right after the kernels
    of the operation that writes it (before liveness lets a later tensor reuse its bytes; the
    queue is in order). ``held``: a list that keeps the host arrays the commands read alive
    until its owner finishes the queue (clnn.execution.Execution.release), so a plan whose
    results all stay on the device does not wait for them; None: the plan waits."""
    import pyopencl as cl

    q = queue
    keep = []
    chains = _runs_chains(plan, events, keep_all)
    if not chains:                   # kernels of chained launches, made before the inputs
        finish_lazy(plan.launches)   # are bound to them
    if plan.uploads or plan.direct:
        _upload_inputs(q, plan, values, keep)
    if plan.direct_out:
        _bind_outputs(plan, device_outputs, keep)
    results = []
    readbacks = plan.readbacks
    for rb in readbacks:
        cl.enqueue_fill_buffer(q, rb.buffer, np.int32(0), 0, rb.words * 4)
    if keep_all:  # views of the inputs (no launch of their own): see clnn.passes.realize
        _read_written(q, plan, -1, results)
    _enqueue_launches(q, plan, events, keep_all, results, chains)
    words = []
    for rb in readbacks:
        words.append(np.empty(rb.words, np.int32))
        cl.enqueue_copy(q, words[-1], rb.buffer, is_blocking=False)
    copies = _download_outputs(q, plan, device_outputs, resident, results)
    # the kernels pointed back at their own buffers before the wait: an enqueued command keeps
    # the arguments it was enqueued with (so this Python runs while the device works)
    for d in plan.direct.values():
        d.unbind()
    for d in plan.direct_out.values():
        d.unbind()
    # one wait, unless everything stays on the device: the queue is in order, so the next
    # partition's commands see these results, and whatever reads them on the host (a blocking
    # read) waits for them; host arrays being copied must stay alive until copied (``held``), device
    # memories, read-back words and profiling events must be complete when the execution returns
    if (keep and held is None) or readbacks or copies or events is not None or \
            not all(isinstance(v, PoolTensor) for _, v in results):
        q.finish()
    elif keep:
        held.extend(keep)
    if copies:
        _finish_copies(copies)
    cut = {}
    for rb, w in zip(readbacks, words):
        cut.update(rb.finish(w) or {})
    if cut:
        _store_results(values, results, cut)
    else:  # (no data-dependent shape)
        values.update(results)
