"""Kernel launches of a plan: :class:`LaunchBuilder` is what a kernel family's ``plan()`` sees
(it records launches with their arguments set once), and :func:`enqueue_plan` runs a plan: the
copies of its inputs, every kernel and the copies of the tensors that leave it, then one wait.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clnn.kernels._work import op_flop
from clnn.kernels.registry import In, Out
from clnn.memory import DeviceTensor, PoolTensor, host_region, on_device
from clnn.program_cache import freeze
from clnn.workgroups import (  # noqa: F401  (the launch names their callers import)
    GROUPS_PER_UNIT,
    MAX_SPLIT_ITEMS,
    SPLIT_BYTES,
    SPLIT_FLOP,
    cpu_groups,
    fit_local_size,
    heavy,
    work_groups,
)
from hal.errors import GeneralFailure
from hal.types import NUMPY_DTYPE


def nbytes(shape, dtype) -> int:
    n = dtype.itemsize
    for d in shape:
        n *= int(d)
    return n


@dataclass
class Launch:
    op_index: int
    name: str
    kernel: object
    global_size: tuple
    local_size: tuple | None = None
    #: buffers made by the plan (packed weights, scratch) that only kernel arguments refer to:
    #: pyopencl's set_args keeps no reference, so the launch keeps them alive
    keep: tuple = ()
    #: launched once already (at the warm-up of prepare, or an execution): PoCL compiles a
    #: kernel for its work sizes at its first enqueue, so a first launch is compile work
    launched: bool = False
    #: (family, name, params, arguments) of a launch planned before its program is built
    #: (clnn.passes.realize: programs are built after planning); :meth:`finish` makes the kernel
    pending: tuple | None = None
    #: the operation has enough work to spread over a CPU's compute units (:func:`heavy`)
    heavy: bool = False
    #: ``local_size`` is a speed hint of a kernel that any whole work-groups compute alike (no
    #: barriers, local memory or group-wide reductions), so :func:`cpu_groups` may divide it
    flexible: bool = False
    #: the kernel key and the arguments of the kernel (set by :meth:`finish`: clnn.chain
    #: renders the kernel's source into a chain program and passes it the same arguments)
    key: tuple | None = None
    args: list | None = None
    #: (programs, limits) of a launch whose kernel is made at its first launch of its own
    #: (:meth:`defer`: a launch that runs in a chain needs none until then)
    lazy: tuple | None = None
    #: a float GEMM's run-time epilogue flags (gemm.cl.mako ``post``), None for any other
    #: launch: clnn.passes.realize.fast_posts compiles blocks for the plan's values only
    post: int | None = None
    #: a float GEMM's residual has fewer columns than C (gemm.cl.mako's general epilogue)
    narrow_res: bool = False

    def finish(self, programs, limits):
        """Make the kernel of a pending launch: its arguments set, its local size fitted."""
        if self.pending is None:
            return
        family, name, params, flat = self.pending
        kernel = programs.kernel(family, name, params)
        self.key, self.args = (family, name, freeze(params)), flat
        kernel.set_args(*flat)
        self.local_size = work_groups(kernel, limits, f"{family}.{name}", self.global_size,
                                      self.local_size, self.heavy, self.flexible)
        self.kernel, self.pending, self.lazy = kernel, None, None

    def defer(self, programs, limits):
        """Give a pending launch its kernel key and arguments (what a chain takes: clnn.chain),
        its kernel made at its first launch of its own (:func:`finish_lazy`)."""
        if self.pending is None:
            return
        family, name, params, flat = self.pending
        self.key, self.args = (family, name, freeze(params)), flat
        self.lazy = (programs, limits)

    def finish_deferred(self) -> None:
        """Make the kernel of a deferred launch (:meth:`defer`); nothing for any other."""
        if self.lazy is not None:
            self.finish(*self.lazy)


def finish_lazy(launches) -> None:
    """Make the kernels of the deferred launches among ``launches`` (Launch.defer)."""
    for launch in launches:
        if launch.lazy is not None:  # (Launch.finish_deferred inline: run per execution)
            launch.finish(*launch.lazy)


class ScratchKernels(list):
    """A scratch layer's (kernel, global size, local size) triples (LaunchBuilder.kernels),
    with its finished ``launches``: the tuner chains them where the device's plans run
    chains (clnn.tuning.chained_kernels)."""

    def __init__(self, launches: list):
        super().__init__((la.kernel, la.global_size, la.local_size) for la in launches)
        self.launches = list(launches)


#: kernel launches in this process that were the first of their Launch (compile work on PoCL)
STATS = {"first_launches": 0}


class ChainEvents(list):
    """The events list of an execution that runs its plans' chains (clnn/chain.py) and
    collects (step, event) pairs, a Chain's event covering its whole run: clnn run --profile
    with chains, which reads their launches' times from their cycle counters
    (clnn.bench.chain_profile). Other event lists run every launch on its own."""


def chained_events(events) -> bool:
    """Whether an execution collecting ``events`` runs the chains."""
    return events is None or isinstance(events, ChainEvents)


def enqueue_launch(queue, launch: Launch, events=None):
    """Enqueue one kernel launch, counting the first launch of each."""
    import pyopencl as cl

    if not launch.launched:
        launch.launched = True
        STATS["first_launches"] += 1
    lazy = getattr(launch, "lazy", None)  # (a clnn.chain.Chain has none)
    if lazy is not None:  # a chain's launch run on its own (Launch.defer)
        launch.finish(*lazy)
    ev = cl.enqueue_nd_range_kernel(queue, launch.kernel, launch.global_size, launch.local_size)
    if events is not None:
        events.append((launch, ev))
    return ev


class DirectInput:
    """A partition input the kernels read from a buffer of its own instead of the pool
    (clnn.passes.memory), on a CPU device that shares the host's memory: an execution
    gives a host array to the kernels as a CL_MEM_USE_HOST_PTR buffer over the array itself (the
    request's memory: no copy before the first kernel, which PoCL makes in the calling thread,
    a cost that grows with the input and matters to small models of large inputs: clnn bench
    models with ``CLNN_DIRECT_INPUTS=0`` and ``=1``), points them at a tensor on the device that
    is a buffer of its own (``PoolTensor.own``: an IF / WHILE's carried tensors), and copies
    anything else (a tensor in a pool, an array of another layout) into its own buffer. ``slots``:
    (launch, argument position) of every kernel argument that is the buffer."""

    def __init__(self, context, operand: int, nbytes_: int, host_ptr: bool = True):
        """``host_ptr``: the device shares the host's memory (a host array is bound as a
        CL_MEM_USE_HOST_PTR buffer over it; else it is copied into the input's buffer)."""
        import pyopencl as cl

        self.context = context
        self.operand = operand
        self.host_ptr = host_ptr
        self.nbytes = int(nbytes_)
        self.buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, max(self.nbytes, 4))
        #: the flags of a buffer over a host array the kernels read in place
        self.host_flags = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR
        self.slots: list = []
        #: bound to a buffer that lives as long as the plan (:meth:`unbind` leaves it)
        self.durable = False
        #: the buffer the kernels' arguments point at now (:meth:`point`), and the one
        #: :meth:`unbind` points them back at (the last durable one, else the input's own)
        self.target = self.rest = self.buffer

    def bind(self, queue, t, keep: list):
        """Point the kernels at ``t`` (the input's value for one execution): a C-contiguous
        host array of the input's bytes directly, else a copy of it in the input's buffer.
        What must outlive the commands goes to ``keep``."""
        import pyopencl as cl

        target = self.buffer
        self.durable = False
        if isinstance(t, PoolTensor) and t.own and t.nbytes == self.nbytes:
            # a buffer of its own (a loop-carried tensor): no copy, nor a wait (OpenCL keeps a
            # released buffer until the commands that use it are done)
            self.point(t.cl_buffer)
            # a region of a control-flow subgraph's pool lives as long as the prepared model
            self.durable = t.home is not None
            if self.durable:
                self.rest = t.cl_buffer
            return
        arr = None if t is None or on_device(t) else np.asarray(t)
        if arr is not None and self.host_ptr and arr.dtype != np.bool_ and \
                arr.flags.c_contiguous and arr.nbytes == self.nbytes:
            target = cl.Buffer(self.context, self.host_flags, hostbuf=arr)
            keep += [arr, target]
        elif t is not None:
            upload(queue, self.buffer, 0, t, keep)
        self.point(target)

    def unbind(self):
        """Back to the input's own buffer, or to the last buffer that is never released
        before the plan it was bound to (no kernel keeps a released one), unless bound to
        such a buffer now (``durable``: the next bind repoints the kernels anyway). A loop
        body's run whose first iteration read the request's bytes then points at the
        region its later iterations read (clnn.control_flow.Replay)."""
        if not self.durable:
            self.point(self.rest)

    def point(self, target):
        """The kernels' argument that is the input set to ``target`` (a buffer)."""
        self.target = target
        for launch, pos in self.slots:
            if launch.kernel is not None:  # (a deferred launch: made with the plan's buffer)
                launch.kernel.set_arg(pos, target)


