"""A plan bound to one request's host memories (:class:`Binding`, :func:`enqueue_bound`:
clnn.execution's short path; clnn.launch)."""

from __future__ import annotations

from dataclasses import dataclass

from clnn.launch import launches as kernel_launches
from clnn.launch.launches import finish_lazy, nbytes


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
            kernel_launches.enqueue_launch(queue, step)
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
