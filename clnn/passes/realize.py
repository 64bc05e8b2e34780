"""Pass 7, realize: a CL partition's plan made real. Allocates the pool and the direct-input
and direct-output buffers the memory plan asks for, and runs each fused node's kernel plan
(the family's ``plan()``, through a clnn.launch.LaunchBuilder that sees the node's epilogue
list and the variants the select and tune passes chose), whose launches are recorded pending:
the kernels are made once their programs are built (:func:`finish`, or Planner.plan_ahead's
build of every plan's kernels together). Nothing is measured here.

    realize(planner, part, shapes, fused, memory, selection=None) -> ClPlan | None
    finish(launches, programs, limits)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from clnn.kernels import kernel_for
from clnn.kernels.registry import Unplannable
from clnn.launch import DirectInput, DirectOutput, LaunchBuilder, WeightArena, nbytes
from hal.errors import GeneralFailure
from hal.types import NUMPY_DTYPE


class TooLarge(GeneralFailure):
    """A tensor or buffer larger than the OpenCL device can allocate (reported at prepare when
    the shapes are known there, else at the execution)."""


def check_fits(device, what: str, nbytes: int, total: int | None = None):
    """GENERAL_FAILURE naming ``what`` when ``nbytes`` exceed the device's largest buffer
    (CL_DEVICE_MAX_MEM_ALLOC_SIZE), or ``total`` its global memory: asked before the
    allocation, whose own error (INVALID_BUFFER_SIZE) names nothing."""
    limit = device.limits.max_mem_alloc_size
    if nbytes > limit:
        raise TooLarge(f"{what} needs {nbytes} bytes, more than the largest buffer "
                       f"{device.name} can allocate ({limit} bytes)")
    memory = int(device.cl_device.global_mem_size)
    if total is not None and total > memory:
        raise TooLarge(f"{what} needs {nbytes} bytes, which with the model's other buffers "
                       f"({total} bytes) exceeds the global memory of {device.name} "
                       f"({memory} bytes)")


@dataclass
class ClPlan:
    pool: object
    pool_bytes: int
    intermediate_bytes: int
    uploads: list  # (operand, byte offset)
    downloads: list  # (operand, byte offset, shape, dtype)
    launches: list
    shapes: dict
    #: operation -> the tensors its kernels write to the pool (operand, byte offset, shape,
    #: dtype); a fused operation's output is written by the kernels of the one it is fused into.
    #: Read only by runs that keep every intermediate (ClPreparedModel.run_keeping_all)
    written: dict = field(default_factory=dict)
    #: words the kernels write for the host (clnn.launch.Readback): status flags, the counts
    #: of data-dependent output shapes
    readbacks: list = field(default_factory=list)
    #: view operand -> the operand whose pool bytes it is (RESHAPE and the like: no launch)
    views: dict = field(default_factory=dict)
    #: inputs the kernels read from a buffer of their own, not from the pool
    #: (clnn.launch.DirectInput: on a CPU the request's memory itself)
    direct: dict = field(default_factory=dict)
    #: outputs the kernels write into a buffer of their own, not the pool
    #: (clnn.launch.DirectOutput: on a CPU the request's memory itself, where they go there)
    direct_out: dict = field(default_factory=dict)
    #: the launches as run, runs of them in clnn.chain.Chains (None: one by one)
    chained: list | None = None
    #: operation -> its fused node (clnn.passes.fusion.FusedNode), and the memory plan
    #: (clnn.passes.memory.MemoryPlan): what the passes produced (``clnn plan``)
    nodes: dict = field(default_factory=dict)
    memory: object = None
    #: operation -> its clnn.tuning.Choices (the select and tune passes': ``clnn plan``)
    selection: dict = field(default_factory=dict)


def allocate(planner, part, shapes: dict, memory):
    """(pool buffer, {operand: DirectInput or DirectOutput}) of a memory plan, each size
    checked against the device first (clnn.plan.check_fits: a GENERAL_FAILURE naming the
    tensor)."""
    import pyopencl as cl

    sg, device = planner.sg, planner.device
    direct = {}
    for i, size in memory.direct.items():
        dtype = NUMPY_DTYPE[sg.operands[i].type]
        check_fits(device, f"operand {i} ({dtype} {list(shapes[i])})", size)
        direct[i] = DirectInput(device.context, i, size,
                                host_ptr=getattr(planner, "host_memory", True))
    for o, size in getattr(memory, "direct_out", {}).items():
        check_fits(device, f"operand {o} ({NUMPY_DTYPE[sg.operands[o].type]} "
                   f"{list(shapes[o])})", size)
        direct[o] = DirectOutput(device.context, o, shapes[o], NUMPY_DTYPE[sg.operands[o].type])
    for src, o in getattr(memory, "direct_views", {}).items():  # its kernels write the view's
        direct[src] = direct[o]
    sizes = memory.sizes
    for o in sorted(sizes, key=lambda o: -sizes[o])[:1]:
        check_fits(device, f"operand {o} ({NUMPY_DTYPE[sg.operands[o].type]} "
                   f"{list(shapes[o])})", sizes[o])
    check_fits(device, f"the pool of the OpenCL partition of operations "
               f"{part.ops[0]}..{part.ops[-1]}", memory.pool_bytes,
               memory.pool_bytes + planner.const_bytes)
    pool = cl.Buffer(device.context, cl.mem_flags.READ_WRITE, max(memory.pool_bytes, 1))
    return pool, direct


def build_launches(planner, part, contexts, fused, memory, pool, direct, selection=None):
    """(launches, readbacks) of the partition's nodes, pending; None where a family cannot
    plan one (Unplannable: the reference runs the partition)."""
    sg = planner.sg
    launches, readbacks = [], []
    skipped, views = fused.skipped, memory.views
    arena = WeightArena()
    try:
        for k, ctx in zip(part.ops, contexts):
            operation = sg.operations[k]
            # nothing to compute (every output empty; an operation with some outputs empty
            # still writes the others: a sequence of no steps returns its input states), an
            # operation fused into another, or a view of its input's bytes
            if all(nbytes(o.shape, o.dtype) == 0 for o in ctx.outputs) or k in skipped \
                    or operation.outputs[0] in views:
                continue
            builder = LaunchBuilder(planner, k, ctx, operation, memory.offsets, pool, direct,
                                    node=fused.node(k),
                                    choices=selection.of(k) if selection is not None else None,
                                    slots=memory.slots)
            builder.arena = arena
            try:
                kernel_for(operation.type).plan(ctx, builder)
                builder.close()
            except Unplannable:
                return None
            launches.extend(builder.launches)
            readbacks.extend(builder.readbacks)
    finally:  # (the constants the plans read: written before any queue runs their kernels)
        planner.const_buffer.wait()
    arena.realize(planner.device.context, launches)
    return launches, readbacks


def _view_writes(sg, part, shapes, memory, launches) -> dict:
    """``memory.written`` with the views: a view has no launch, it is read after the launches
    of the last operation before it that has some (-1: before every launch), when its bytes
    already hold its value; so is what an operation without launches writes (a
    concatenation whose inputs were all written in place)."""
    written = {k: list(v) for k, v in memory.written.items()}
    launched, last = {launch.op_index for launch in launches}, -1
    for k in part.ops:
        out = sg.operations[k].outputs[0]
        if out in memory.views and out in memory.offsets:  # (a direct output's: read apart)
            written.setdefault(last, []).append((out, memory.offsets[out], shapes[out],
                                                 NUMPY_DTYPE[sg.operands[out].type]))
        if k not in launched and k in written:
            written.setdefault(last, []).extend(written.pop(k))
        last = k if k in launched else last
    return written


def realize(planner, part, shapes, fused, memory, selection=None):
    """The clnn.plan.ClPlan of partition ``part`` from the passes before (``shapes``: a
    clnn.passes.shapes.Shapes, ``fused``: a FusedGraph, ``memory``: a MemoryPlan,
    ``selection``: the tune pass's clnn.passes.select.Selection), its launches pending; None
    where a family cannot plan a node."""
    sg, offsets, the_shapes = planner.sg, memory.offsets, shapes.shapes
    pool, direct = allocate(planner, part, the_shapes, memory)
    made = build_launches(planner, part, shapes.contexts, fused, memory, pool, direct,
                          selection)
    if made is None:
        return None
    launches, readbacks = made
    fast_posts(launches, getattr(planner.device, "limits", None))
    outs = {o: d for o, d in direct.items() if isinstance(d, DirectOutput) and d.operand == o}
    direct = {i: d for i, d in direct.items() if not isinstance(d, DirectOutput)}
    uploads = [(i, offsets[i]) for i in part.inputs if i not in direct]
    # (a direct output's offset: None, its bytes in its own buffer; the shapes tuples of ints
    # and the dtypes NumPy's: clnn.memory.PoolTensor.of takes them as they are)
    downloads = [(o, offsets.get(o), tuple(int(d) for d in the_shapes[o]),
                  np.dtype(NUMPY_DTYPE[sg.operands[o].type])) for o in part.outputs]
    written = _view_writes(sg, part, the_shapes, memory, launches)
    return ClPlan(pool, memory.pool_bytes, memory.intermediate_bytes, uploads, downloads,
                  launches, the_shapes, written, readbacks=readbacks, views=memory.views,
                  direct=direct, direct_out=outs, nodes=fused.nodes, memory=memory,
                  selection=dict(selection.choices) if selection is not None else {})


def fast_posts(launches, limits) -> None:
    """Where the device class says so (clnn.kernels._defaults ``gemm_plan_posts``), each
    float GEMM kernel of the plan (pending launches of one key with run-time ``post`` flags)
    compiles the straight-line epilogue blocks of the ``post`` values the plan launches it
    with (gemm.cl.mako ``fp``: the kernel serves those values only), not of every common
    one, and no general full-tile epilogue
    where none of them has a residual of fewer columns than C (``general`` False): the same
    code runs, a cold prepare compiles less (#37). Where the class says so too
    (``gemm_plan_half``), kernels that differ only in ``half`` are one, with it (its branch
    taken at run time where N ends half way through a vector): a kernel key fewer."""
    from clnn.kernels import _defaults
    from clnn.program_cache import freeze

    if limits is None:
        return
    cls = _defaults.defaults(_defaults.traits(limits))
    if not cls.gemm_plan_posts:
        return
    groups: dict = {}
    for la in launches:
        if la.post is not None and la.pending is not None:
            family, name, params, _ = la.pending
            if cls.gemm_plan_half:
                params = {k: v for k, v in params.items() if k != "half"}
            groups.setdefault((family, name, freeze(params)), []).append(la)
    for group in groups.values():
        fp = tuple(sorted({la.post for la in group}))
        narrow = any(la.narrow_res for la in group)
        half = any(la.pending[2].get("half") for la in group)
        for la in group:
            la.pending[2]["fp"] = fp
            if half:
                la.pending[2]["half"] = True
            if not narrow:
                la.pending[2]["general"] = False


def pending_keys(launches) -> list:
    """The kernel keys of the pending launches (to build their programs together)."""
    from clnn.program_cache import freeze

    return [(la.pending[0], la.pending[1], freeze(la.pending[2]))
            for la in launches if la.pending is not None]


def finish(launches, programs, limits):
    """Make the kernels of pending launches (their programs built where not built yet), but
    the deferred ones' (clnn.launch.Launch.defer)."""
    for launch in launches:
        if launch.lazy is None:
            launch.finish(programs, limits)
