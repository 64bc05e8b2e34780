"""What a kernel family's ``plan()`` sees (:class:`LaunchBuilder`: launches recorded with
their arguments set) and the packed weights of a plan in one buffer (:class:`WeightArena`;
clnn.launch)."""

from __future__ import annotations

import numpy as np

from clnn.kernels._work import op_flop
from clnn.kernels.registry import In, Out
from clnn.launch.enqueue import Readback
from clnn.launch.launches import Launch, ScratchKernels, nbytes
from clnn.workgroups import heavy
from hal.errors import GeneralFailure
from hal.types import NUMPY_DTYPE


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