class DirectOutput:
    """A partition output the kernels write into a buffer of their own instead of the pool
    (clnn.passes.memory.direct_outputs), on a CPU device that shares the host's memory: an
    execution whose request takes the output in host memory points the kernels at a
    CL_MEM_USE_HOST_PTR buffer over those bytes (:meth:`bind`), so they write the client's
    memory and nothing is read back after them (the capabilities' IF read its 1 MiB output
    so); otherwise the kernels write the output's own buffer, read as a pool tensor is.
    ``slots``: (launch, argument position) of every kernel argument that is the buffer."""

    def __init__(self, context, operand: int, shape, dtype):
        import pyopencl as cl

        self.context = context
        self.operand = operand
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = nbytes(self.shape, self.dtype)
        self.buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, max(self.nbytes, 4))
        #: the flags of a buffer over host bytes the kernels write in place
        self.host_flags = cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR
        self.slots: list = []
        #: the array over the request's memory the kernels write in this execution (None:
        #: their own buffer)
        self.bound = None

    def bind(self, region, keep: list):
        """Point the kernels at ``region`` (a request output's bytes in host memory: a
        writable uint8 array, clnn.memory.host_region), where the output fits it; else leave
        them on the output's own buffer. What must outlive the commands goes to ``keep``."""
        import pyopencl as cl

        arr = host_region(region, self.shape, self.dtype) if region is not None else None
        if arr is None or not arr.flags.c_contiguous:
            self.unbind()
            return
        target = cl.Buffer(self.context, self.host_flags, hostbuf=arr)
        keep += [arr, target]
        self.bound = arr
        self.point(target)

    def unbind(self):
        """Back to the output's own buffer (the request's memory is the client's once the
        execution returns: no launch outside one may write it)."""
        if self.bound is not None:
            self.bound = None
            self.point(self.buffer)

    def point(self, target):
        """The kernels' argument that is the output set to ``target`` (a buffer)."""
        for launch, pos in self.slots:
            if launch.kernel is not None:  # (a deferred launch: made with the own buffer, and
                launch.kernel.set_arg(pos, target)  # before the binding where it runs alone)


