"""Device memories of the OpenCL device: a tensor kept in an OpenCL buffer.

:class:`ClBuffer` is a :class:`hal.memory_domain.DeviceBuffer` whose bytes live in a
``cl.Buffer`` of the device's context. As an execution input it is read as a
:class:`DeviceTensor` (a reference to the buffer with a shape, no copy): a CL partition copies
it into its pool on the device (``enqueue_copy`` buffer to buffer); only an operation that runs
on the host (reference fallback, or a parameter read at planning) downloads it. As an execution
output, a CL partition copies the result from its pool straight into the buffer. So two
executions chained through a ClBuffer never move the tensor through the host. copy_to /
copy_from are the client's host copies.
"""

from __future__ import annotations

import math

import numpy as np

from hal.memory_domain import DeviceBuffer
from hal.types import NUMPY_DTYPE


class DeviceTensor:
    """A tensor held by a ClBuffer, as a value of an execution (shape and dtype known)."""

    def __init__(self, buffer: ClBuffer, shape):
        self.buffer = buffer
        self.shape = tuple(int(d) for d in shape)
        self.dtype = NUMPY_DTYPE[buffer.type]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    #: where the bytes are (as PoolTensor's): a device memory's buffer, from its start
    offset = 0

    @property
    def cl_buffer(self):
        return self.buffer.cl_buffer

    def to_host(self) -> np.ndarray:
        return self.buffer.download(self.shape)

    def __array__(self, dtype=None, copy=None):
        arr = self.to_host()
        return arr if dtype is None else arr.astype(dtype)

    def tobytes(self) -> bytes:
        return self.to_host().tobytes()


class PoolTensor:
    """A tensor left in OpenCL memory by a partition, as a value of an execution: ``nbytes``
    bytes at byte ``offset`` of ``cl_buffer`` (a plan's pool, or a buffer of its own). The next
    OpenCL partition copies it on the device; only the host (a reference partition, a parameter
    read at planning, a model output) downloads it. A plan's pool is written again only when
    its partition runs again: the main subgraph's partitions run once per execution, and a
    control-flow subgraph's outputs are copied into buffers of their own (:meth:`detached`).
    ``own``: the tensor is a buffer of its own from its start, which no plan writes but those
    of ``home`` (None, or the clnn.control_flow.SubgraphRun whose pool the buffer is a region
    of, which is not run again while the tensor is read): a plan may point its kernels at it
    instead of copying it (clnn.launch.DirectInput.bind)."""

    def __init__(self, queue, cl_buffer, offset: int, shape, dtype, own: bool = False,
                 home=None):
        self.queue = queue
        self.cl_buffer = cl_buffer
        self.offset = int(offset)
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.own = own and self.offset == 0
        self.home = home
        self._host = None

    @classmethod
    def of(cls, queue, cl_buffer, offset: int, shape: tuple, dtype: np.dtype, own: bool = False,
           home=None):
        """As the constructor, with ``offset`` an int, ``shape`` a tuple of ints and ``dtype``
        a NumPy dtype already (another tensor's, a plan's downloads): taken as they are, not
        made again (a loop hands tensors on every iteration)."""
        t = cls.__new__(cls)
        t.queue, t.cl_buffer, t.offset, t.shape, t.dtype = queue, cl_buffer, offset, shape, dtype
        t.own, t.home, t._host = own and offset == 0, home, None
        return t

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def to_host(self, into: np.ndarray | None = None) -> np.ndarray:
        """The tensor on the host, downloaded once however many host readers it has: into
        ``into`` (an array of its shape and dtype: the request's own memory) when given."""
        import pyopencl as cl

        if self._host is None:
            raw = into if into is not None else \
                np.empty(self.shape, np.uint8 if self.dtype == np.bool_ else self.dtype)
            if raw.nbytes:
                cl.enqueue_copy(self.queue, raw, self.cl_buffer, src_offset=self.offset,
                                is_blocking=True)
            self._host = raw.astype(np.bool_) if self.dtype == np.bool_ else raw
        return self._host

    def detached(self, context, buf=None) -> PoolTensor:
        """A copy in a buffer of its own (on the device), safe from the pool being reused:
        into ``buf`` (at least :attr:`nbytes`, which nothing reads any more), else a new one."""
        import pyopencl as cl

        if buf is None:
            buf = cl.Buffer(context, cl.mem_flags.READ_WRITE, max(self.nbytes, 1))
        if self.nbytes:
            cl.enqueue_copy(self.queue, buf, self.cl_buffer, src_offset=self.offset,
                            byte_count=self.nbytes)
        return PoolTensor(self.queue, buf, 0, self.shape, self.dtype, own=True)

    def __array__(self, dtype=None, copy=None):
        arr = self.to_host()
        return arr if dtype is None else arr.astype(dtype)

    def tobytes(self) -> bytes:
        return self.to_host().tobytes()


