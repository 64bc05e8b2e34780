"""Kernel launches of a plan: :class:`LaunchBuilder` is what a kernel family's ``plan()`` sees
(it records launches with their arguments set once), and :func:`enqueue_plan` runs a plan: the
copies of its inputs, every kernel and the copies of the tensors that leave it, then one wait.

The modules: :mod:`.launches` (:class:`Launch`, :func:`enqueue_launch`), :mod:`.direct`
(direct inputs and outputs), :mod:`.enqueue` (:func:`enqueue_plan`), :mod:`.binding` (a plan
bound to a request's memories: :func:`enqueue_bound`) and :mod:`.builder`
(:class:`LaunchBuilder`, :class:`WeightArena`). Tests and tools that wrap a function patch it in
the module that looks it up (:func:`enqueue_launch`: ``clnn.launch.launches``).
"""

from clnn.launch.binding import (
    Binding,
    bind_request,
    enqueue_bound,
)
from clnn.launch.builder import (
    LaunchBuilder,
    WeightArena,
    op_work,
)
from clnn.launch.direct import (
    DirectInput,
    DirectOutput,
    direct_inputs_on,
    host_memory_shared,
    upload,
)
from clnn.launch.enqueue import (
    SPAN_BYTES,
    Readback,
    enqueue_plan,
)
from clnn.launch.launches import (
    STATS,
    ChainEvents,
    Launch,
    ScratchKernels,
    chained_events,
    enqueue_launch,
    finish_lazy,
    nbytes,
)
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

__all__ = ["Binding", "ChainEvents", "DirectInput", "DirectOutput", "Launch", "LaunchBuilder",
           "Readback", "SPAN_BYTES", "STATS", "ScratchKernels", "WeightArena", "bind_request",
           "chained_events", "direct_inputs_on", "enqueue_bound", "enqueue_launch",
           "enqueue_plan", "finish_lazy", "host_memory_shared", "nbytes", "op_work", "upload"]