def upload(queue, buffer, offset: int, t, keep: list):
    """Copy ``t`` (a host array, or a tensor on the device) to ``buffer`` at byte ``offset``;
    a host array copied without blocking goes to ``keep``."""
    import pyopencl as cl

    if on_device(t):  # a device memory or another partition's pool: copied on the device
        if t.nbytes:
            cl.enqueue_copy(queue, buffer, t.cl_buffer, src_offset=t.offset, dst_offset=offset,
                            byte_count=t.nbytes)
        return
    arr = np.ascontiguousarray(t)
    if arr.dtype == np.bool_:
        arr = arr.view(np.uint8)
    if arr.nbytes:
        keep.append(arr)
        cl.enqueue_copy(queue, buffer, arr, dst_offset=offset, is_blocking=False)


def direct_inputs_on(cl_device, options=None) -> bool:
    """Whether plans on ``cl_device`` read their inputs through DirectInput: a CPU device
    sharing the host's memory, unless ``options`` (clnn.options.DeviceOptions) turn
    ``direct_inputs`` off."""
    return (options is None or options.direct_inputs) and host_memory_shared(cl_device)


def host_memory_shared(cl_device) -> bool:
    """Whether ``cl_device`` is a CPU device on the host's memory (PoCL's CPU devices)."""
    import pyopencl as cl

    return cl_device is not None and bool(cl_device.type & cl.device_type.CPU) and \
        bool(cl_device.host_unified_memory)


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
            enqueue_launch(q, step, events)
        launches = ()
    for n, launch in enumerate(launches):
        enqueue_launch(q, launch, events)
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