def host_region(region: np.ndarray, shape, dtype) -> np.ndarray | None:
    """A request output's bytes in the client's memory (``region``: a writable uint8 array) as
    an array of ``shape`` and ``dtype`` that a result is read into, so that nothing copies it
    there afterwards (hal.driver.write_outputs); None where it does not fit (the request then
    fails with OUTPUT_INSUFFICIENT_SIZE as before), for an empty or a boolean tensor (stored
    as bytes apart)."""
    dtype = np.dtype(dtype)
    n = math.prod(shape) * dtype.itemsize
    if dtype == np.bool_ or not 0 < n <= region.size:
        return None
    return region[:n].view(dtype).reshape(shape)


def on_device(value) -> bool:
    """Whether a value of an execution is held in OpenCL memory."""
    return isinstance(value, (DeviceTensor, PoolTensor))


def on_host(value):
    """A value as a NumPy array (downloads a DeviceTensor or a PoolTensor)."""
    return value.to_host() if on_device(value) else value


class ClBuffer(DeviceBuffer):
    def __init__(self, device, operand, dimensions, roles):
        super().__init__(device, operand, dimensions, roles)
        self.cl_buffer = None
        self.capacity = 0
        #: buffers replaced while commands on the queue may still use them
        self._retired: list = []

    def ensure(self, nbytes: int):
        """Room for ``nbytes`` (a new buffer when it has less; the old one is kept until the
        queue is finished with it)."""
        import pyopencl as cl

        if self.cl_buffer is not None and self.capacity >= nbytes:
            return
        if self.cl_buffer is not None:
            self._retired.append(self.cl_buffer)
        self.capacity = max(int(nbytes), 1)
        self.cl_buffer = cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, self.capacity)

    def _store(self, arr: np.ndarray):
        import pyopencl as cl

        self.ensure(arr.nbytes)
        data = arr.view(np.uint8) if arr.dtype == np.bool_ else arr
        if arr.nbytes:
            cl.enqueue_copy(self.device.queue, self.cl_buffer, np.ascontiguousarray(data),
                            is_blocking=True)
        self._retired.clear()

    def download(self, shape) -> np.ndarray:
        import pyopencl as cl

        dtype = NUMPY_DTYPE[self.type]
        host = np.empty(shape, np.uint8 if dtype == np.bool_ else dtype)
        if host.nbytes:
            cl.enqueue_copy(self.device.queue, host, self.cl_buffer, is_blocking=True)
        return host.astype(np.bool_) if dtype == np.bool_ else host

    def _load(self) -> np.ndarray:
        return self.download(self.value_dimensions)

    def read(self, what: str, dims=()):
        with self.lock:
            self.check_readable(what, dims)
            return DeviceTensor(self, self.value_dimensions)

    def write(self, arr):
        if isinstance(arr, DeviceTensor) and arr.buffer is self:  # the kernels wrote it
            with self.lock:
                self.value_dimensions = arr.shape
                self.initialized = True
                self._retired.clear()
            return
        super().write(on_host(arr))
