"""Direct inputs and outputs: a partition's inputs and outputs the kernels read and write in
the host's memory (clnn.launch)."""

from __future__ import annotations

import numpy as np

from clnn.launch.launches import nbytes
from clnn.memory import PoolTensor, host_region, on_device


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