@dataclass(frozen=True)
class Binding:
    """A plan run on the host memories of one request layout in place (clnn.execution.ShortPath:
    issue #36, a tiny model's execution is mostly its fixed cost): the kernels read the inputs
    where they lie in the request's memory and write the outputs where it takes them, or those
    bytes are copied to and from the device, without an array made for any of them (the
    argument lists made once per layout, not per execution). ``pools``: the request's pools it
    uses (their memoryviews, made once per execution, are given to :func:`enqueue_bound` in
    this order); each entry's bytes are then (position in ``pools``, first byte, end byte):
    ``direct``: (DirectInput or DirectOutput, ...) the inputs the kernels read and the outputs
    they write in place; ``uploads``: (buffer, byte offset there, ...) the inputs copied to the
    device; ``reads``: (pool byte offset, ...) the outputs read back into the request's memory;
    ``ends``: per pool, (the end of the last bytes it takes there, whether it writes there)."""

    pools: tuple
    direct: tuple
    uploads: tuple
    reads: tuple
    ends: tuple


def bind_request(plan, inputs: list, outputs: list) -> Binding | None:
    """The Binding of ``plan`` to a request's host memories: ``inputs`` (operand, pool index,
    byte offset, byte length) the plan's inputs, ``outputs`` (operand, pool index, byte offset)
    its outputs, each at least as long as its planned bytes and overlapping no input (checked by
    the caller). None where the plan needs :func:`enqueue_plan`: read-backs, an input or output
    it takes apart (another size, a view of another operand), or several outputs read back
    (enqueue_plan reads them in one command)."""
    given = {i: at for i, *at in inputs}
    downloads = {o: (off, nbytes(shape, dtype)) for o, off, shape, dtype in plan.downloads}
    if plan.readbacks or len(given) != len(inputs) or \
            len({o for o, *_ in outputs} | set(given)) != len(outputs) + len(given):
        return None
    pools: list = []

    def at(p: int, off: int, n: int) -> tuple:
        if p not in pools:
            pools.append(p)
        return pools.index(p), off, off + n

    direct, uploads, reads, written = [], [], [], set()
    for i, d in plan.direct.items():
        if i not in given or given[i][2] != d.nbytes:
            return None
        if d.host_ptr:
            direct.append((d, *at(*given[i])))
        else:  # (copied into its own buffer, which the kernels read)
            uploads.append((d.buffer, 0, *at(*given[i])))
    for i, off in plan.uploads:
        if i not in given:
            return None
        uploads.append((plan.pool, off, *at(*given[i])))
    for o, p, off in outputs:
        d, (src, n) = plan.direct_out.get(o), downloads.get(o, (None, 0))
        if d is not None and d.nbytes:
            direct.append((d, *at(p, off, d.nbytes)))
        elif d is None and src is not None and n:
            reads.append((src, *at(p, off, n)))
        else:
            return None
        written.add(pools.index(p))
    if len(reads) > 1:
        return None
    entries = [e[-3:] for e in (*direct, *uploads, *reads)]
    ends = tuple((max(hi for j, _, hi in entries if j == k), k in written)
                 for k in range(len(pools)))
    return Binding(tuple(pools), tuple(direct), tuple(uploads), tuple(reads), ends)


def enqueue_bound(queue, plan, binding: Binding, views: list) -> None:
    """Run ``plan`` on a request's memories (``views``: memoryviews of the request's pools
    ``binding.pools``, those it writes writable) as its Binding says, its chains where it has
    them (an execution that collects no events and keeps no intermediate: clnn.execution's
    short path), and wait for it. The kernels point back at their own buffers afterwards
    (whatever happened: no kernel keeps a buffer over the client's memory)."""
    import pyopencl as cl

    steps = plan.chained
    if steps is None:
        finish_lazy(plan.launches)
        steps = plan.launches
    keep = []  # (the buffers over the request's memory, released after the wait)
    try:
        for d, j, lo, hi in binding.direct:
            keep.append(cl.Buffer(d.context, d.host_flags, hostbuf=views[j][lo:hi]))
            d.point(keep[-1])
        for buf, off, j, lo, hi in binding.uploads:
            cl.enqueue_copy(queue, buf, views[j][lo:hi], dst_offset=off, is_blocking=False)
        for step in steps:
            enqueue_launch(queue, step)
        if binding.reads:
            _read_bound(queue, plan, binding, views)
    finally:
        for d, _, _, _ in binding.direct:
            d.point(d.buffer)
        queue.finish()


