"""Pass 6, memory plan: where every tensor of a CL partition lives. Liveness over the
partition's steps (fused nodes read what their epilogues read; an absorbed operation's output
has no bytes), views (RESHAPE and the like: the input's bytes, clnn/fusion find_views),
concatenation slots (:func:`find_slots`: an input of a CONCATENATION written in place, in its
slab of the output), direct inputs (a buffer of their own, the request's memory on a CPU),
direct outputs (:func:`direct_outputs`: the subgraph's outputs in buffers of their own, the
request's memory on a CPU) and offsets in one pool buffer (tensors whose lifetimes do not
overlap share bytes). Pure: nothing is allocated here (realize does).

    plan_memory(sg, part, shapes, fused, direct_inputs, direct_outputs=False) -> MemoryPlan
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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
    #: operation -> the tensors its kernels write (operand, offset, shape, dtype[, row stride
    #: in elements: a slot]); -1: views of inputs (readable before any launch, see
    #: ClPlan.written)
    written: dict = field(default_factory=dict)
    #: concatenation input -> its :class:`Slot` in the output (no bytes of its own)
    slots: dict = field(default_factory=dict)
    #: partition outputs written into buffers of their own, not the pool: operand -> bytes
    #: (:func:`direct_outputs`)
    direct_out: dict = field(default_factory=dict)
    #: the sources of the direct outputs that are views (RESHAPE and the like): source ->
    #: the output whose buffer its bytes are (:func:`direct_outputs`)
    direct_views: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Slot:
    """Where a CONCATENATION input lives in the concatenation's output ``out``: from element
    ``offset`` of it, in rows (every axis but the last) ``ld`` elements apart (the output's
    last dimension: a concatenation along the last axis, NHWC channels), or contiguous (``ld``
    None: along an axis with only ones before it). The operation writing the input
    (clnn.launch.LaunchBuilder.out_stride) writes in place, or into a scratch tensor copied
    there; the CONCATENATION copies only its other inputs."""

    out: int
    offset: int
    ld: int | None


def find_slots(sg, part, shapes: dict, live: dict, views: dict, axes: dict) -> dict:
    """Concatenation input -> its :class:`Slot`: an input written by an operation of this
    partition (not a CONCATENATION) that nothing but the CONCATENATION reads, once, that is no
    partition output and no view or view source, of a CONCATENATION (``axes``: operation ->
    its constant axis) whose output lives in the pool; along the last axis (NHWC channels:
    ONNX's Concat of inception and fire modules) or an axis with only ones before it."""
    readers: dict[int, list[int]] = {}
    for k, op in enumerate(sg.operations):
        for i in op.inputs:
            readers.setdefault(i, []).append(k)
    writer_types = {o: sg.operations[k].type.name for k in part.ops
                    for o in sg.operations[k].outputs}
    sources = set(views.values())
    slots: dict[int, Slot] = {}
    for k, axis in axes.items():
        op = sg.operations[k]
        y = op.outputs[0]
        if y not in live or y in views or len(set(op.inputs[:-1])) != len(op.inputs) - 1:
            continue
        dims = shapes[y]
        rank = len(dims)
        axis %= rank
        inner = int(np.prod(dims[axis + 1:], dtype=np.int64))
        last = axis == rank - 1
        if not last and int(np.prod(dims[:axis], dtype=np.int64)) != 1:
            continue
        yo, start = sg.operands[y], 0
        for i in op.inputs[:-1]:  # (a constant input has no planned shape: its own)
            width = int((shapes.get(i) or sg.operands[i].dimensions)[axis])
            xo = sg.operands[i]
            same = (xo.type, xo.scale, xo.zero_point) == (yo.type, yo.scale, yo.zero_point)
            if same and i in live and live[i][0] >= 0 and i not in views and \
                    i not in sources and i not in part.outputs and readers.get(i) == [k] and \
                    writer_types.get(i, "CONCATENATION") != "CONCATENATION" and width:
                slots[i] = Slot(y, start * inner, int(dims[axis]) if last else None)
            start += width
    return slots


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
    for f in found.layouts.values():  # nor does a TRANSPOSE fused into its convolution
        live.pop(f.transposed, None)
    steps = {k: n for n, k in enumerate(part.ops)}
    for j, f in found.adds.items():  # the ADD's output is written by the convolution
        del live[f.conv_out]
        live[f.add_out][0] = steps[j]
        for k in (f.pad_op, f.pool_op):  # nor does a channel PAD or MAX_POOL_2D fused in
            if k is not None:  # have bytes
                live.pop(sg.operations[k].outputs[0], None)
    for j, f in found.activations.items():  # the activation's output: the convolution's
        del live[f.source]
        live[f.out][0] = steps[j]
        if f.gate is not None:  # (SILU: the LOGISTIC's output has no bytes either)
            live.pop(f.gate, None)
    for f in found.depthwise.values():  # nor does a depthwise output fused away have bytes
        live.pop(f.dw_out, None)
    return live


def direct_outputs(sg, part, shapes: dict, live: dict, views: dict, slots: dict
                   ) -> tuple[dict, dict]:
    """Partition outputs that are outputs of the subgraph ``sg`` itself, written by the
    partition's kernels into bytes of their own (not a view's source, not a concatenation's
    slot or one with slots, not a partition input), neither empty nor boolean (stored as bytes
    apart): (operand -> bytes, view source -> output). Each gets a buffer of its own, which an
    execution points at the request's memory where the output goes there
    (clnn.launch.DirectOutput: the kernels write the client's memory, nothing is read back), on
    a device sharing the host's memory. An output that is a view (a RESHAPE of a convolution's
    output: iris_landmark's, face_detection_full_range_sparse's) is one where its source is
    the view's alone and none of the above: the source's bytes are then the output's buffer."""
    found, via = {}, {}
    outs, sources = set(sg.output_indexes), list(views.values())
    slotted = {s.out for s in slots.values()} | set(slots)
    for o in part.outputs:
        dtype = NUMPY_DTYPE[sg.operands[o].type]
        size = nbytes(shapes[o], dtype)
        src = views.get(o, o)
        if src != o and (src in outs or src in part.outputs or sources.count(src) != 1):
            continue
        if o in outs and src in live and live[src][0] >= 0 and (src != o or o not in sources) \
                and src not in slotted and src not in part.inputs and size > 0 and \
                dtype != np.bool_:
            found[o] = size
            if src != o:
                via[src] = o
    return found, via


def via_source(o: int, via: dict) -> int:
    """The operand whose bytes direct output ``o`` is (``via``: view source -> output)."""
    return next((src for src, out in via.items() if out == o), o)


def plan_memory(sg, part, shapes: dict, fused, direct_inputs: bool,
                axes: dict | None = None, direct_out: bool = False) -> MemoryPlan:
    """The memory plan of partition ``part`` at ``shapes`` (operand -> shape) with the fused
    graph ``fused``; ``direct_inputs``: inputs read by kernels only get buffers of their own
    (the device shares the host's memory); ``axes``: CONCATENATION operation -> its constant
    axis, for the ones whose inputs may be written in place (:func:`find_slots`);
    ``direct_out``: the subgraph's outputs get buffers of their own
    (:func:`direct_outputs`)."""
    live = liveness(sg, part, fused)
    views = find_views(sg, part.ops, fused.skipped, live)
    for out, src in views.items():  # the source's bytes live as long as its views
        live[src] = [min(live[src][0], live[out][0]), max(live[src][1], live[out][1])]
        del live[out]
    slots = find_slots(sg, part, shapes, live, views, axes or {})
    for i, slot in slots.items():  # the output's bytes live from its first slot's write
        live[slot.out][0] = min(live[slot.out][0], live[i][0])
    first_write = {i: live.pop(i)[0] for i in slots}
    # a concatenation output is whole once the concatenation's step ran (its slots earlier)
    steps = {k: n for n, k in enumerate(part.ops)}
    done_at = {sg.operations[k].outputs[0]: steps[k] for k in axes or {}
               if sg.operations[k].outputs[0] in {s.out for s in slots.values()}}
    # inputs read by kernels only (no view of their bytes): a buffer of their own, which an
    # execution points at the request's memory (the device shares the host's)
    direct = {}
    for i in part.inputs:
        size = nbytes(shapes[i], NUMPY_DTYPE[sg.operands[i].type])
        if direct_inputs and i in live and i not in views.values() and size > 0:
            direct[i] = size
            del live[i]
    outs, via = direct_outputs(sg, part, shapes, live, views, slots) if direct_out else ({}, {})
    for o in outs:
        del live[via_source(o, via)]
    sizes = {o: nbytes(shapes[o], NUMPY_DTYPE[sg.operands[o].type]) for o in live}
    offsets, pool_bytes = plan_offsets(sizes, {o: tuple(v) for o, v in live.items()})
    offsets.update({out: offsets[src] for out, src in views.items() if src in offsets})
    for i, slot in slots.items():
        offsets[i] = offsets[slot.out] + slot.offset * NUMPY_DTYPE[sg.operands[i].type].itemsize
    inter = sum(_align(max(s, 1)) for s in sizes.values())
    mem = MemoryPlan(live, views, direct, sizes, offsets, pool_bytes, inter, slots=slots,
                     direct_out=outs, direct_views=via)
    mem.written = _written(sg, part, shapes, mem, {**first_write, **done_at})
    return mem


def _written(sg, part, shapes, mem: MemoryPlan, steps: dict) -> dict:
    """operation -> the pool tensors written at its step (a slot: with its row stride;
    ``steps``: operand -> the step a slot or a concatenation with slots is written at); views
    are added by realize (after the launches of the last operation before them that
    launches)."""
    written: dict[int, list] = {}
    firsts = [(o, steps.get(o, first), ()) for o, (first, _) in mem.live.items()]
    firsts += [(i, steps[i], (mem.slots[i].ld,) if mem.slots[i].ld else ())
               for i in mem.slots]
    for o, first, ld in firsts:  # a tensor is written at the first step it lives
        if first >= 0:
            written.setdefault(part.ops[first], []).append(
                (o, mem.offsets[o], shapes[o], NUMPY_DTYPE[sg.operands[o].type], *ld))
    return written
