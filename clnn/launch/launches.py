"""A plan's kernel launches: :class:`Launch` (a kernel with its arguments set once) and
:func:`enqueue_launch` (clnn.launch)."""

from __future__ import annotations

from dataclasses import dataclass

from clnn.program_cache import freeze
from clnn.workgroups import work_groups


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
