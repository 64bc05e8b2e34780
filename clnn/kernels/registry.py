"""The one registration path for OpenCL kernels.

A kernel family module ``clnn/kernels/<family>.py`` (same stem as the HAL module
``hal/operations/<family>.py`` and the template ``clnn/templates/<family>.cl.mako``) calls
:func:`register_kernel` at its bottom, once per operation::

    register_kernel("ADD", family="broadcast", support=support, plan=plan)

``support(ctx) -> str | None``
    Called at get_supported_operations / prepare with the *validation* context of the
    operation (``hal.validation.validation_context``: shapes may hold 0 or be () when unknown,
    only constant inputs have values; the model already passed hal validation). Returns None
    when the kernels run this operation exactly as written, else a sentence saying why not
    ("input 0 type TENSOR_QUANT16_ASYMM is not supported"). It must be honest: an operation
    it accepts must then plan and run. Helpers are in :mod:`clnn.kernels.support`.

``plan(ctx, b: LaunchBuilder)``
    Called once per input-shape signature of a partition, with concrete shapes: every input
    and output :class:`~hal.operations.context.OperandInfo` holds its real shape (outputs from
    the HAL ``prepare()``), constants hold their values. It enqueues nothing; it records
    launches with ``b.launch(family, def_name, params, global_size, args)``:

    - ``params`` (a dict) holds only what changes the kernel source: it is the kernel key
      together with the family and def name, and is passed to the Mako ``<%def>``;
    - ``args`` are the kernel arguments in order: ``In(k)`` / ``Out(k)`` stand for the
      tensor of input / output k and expand to two arguments, ``__global T* x, int x_off``
      (the pool or constant buffer and the element offset of the tensor in it); anything else
      is passed as is (use ``np.int32`` / ``np.float32`` for scalars).

    Inputs listed in ``host_inputs`` (parameters: axes, paddings, activation codes; negative
    indexes count from the end) are read on the host at planning: they need not be constants,
    their values become part of the plan key (a new value makes a new plan).

    A launch with an empty global size is dropped. If the kernels cannot handle these
    particular shapes, ``plan`` raises :class:`Unplannable`; the partition then runs on the
    reference device for this shape signature (that is never a failure).

``max_shapes(ctx) -> list[shape]`` (optional)
    For an operation whose output shapes only its values tell (BOX_WITH_NMS_LIMIT,
    GENERATE_PROPOSALS): the largest output shapes, which the plan allocates; the kernels
    count the real rows into a ``b.readback`` buffer whose ``finish`` returns the real shapes
    after the run (clnn/launch/ Readback). Such an operation ends its OpenCL partition
    (clnn/plan.py partition), so that its readers are planned with the real shapes.

``omitted_inputs`` (optional, default False)
    True when ``plan`` takes optional inputs that a request omits (a model input given no
    value): they then reach support/plan as NO_VALUE operands (``ctx.has_input`` is False)
    instead of sending the partition to the reference device.

``device_support(ctx, limits) -> str | None`` (optional)
    What the device's limits (clnn.workgroups.DeviceLimits: work-group sizes, local memory,
    extensions) allow this operation: None, or why not ("the cell's reduction needs 24 bytes
    of local memory per work-item; the device has 0"). Asked with ``support``, after the
    tensor-size check every operation gets (:func:`device_reason`), so an operation the
    device cannot hold goes to the fallback (or another device) instead of failing at an
    execution.

``epilogue_activations(ctx) -> tuple[str, ...]`` (optional)
    The activation operations (RELU, RELU1, RELU6, PRELU, LOGISTIC, HARD_SWISH) the family's
    kernels can apply in their epilogue for this operation (its plan context), read by
    clnn/fusion/; ``plan`` then finds the fusion in ``b.activation``.

``epilogue_residual(ctx, channels, clamped, pooled) -> bool`` (optional)
    True where the family's kernels can add the other operand of an ADD reading this
    operation's output (same shape, no broadcasting; ``channels``: an NHWC operand of fewer
    channels, zero past them, the channel PAD fused in; ``clamped``: added after the
    operation's own clamp, the ADD without activation; ``pooled``: the 2x2 maxima of a
    MAX_POOL_2D's input, of twice the output's height and width) and apply the ADD's
    activation, read by
    clnn/fusion/; ``plan`` then finds the fusion in ``b.residual`` (an AddFusion).

``input_nchw(ctx, node) -> bool`` (optional)
    True where the family's kernels can read input 0 in the NCHW layout instead of the NHWC
    tensor ``ctx`` shows (``node``: what they read of the fused node so far: its
    ``residual``), read by clnn/fusion/ to fuse away a TRANSPOSE (0, 2, 3, 1) before it;
    ``plan`` then finds the fusion in ``b.input_layout`` (a LayoutFusion).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hal.operations.registry import operation_type_of
from hal.types import ExtensionOperationType, OperationType


class Unplannable(Exception):
    """The kernels cannot run this operation with these concrete shapes."""


@dataclass(frozen=True)
class In:
    index: int


@dataclass(frozen=True)
class Out:
    index: int


def _no_activations(ctx) -> tuple[str, ...]:
    return ()


def _no_residual(ctx, channels: bool = False, clamped: bool = False,
                 pooled: bool = False) -> bool:
    return False


def _no_limits(ctx, limits) -> None:
    return None


def _no_nchw(ctx, node) -> bool:
    return False


@dataclass(frozen=True)
class KernelRegistration:
    op: OperationType | ExtensionOperationType
    family: str
    support: Callable
    plan: Callable
    host_inputs: tuple[int, ...] = ()
    epilogue_activations: Callable = _no_activations
    max_shapes: Callable | None = None
    omitted_inputs: bool = False
    epilogue_residual: Callable = _no_residual
    device_support: Callable = _no_limits
    #: (ctx, node, device, decided) -> the clnn.tuning.Choices of the operation's tuned
    #: families (the select and tune passes, clnn/passes/select.py); ``node``: its fused node,
    #: ``decided``: {choice key: Choice} made so far (a choice may depend on another's)
    select: Callable | None = None
    input_nchw: Callable = _no_nchw

    def host_input_indexes(self, n_inputs: int) -> set[int]:
        return {i % n_inputs for i in self.host_inputs if -n_inputs <= i < n_inputs}


_KERNELS: dict[OperationType | ExtensionOperationType, KernelRegistration] = {}


def register_kernel(op: OperationType | ExtensionOperationType | str, *, family: str,
                    support: Callable, plan: Callable, host_inputs=(),
                    epilogue_activations=None, max_shapes=None,
                    omitted_inputs: bool = False,
                    epilogue_residual=None, device_support=None,
                    select=None, input_nchw=None) -> KernelRegistration:
    op = operation_type_of(op)
    if op in _KERNELS:
        raise RuntimeError(f"OpenCL kernel for {op.name} registered twice "
                           f"({_KERNELS[op].family} and {family})")
    reg = KernelRegistration(op, family, support, plan, tuple(host_inputs),
                             epilogue_activations or _no_activations, max_shapes,
                             omitted_inputs, epilogue_residual or _no_residual,
                             device_support or _no_limits, select, input_nchw or _no_nchw)
    _KERNELS[op] = reg
    return reg


class TooLargeReason(str):
    """The reason of an operation one of whose tensors the device cannot allocate: reported by
    getSupportedOperations (a runtime places the operation elsewhere), and a GENERAL_FAILURE
    at the OpenCL device's own prepare rather than a fallback (the host would have to hold
    the same tensor)."""


def device_reason(reg: KernelRegistration, ctx, limits) -> str | None:
    """Why the device's limits cannot hold the operation of ``ctx`` (None: they can): a tensor
    of known shape larger than the device's largest buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE),
    then the family's own ``device_support``."""
    import numpy as np

    for kind, infos in (("input", ctx.inputs), ("output", ctx.outputs)):
        for k, info in enumerate(infos):
            if info.omitted or not info.shape or 0 in info.shape:
                continue
            size = int(np.prod(info.shape, dtype=np.int64)) * info.dtype.itemsize
            if size > limits.max_mem_alloc_size:
                return TooLargeReason(
                    f"{kind} {k} (operand {info.index} of shape {list(info.shape)}) needs "
                    f"{size} bytes, more than the largest buffer the device allocates "
                    f"(CL_DEVICE_MAX_MEM_ALLOC_SIZE {limits.max_mem_alloc_size} bytes, profile "
                    f"{limits.profile})")
    return reg.device_support(ctx, limits)


def unregister_kernel(op) -> None:
    """Remove a kernel registration (test fixtures remove a test-only extension's kernels)."""
    _KERNELS.pop(operation_type_of(op), None)