def _read_bound(queue, plan, binding: Binding, views: list) -> None:
    """Enqueue the reads of a Binding's outputs into the request's memory (without waiting:
    :func:`enqueue_bound` waits)."""
    import pyopencl as cl

    for off, j, lo, hi in binding.reads:
        cl.enqueue_copy(queue, views[j][lo:hi], plan.pool, src_offset=off, is_blocking=False)


class WeightArena:
    """The packed weights of a plan's launches in one read-only buffer, each launch given its
    offset, instead of a buffer per layer: PoCL's enqueue pays for every buffer argument of a
    launch at every execution (0.1-0.15 us each: a chain of iris_landmark passed 60 buffers,
    7 with the arena, its executions 3-5 us faster of ~310 us;
    benchmarks/results/mediapipe_ab-20261130-s24-mp.json). The arrays are placed while the
    plan is built (:meth:`place`: a placeholder stands for the buffer in the launches'
    arguments) and the buffer is made once every launch is planned (:meth:`realize`)."""

    #: the byte alignment of each array (a cache line: vector loads of 16 floats)
    ALIGN = 64
    #: the most bytes in one arena (a device limits its buffers; larger weights keep their own)
    MAX_BYTES = 64 << 20

    def __init__(self):
        self.parts: list = []
        self.nbytes = 0
        #: stands for the buffer in the pending launches' arguments until :meth:`realize`
        self.placeholder = object()

    def place(self, arr):
        """(the placeholder, the element offset of ``arr`` in the arena), or None where the
        arena would outgrow :data:`MAX_BYTES`."""
        data = np.ascontiguousarray(arr)
        off = -(-self.nbytes // self.ALIGN) * self.ALIGN
        if off + data.nbytes > self.MAX_BYTES or data.nbytes == 0:
            return None
        self.parts.append((off, data))
        self.nbytes = off + data.nbytes
        return self.placeholder, off // data.itemsize

    def realize(self, context, launches) -> None:
        """Make the buffer and put it in the pending launches' arguments for the
        placeholder (and in their ``keep``)."""
        import pyopencl as cl

        if not self.parts:
            return
        host = np.zeros(self.nbytes, np.uint8)
        for off, data in self.parts:
            host[off:off + data.nbytes] = data.reshape(-1).view(np.uint8)
        buf = cl.Buffer(context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                        hostbuf=host)
        for launch in launches:
            flat = launch.pending[3] if launch.pending is not None else ()
            if any(a is self.placeholder for a in flat):
                flat[:] = [buf if a is self.placeholder else a for a in flat]
                launch.keep = launch.keep + (buf,)
        self.parts = []


class LaunchBuilder:
    """What a kernel family's plan() sees: records launches with arguments set."""

    def __init__(self, planner, op_index: int, ctx, operation, offsets, pool, direct=None,
                 node=None, choices=None, device=None, flop: float = 0.0, slots=None):
        #: the plan's owner (clnn.plan.Planner): constants, programs, the device (None: a
        #: scratch layer of the tune pass, :meth:`scratch_layer`)
        self.planner = planner
        #: operand -> DirectInput: the partition inputs read from buffers of their own
        self.direct = direct or {}
        self.device = planner.device if planner is not None else device
        self.op_index = op_index
        self.ctx = ctx
        self.operation = operation
        self.offsets = offsets
        self.pool = pool
        self.launches: list[Launch] = []
        #: words read back after the plan's kernels (Readback)
        self.readbacks: list[Readback] = []
        #: the operation's fused node (clnn.passes.fusion.FusedNode: its epilogue list), None
        #: where nothing is fused into it
        self.node = node
        #: operand -> the operand whose storage it is (the node's aliases)
        self.alias: dict[int, int] = node.aliases(planner.sg) if node is not None else {}
        #: {choice key: clnn.tuning.Choice}: the variants the select and tune passes chose
        #: for the operation (clnn.tuning.chosen reads them)
        self.choices: dict = choices or {}
        #: the operation is worth several work-groups on a CPU (its launches with the
        #: driver's work-group choice are split: :func:`cpu_groups`)
        self.heavy = heavy(*op_work(ctx)) if ctx is not None else heavy(flop, 0)
        #: concatenation input -> its clnn.passes.memory.Slot (the memory plan's): an output
        #: of this operation there is written in place where the plan takes its row stride
        #: (:meth:`out_stride`), else into a scratch tensor that :meth:`close` copies there
        self.slots: dict = slots or {}
        #: the plan's WeightArena (the realize pass's), None: packed weights in buffers of
        #: their own (clnn.kernels._gemm.packed_weights)
        self.arena: WeightArena | None = None
        self._strided: set = set()
        self._scratch: dict = {}

    @classmethod
    def scratch_layer(cls, device, flop: float = 0.0) -> LaunchBuilder:
        """A builder of one of the tune pass's scratch layers (clnn.tuning.Family.scratch):
        launches on buffers of their own, no plan or operation (``flop``: the layer's, for
        :attr:`heavy`); :meth:`kernels` makes them."""
        return cls(None, -1, None, None, None, None, device=device, flop=flop)

    def kernels(self) -> list:
        """(kernel, global size, local size) of the launches, their kernels made now (their
        programs built where not built yet, in the tuner's own program cache:
        clnn.tuning.scratch_programs): a scratch layer's, for the tuner to run."""
        from clnn.tuning import scratch_programs

        programs = scratch_programs(self.device)
        for la in self.launches:
            la.finish(programs, self.device.limits)
        return ScratchKernels(self.launches)

    # the node's epilogue entries (clnn.passes.fusion.FusedNode), None where absent: a PAD
    # read through its window (clnn.fusion.PadFusion), the input read NCHW (LayoutFusion), the
    # depthwise convolution computed before this 1x1 one (DepthwiseFusion: input 0 has no
    # storage), the residual ADD (AddFusion), the activation (ActivationFusion)
    @property
    def input_pad(self):
        return None if self.node is None else self.node.input_pad

    @property
    def input_layout(self):
        return None if self.node is None else self.node.input_layout

    @property
    def depthwise(self):
        return None if self.node is None else self.node.depthwise

    @property
    def residual(self):
        return None if self.node is None else self.node.residual

    @property
    def activation(self):
        return None if self.node is None else self.node.activation

    def out_stride(self, index: int = 0) -> int | None:
        """The row stride (elements between rows: every axis but the last) in which output
        ``index`` is written where it is a slot of a concatenation along the last axis (the
        output's slab of the NHWC channels: clnn.passes.memory.Slot), else None (rows of its
        own last dimension). A plan that calls it must write that output so; one that does
        not writes it contiguous into a scratch tensor, copied into the slot."""
        slot = self.slots.get(self._out_operand(index)) if self.slots else None
        if slot is None or slot.ld is None:
            return None
        self._strided.add(self._out_operand(index))
        return slot.ld

    def in_place(self, index: int) -> bool:
        """Whether input ``index`` is already in its slab of output 0 (a concatenation input
        written there by its producer: nothing to copy)."""
        slot = self.slots.get(self.operation.inputs[index]) if self.slots else None
        return slot is not None and slot.out == self.operation.outputs[0]

    def _out_operand(self, index: int) -> int:
        operand = self.operation.outputs[index]
        return self.alias.get(operand, operand)

    def _scratch_for(self, operand: int):
        """The scratch tensor an output written into a strided slot without its stride goes
        to (:meth:`close`), None for any other operand."""
        slot = self.slots.get(operand)
        if slot is None or slot.ld is None or operand in self._strided:
            return None
        if operand not in self._scratch:
            outs = [self.alias.get(o, o) for o in self.operation.outputs]
            if operand not in outs:
                return None
            o = self.ctx.outputs[outs.index(operand)]
            self._scratch[operand] = (self.scratch(nbytes(o.shape, o.dtype)), o)
        return self._scratch[operand][0]

    def close(self):
        """After the family's plan: copy the outputs written to scratch tensors into their
        slots (rows of the slot's stride)."""
        from clnn.kernels.support import copy_code, launch_strided_copy, strides_of

        scratch, self._scratch = self._scratch, {}
        self._strided.update(scratch)  # (the copies' destinations: the slots themselves)
        for operand, (buf, info) in scratch.items():
            shape = list(info.shape)
            dst = strides_of(shape[:-1] + [self.slots[operand].ld])
            launch_strided_copy(self, (buf, 0), self.tensor(operand), shape,
                                strides_of(shape), dst, params={"dt": copy_code(info)})

    def tensor(self, operand: int):
        """(buffer, element offset) of an operand of this plan."""
        operand = self.alias.get(operand, operand)
        scratch = self._scratch_for(operand) if self.slots else None
        if scratch is not None:
            return scratch, np.int32(0)
        if operand in self.direct:
            return self.direct[operand].buffer, np.int32(0)
        o = self.planner.sg.operands[operand]
        size = NUMPY_DTYPE[o.type].itemsize
        if operand in self.planner.const_offsets:
            return self.planner.const_buffer.of(operand), \
                np.int32(self.planner.const_offsets[operand] // size)
        if operand in self.offsets:
            return self.pool, np.int32(self.offsets[operand] // size)
        raise GeneralFailure(f"operation {self.op_index}: operand {operand} has no device "
                             "storage")

    def buffer(self, array: np.ndarray):
        """A small read-only device buffer (index tables...) owned by the plan: pass it as a
        kernel argument."""
        import pyopencl as cl

        arr = np.ascontiguousarray(array)
        buf = cl.Buffer(self.device.context, cl.mem_flags.READ_ONLY |
                        cl.mem_flags.COPY_HOST_PTR, hostbuf=arr if arr.nbytes else b"\0")
        return buf

    def scratch(self, nbytes: int):
        """A read-write device buffer owned by the plan (sort keys, masks between the kernels
        of one operation): pass it as a kernel argument."""
        import pyopencl as cl

        return cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, max(int(nbytes), 4))

    def readback(self, words: int, finish):
        """A buffer of ``words`` int32 zeroed before each run and given to ``finish`` after
        it (see Readback): pass it as a kernel argument."""
        buf = self.scratch(words * 4)
        self.readbacks.append(Readback(buf, int(words), finish))
        return buf

    def error_flag(self, message: str):
        """An int32 device flag for the next launch to set (non-zero) when its run-time inputs
        make the operation fail: the execution then fails with GENERAL_FAILURE and
        ``message``, as on the reference device (a one-word Readback). Pass it as a kernel
        argument."""
        def finish(words):
            if words[0]:
                raise GeneralFailure(message)

        return self.readback(1, finish)

    def launch(self, family: str, name: str, params: dict, global_size, args,
               local_size=None, flexible: bool = False):
        """One kernel launch of the plan; ``local_size`` None leaves the work-groups to the
        driver (or to :func:`cpu_groups` on a CPU), ``flexible``: the kernel computes alike
        under any whole work-groups, so a given ``local_size`` is a hint that cpu_groups may
        divide (never set it for a kernel with barriers or local memory). Returns the
        Launch (None where the global size is empty: nothing launched)."""
        import pyopencl as cl

        gs = tuple(int(g) for g in global_size)
        if any(g == 0 for g in gs):
            return
        flat = []
        for a in args:
            if isinstance(a, In):
                flat.extend(self.tensor(self.operation.inputs[a.index]))
            elif isinstance(a, Out):
                flat.extend(self.tensor(self.operation.outputs[a.index]))
            else:
                flat.append(a)
        keep = tuple(a for a in flat if isinstance(a, cl.MemoryObjectHolder))
        launch = Launch(self.op_index, f"{family}.{name}", None, gs, local_size, keep,
                        pending=(family, name, params, flat), heavy=self.heavy,
                        flexible=flexible)
        # where the kernel takes a direct input's or output's buffer (once: an output that
        # is a view is there under its source too)
        for d in dict.fromkeys(self.direct.values()):
            d.slots += [(launch, n) for n, a in enumerate(flat) if a is d.buffer]
        # pending: the kernel is made once its program is built (clnn.passes.realize.finish)
        self.launches.append(launch)
        return launch


def op_work(ctx) -> tuple[int, int]:
    """(FLOP, bytes) of the operation of ``ctx`` at its planned shapes (clnn run --profile's
    counts: 0 FLOP for a memory-bound family)."""
    ins = [i.shape if not i.omitted else () for i in ctx.inputs]
    outs = [o.shape for o in ctx.outputs]
    nbytes_ = sum(nbytes(i.shape, i.dtype) for i in ctx.inputs if not i.omitted and i.shape)
    nbytes_ += sum(nbytes(o.shape, o.dtype) for o in ctx.outputs)
    return op_flop(ctx.name, ins, outs), nbytes_
