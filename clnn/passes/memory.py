"""Pass 6, memory plan: where every tensor of a CL partition lives. Liveness over the
partition's steps (fused nodes read what their epilogues read; an absorbed operation's output
has no bytes), views (RESHAPE and the like: the input's bytes, clnn/fusion.py find_views),
direct inputs (a buffer of their own, the request's memory on a CPU) and offsets in one pool
buffer (tensors whose lifetimes do not overlap share bytes). Pure: nothing is allocated here
(realize does).

    plan_memory(sg, part, shapes, fused, direct_inputs) -> MemoryPlan
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clnn.fusion import find_views
from clnn.launch import nbytes
from hal.types import NUMPY_DTYPE

#: byte alignment of tensors in the pool and constant buffers (>= every element size)
ALIGN = 128


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class MemoryPlan:
    """What the memory pass produced for one partition."""

    #: operand -> [first step, last step] it lives in the pool (-1: before the first)
    live: dict
    #: view operand -> the operand whose bytes it is
    views: dict
    #: partition inputs read from buffers of their own: operand -> bytes
    direct: dict
    #: pool operand -> bytes
    sizes: dict
    #: operand (pool tensors and views) -> byte offset in the pool
    offsets: dict
    pool_bytes: int
    #: the pool tensors' bytes without sharing (what liveness saved: this - pool_bytes)
    intermediate_bytes: int = 0
    #: operation -> the tensors its kernels write (operand, offset, shape, dtype); -1: views
    #: of inputs (readable before any launch, see ClPlan.written)
    written: dict = field(default_factory=dict)


def plan_offsets(sizes: dict[int, int], live: dict[int, tuple[int, int]]) -> tuple[dict, int]:
    """Offsets for tensors of the given byte sizes live over [first, last] steps: tensors whose
    lifetimes overlap never share bytes. Greedy by size, lowest fitting offset. Returns
    (offsets, pool size)."""
    placed: list[tuple[int, int, int]] = []  # (offset, size, operand)
    offsets = {}
    for opnd in sorted(sizes, key=lambda o: (-sizes[o], o)):
        size = _align(max(sizes[opnd], 1))
        lo, hi = live[opnd]
        busy = sorted((off, sz) for off, sz, other in placed
                      if not (live[other][1] < lo or hi < live[other][0]))
        off = 0
        for b_off, b_size in busy:
            if off + size <= b_off:
                break
            off = max(off, b_off + b_size)
        offsets[opnd] = off
        placed.append((off, size, opnd))
    total = max((off + sz for off, sz, _ in placed), default=0)
    return offsets, total


def liveness(sg, part, fused) -> dict[int, list[int]]:
    """operand -> [first, last] step of partition ``part`` with the fused graph ``fused``
    (clnn.passes.fusion.FusedGraph); inputs live from -1, outputs until the end."""
    found, reads = fused.found, fused.reads
    last_step = len(part.ops)
    live: dict[int, list[int]] = {i: [-1, -1] for i in part.inputs}
    for step, k in enumerate(part.ops):
        for i in (*sg.operations[k].inputs, *reads.get(k, ())):
            if i in live:
                live[i][1] = step
        for o in sg.operations[k].outputs:
            live[o] = [step, step]
    for o in part.outputs:
        live[o][1] = last_step
    for f in found.pads.values():  # a PAD fused into several readers appears once per reader
        live.pop(f.padded, None)
    steps = {k: n for n, k in enumerate(part.ops)}
    for j, f in found.adds.items():  # the ADD's output is written by the convolution
        del live[f.conv_out]
        live[f.add_out][0] = steps[j]
        if f.pad_op is not None:  # nor does a channel PAD fused in have bytes
            live.pop(sg.operations[f.pad_op].outputs[0], None)
    for j, f in found.activations.items():  # the activation's output: the convolution's
        del live[f.source]
        live[f.out][0] = steps[j]
    for f in found.depthwise.values():  # nor does a depthwise output fused away have bytes
        live.pop(f.dw_out, None)
    return live


def plan_memory(sg, part, shapes: dict, fused, direct_inputs: bool) -> MemoryPlan:
    """The memory plan of partition ``part`` at ``shapes`` (operand -> shape) with the fused
    graph ``fused``; ``direct_inputs``: inputs read by kernels only get buffers of their own
    (the device shares the host's memory)."""
    live = liveness(sg, part, fused)
    views = find_views(sg, part.ops, fused.skipped, live)
    for out, src in views.items():  # the source's bytes live as long as its views
        live[src] = [min(live[src][0], live[out][0]), max(live[src][1], live[out][1])]
        del live[out]
    # inputs read by kernels only (no view of their bytes): a buffer of their own, which an
    # execution points at the request's memory (the device shares the host's)
    direct = {}
    for i in part.inputs:
        size = nbytes(shapes[i], NUMPY_DTYPE[sg.operands[i].type])
        if direct_inputs and i in live and i not in views.values() and size > 0:
            direct[i] = size
            del live[i]
    sizes = {o: nbytes(shapes[o], NUMPY_DTYPE[sg.operands[o].type]) for o in live}
    offsets, pool_bytes = plan_offsets(sizes, {o: tuple(v) for o, v in live.items()})
    offsets.update({out: offsets[src] for out, src in views.items()})
    inter = sum(_align(max(s, 1)) for s in sizes.values())
    mem = MemoryPlan(live, views, direct, sizes, offsets, pool_bytes, inter)
    mem.written = _written(sg, part, shapes, mem)
    return mem


def _written(sg, part, shapes, mem: MemoryPlan) -> dict:
    """operation -> the pool tensors written at its step; views are added by realize (after
    the launches of the last operation before them that launches)."""
    written: dict[int, list] = {}
    for o, (first, _) in mem.live.items():  # a tensor is written at the first step it lives
        if first >= 0:
            written.setdefault(part.ops[first], []).append(
                (o, mem.offsets[o], shapes[o], NUMPY_DTYPE[sg.operands[o].type]))
    return written
